package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Serving a run from several `env serve` replicas: each replica publishes
// every finished episode's record to the run's results stream (the same
// stream, subject, signing and message ids as a rollout worker's results),
// and one EnvCollector, the run folder's only writer, appends them. Rollout
// indices come from a counter in a key-value bucket that every replica of
// the run shares, so that no two episodes get one identity.

const (
	// counterBucket holds, per served run and scenario, the next free
	// rollout index.
	counterBucket = "ANTIDRIFT_ENV_ROLLOUTS"
	// EnvFormat is the layout version of EnvConfig.
	EnvFormat = 1
)

// envConfigName is the served run's configuration in ANTIDRIFT_RUNS (apart
// from rollout runs' configurations, which workers look for).
func envConfigName(id string) string { return "env." + id }

var plainKeyRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// counterKey is a scenario's counter key in the bucket (key-value keys
// take fewer characters than scenario ids).
func counterKey(id, scenarioID string) string {
	if !plainKeyRE.MatchString(scenarioID) {
		h := sha256.Sum256([]byte(scenarioID))
		scenarioID = "h" + hex.EncodeToString(h[:8])
	}
	return id + "." + scenarioID
}

// EnvConfig is what the writer publishes and replicas read: the run's
// manifest (the plan every replica must reproduce from its own flags) and
// the run key results are signed with. It holds no credential.
type EnvConfig struct {
	Format   int            `json:"format"`
	RunID    string         `json:"run_id"`
	PlanKey  string         `json:"plan_key"`
	Manifest store.Manifest `json:"manifest"`
	RunKey   string         `json:"run_key"`
}

// ErrNoWriter is returned when no EnvCollector has published the run a
// replica would serve.
var ErrNoWriter = errors.New("queue: no writer has published the run")

// EnvReplica is one `env serve --queue` replica's link to the queue: it
// reads the run's configuration, hands out rollout indices (Next) and
// publishes finished records (Record); it implements envserver's Recorder
// and Counter.
type EnvReplica struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Manifest is the run as this replica's flags plan it; its plan must be
	// the writer's.
	Manifest store.Manifest
	// Scenarios are the served scenarios (their hashes go with each
	// record, for the writer to check).
	Scenarios []*scenario.Scenario
	// Timeout bounds a record's publication, retries included (default
	// 30 s): past it the episode's client is told its record was not kept.
	Timeout time.Duration

	id       string
	key      string
	kv       jetstream.KeyValue
	hashes   map[string]string
	mu       sync.Mutex
	done     int64
	counters map[string]*counter
}

// Attach waits (up to wait) for the writer's configuration of the run and
// checks that this replica plans the same run: same plan, toolkit version
// and reward configuration.
func (r *EnvReplica) Attach(ctx context.Context, wait time.Duration) error {
	if r.Timeout <= 0 {
		r.Timeout = 30 * time.Second
	}
	r.id = RunID(r.Manifest.Run)
	r.hashes = map[string]string{}
	for _, s := range r.Scenarios {
		r.hashes[s.ID] = scenario.Hash([]*scenario.Scenario{s})
	}
	deadline := time.Now().Add(wait)
	var rc EnvConfig
	for {
		b, err := r.getConfig(ctx)
		if err == nil {
			if err := json.Unmarshal(b, &rc); err != nil {
				return fmt.Errorf("queue: run %s: configuration: %w", r.Manifest.Run, err)
			}
			break
		}
		if !errors.Is(err, jetstream.ErrObjectNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("queue: run %s: configuration: %w", r.Manifest.Run, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w %s (start `antidrift env collect --queue URL --out RUN` with the same flags first)", ErrNoWriter, r.Manifest.Run)
		}
		sleep(ctx, 250*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	m := r.Manifest
	switch {
	case rc.Format != EnvFormat:
		return fmt.Errorf("queue: run %s: configuration format %d, this replica reads %d", m.Run, rc.Format, EnvFormat)
	case rc.Manifest.Version != m.Version:
		return fmt.Errorf("queue: run %s: the writer runs antidrift %s, this replica %s; run one version", m.Run, rc.Manifest.Version, m.Version)
	case rc.PlanKey != planKey(m):
		d := planDiffText(rc.Manifest.Plan, m.Plan)
		return fmt.Errorf("queue: run %s: this replica's flags plan another run than the writer's (%s); give env serve the flags env collect was given", m.Run, d)
	case rc.Manifest.Settings.Rewards != m.Settings.Rewards:
		return fmt.Errorf("queue: run %s: reward configuration %q, the writer records %q; give both the same reward flags", m.Run, m.Settings.Rewards, rc.Manifest.Settings.Rewards)
	case rc.RunKey == "":
		return fmt.Errorf("queue: run %s: the configuration has no run key", m.Run)
	}
	r.key = rc.RunKey
	for {
		// A writer restarting on a queue that lost its counters publishes
		// its configuration only once they exist again; an old
		// configuration may still be seen meanwhile.
		kv, err := r.JS.KeyValue(ctx, counterBucket)
		if err == nil {
			r.kv = kv
			return nil
		}
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("queue: run %s: rollout counters: %w", m.Run, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w %s: no rollout counters yet (is env collect starting?)", ErrNoWriter, m.Run)
		}
		sleep(ctx, 250*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// planDiffText names the first plan fields that differ.
func planDiffText(a, b store.Plan) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb map[string]any
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	for _, k := range sortedKeys(ma, mb) {
		x, _ := json.Marshal(ma[k])
		y, _ := json.Marshal(mb[k])
		if string(x) != string(y) {
			return fmt.Sprintf("%s: writer %s, replica %s", k, secret.Text(string(x)), secret.Text(string(y)))
		}
	}
	return "the run name differs"
}

func sortedKeys(ms ...map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	for i := 1; i < len(out); i++ { // tiny lists: insertion sort
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (r *EnvReplica) getConfig(ctx context.Context) ([]byte, error) {
	obs, err := r.JS.ObjectStore(ctx, configBucket)
	if err != nil {
		return nil, err
	}
	return obs.GetBytes(ctx, envConfigName(r.id))
}

// counter is a replica's view of one scenario's counter: the value and
// revision it last saw, so that a replica alone on a key takes an index
// in one update, and its lock, so that its own resets of one scenario
// (a GRPO group resets together) queue here instead of failing each
// other's compare-and-set on the server.
type counter struct {
	mu    sync.Mutex
	known bool
	val   int
	rev   uint64
}

// Next hands out the scenario's next rollout index of the run, shared by
// every replica (a compare-and-set on the run's counter).
func (r *EnvReplica) Next(scenarioID string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	key := counterKey(r.id, scenarioID)
	r.mu.Lock()
	if r.counters == nil {
		r.counters = map[string]*counter{}
	}
	c := r.counters[key]
	if c == nil {
		c = &counter{}
		r.counters[key] = c
	}
	r.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for ctx.Err() == nil {
		if !c.known {
			e, err := r.kv.Get(ctx, key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
				if rev, err := r.kv.Create(ctx, key, []byte("1")); err == nil {
					c.known, c.val, c.rev = true, 1, rev
					return 0, nil
				}
				continue // another replica created it: read it
			case err != nil:
				sleep(ctx, 50*time.Millisecond) // disconnected: the connection reconnects
				continue
			}
			n, err := strconv.Atoi(string(e.Value()))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("queue: rollout counter %s holds %q", key, e.Value())
			}
			c.known, c.val, c.rev = true, n, e.Revision()
		}
		rev, err := r.kv.Update(ctx, key, []byte(strconv.Itoa(c.val+1)), c.rev)
		if err != nil {
			c.known = false // another replica took it first (or the server restarts): read again
			continue
		}
		n := c.val
		c.val, c.rev = n+1, rev
		return n, nil
	}
	return 0, fmt.Errorf("queue: rollout counter %s: %w", key, ctx.Err())
}

// raiseCounter raises a counter to at least atLeast (the writer's start:
// what the folder holds).
func raiseCounter(ctx context.Context, kv jetstream.KeyValue, key string, atLeast int) error {
	for ctx.Err() == nil {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := kv.Create(ctx, key, []byte(strconv.Itoa(atLeast))); err == nil {
				return nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				sleep(ctx, 50*time.Millisecond)
			}
			continue
		}
		if err != nil {
			sleep(ctx, 50*time.Millisecond) // disconnected: the connection reconnects
			continue
		}
		n, err := strconv.Atoi(string(e.Value()))
		if err != nil || n < 0 {
			return fmt.Errorf("queue: rollout counter %s holds %q", key, e.Value())
		}
		if n >= atLeast {
			return nil
		}
		if _, err := kv.Update(ctx, key, []byte(strconv.Itoa(atLeast)), e.Revision()); err == nil {
			return nil
		}
		// A replica took an index meanwhile: again.
	}
	return fmt.Errorf("queue: rollout counter %s: %w", key, ctx.Err())
}

// Record publishes a finished record to the run's results stream, signed
// with the run key, under the message id of its trajectory: a publication
// retried after a lost acknowledgement is dropped by the server as a
// duplicate. It returns once the server has the record.
func (r *EnvReplica) Record(rec *trajectory.Record) error {
	return r.publish(rec, "")
}

func (r *EnvReplica) publish(rec *trajectory.Record, suffix string) error {
	if r.key == "" {
		return errors.New("queue: the replica is not attached to a run")
	}
	if red := secret.Text(rec.Error); red != rec.Error { // as the writer's store would, before the queue's disk
		cp := *rec
		cp.Error = red
		rec = &cp
	}
	m, err := encodeRecord(resultsSubject(r.id), rec, 0)
	if err != nil {
		return err
	}
	m.Header.Set(hdrScenarioHash, r.hashes[rec.ScenarioID])
	m.Header.Set(hdrAuth, resultAuth(r.key, r.id, m))
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	id := resultMsgID(r.key, rec.TrajID, suffix)
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = r.JS.PublishMsg(pctx, m, jetstream.WithMsgID(id))
		pcancel()
		if err == nil {
			r.mu.Lock()
			r.done++
			r.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("queue: publishing the record of %s: %w", rec.TrajID, err)
		}
		sleep(ctx, 250*time.Millisecond) // the server is restarting: the connection reconnects
	}
}

// Published is the number of records this replica has published.
func (r *EnvReplica) Published() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}
