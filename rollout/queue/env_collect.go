package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EnvCollector is the one writer of a run served by `env serve --queue`
// replicas: it publishes the run's configuration, raises the run's rollout
// counters to what the folder holds, and appends every record the replicas
// publish, until its context ends. Restarted on the same folder, it resumes:
// records published while it was down wait in the results stream.
type EnvCollector struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Folder is the open run folder (store.Open, with the run's manifest:
	// the plan every replica must reproduce).
	Folder *store.Run
	// Scenarios are the run's scenarios, in plan order.
	Scenarios []*scenario.Scenario
	// OnRecord sees every record written (trajectories and errors/), once
	// it is on disk.
	OnRecord func(*trajectory.Record)
	// Log receives refusals; nil discards them.
	Log io.Writer
	// AckWait is how long results fetched by a writer that died come back
	// to the next one (default 30 s).
	AckWait time.Duration
}

// EnvSummary counts what a collector did.
type EnvSummary struct {
	Written    int // records appended to trajectories/
	Errors     int // records appended to errors/ (clients that left)
	Duplicates int // results already in the folder, dropped
	Rejected   int // results that are not valid records of this run, never written
	Forged     int // results without the run key, never written
}

// Run collects until ctx ends; it returns nil then. Every record acked on
// the stream is on disk (synced) first.
func (c *EnvCollector) Run(ctx context.Context) (sum EnvSummary, retErr error) {
	logw := c.Log
	if logw == nil {
		logw = io.Discard
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	man := c.Folder.Manifest
	id := RunID(man.Run)
	byID := make(map[string]*scenario.Scenario, len(c.Scenarios))
	hashes := make(map[string]string, len(c.Scenarios))
	for _, s := range c.Scenarios {
		byID[s.ID] = s
		hashes[s.ID] = scenario.Hash([]*scenario.Scenario{s})
	}
	next, infra, err := folderState(c.Folder.Dir())
	if err != nil {
		return sum, err
	}
	rc := EnvConfig{Format: EnvFormat, RunID: id, PlanKey: planKey(man), Manifest: man}
	results, err := c.setup(ctx, &rc, next)
	if err != nil {
		return sum, err
	}
	w, err := c.Folder.Writer(engine.Shard{I: 0, N: 1}.String(), 1<<30, time.Hour) // synced here, before the acks
	if err != nil {
		return sum, err
	}
	elog, err := c.Folder.ErrorLog(engine.Shard{I: 0, N: 1}.String())
	if err != nil {
		w.Close()
		return sum, err
	}
	defer func() {
		if cerr := errors.Join(w.Close(), elog.Close()); cerr != nil && retErr == nil {
			retErr = cerr
		}
	}()
	cons, err := results.Consumer(ctx, collectConsumer)
	if err != nil {
		return sum, fmt.Errorf("queue: results consumer: %w", err)
	}
	var forged atomic.Int64
	written := map[string]bool{}
	for ctx.Err() == nil {
		batch, ferr := cons.Fetch(512, jetstream.FetchMaxWait(250*time.Millisecond))
		if ferr != nil {
			sleep(ctx, 200*time.Millisecond) // disconnected: the connection reconnects
			continue
		}
		var acks []jetstream.Msg
		var landed []*trajectory.Record
		for m := range batch.Messages() {
			rec, isForged, ok := admitResult(m, rc.RunKey, id, logw, "env collect")
			if !ok {
				if isForged {
					forged.Add(1)
				} else {
					sum.Rejected++
				}
				continue
			}
			if why := envMismatch(man, rec, byID, hashes, m.Headers()); why != "" {
				sum.Rejected++
				fmt.Fprintf(logw, "antidrift: env collect: refused the result for %s: %s\n", secret.Text(rec.TrajID), why)
				_ = m.Term()
				continue
			}
			acks = append(acks, m)
			isInfra := rec.Status == trajectory.StatusInfraError
			if c.Folder.Done(rec.TrajID) || written[rec.TrajID] || (isInfra && infra[rec.TrajID]) {
				sum.Duplicates++ // published twice past the server's duplicate window
				continue
			}
			target := w
			if isInfra {
				target, infra[rec.TrajID] = elog, true
				sum.Errors++
			} else {
				written[rec.TrajID] = true
				sum.Written++
			}
			if err := target.Append(rec); err != nil {
				return sum, err // nothing acked: the stream keeps them
			}
			landed = append(landed, rec)
		}
		if len(acks) == 0 {
			continue
		}
		if err := w.Sync(); err != nil {
			return sum, err
		}
		for _, m := range acks {
			_ = m.Ack()
		}
		if c.OnRecord != nil {
			for _, r := range landed {
				c.OnRecord(r)
			}
		}
	}
	sum.Forged = int(forged.Load())
	return sum, nil
}

// setup publishes the configuration (keeping the run key of an earlier
// start of the same plan, which replicas may still sign with), creates the
// results stream and its consumer as a rollout coordinator does, and raises
// the rollout counters to what the folder holds.
func (c *EnvCollector) setup(ctx context.Context, rc *EnvConfig, next map[string]int) (jetstream.Stream, error) {
	js := c.JS
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: configBucket, Storage: jetstream.FileStorage,
		Description: "antidrift run configurations (never a secret)"})
	if err != nil {
		return nil, fmt.Errorf("queue: config bucket: %w", err)
	}
	if old, gerr := obs.GetBytes(ctx, envConfigName(rc.RunID)); gerr == nil {
		var prev EnvConfig
		if json.Unmarshal(old, &prev) == nil && prev.PlanKey == rc.PlanKey && prev.RunKey != "" {
			rc.RunKey = prev.RunKey
		} else if derr := js.DeleteStream(ctx, resultsStream(rc.RunID)); derr != nil && !errors.Is(derr, jetstream.ErrStreamNotFound) {
			// A run name reused for another plan starts from an empty stream.
			return nil, fmt.Errorf("queue: removing the previous plan's stream: %w", derr)
		}
	}
	if rc.RunKey == "" {
		if rc.RunKey, err = newRunKey(); err != nil {
			return nil, err
		}
	}
	if _, kerr := js.KeyValue(ctx, counterBucket); errors.Is(kerr, jetstream.ErrBucketNotFound) {
		// The queue lost its counters: withdraw the configuration until
		// they are raised again, so that no replica attaches to counters
		// that start from 0.
		if derr := obs.Delete(ctx, envConfigName(rc.RunID)); derr != nil && !errors.Is(derr, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("queue: withdrawing the run configuration: %w", derr)
		}
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: counterBucket, Storage: jetstream.FileStorage,
		Description: "antidrift env serve: next rollout index per run and scenario"})
	if err != nil {
		return nil, fmt.Errorf("queue: rollout counters: %w", err)
	}
	for _, s := range c.Scenarios {
		if n := next[s.ID]; n > 0 {
			if err := raiseCounter(ctx, kv, counterKey(rc.RunID, s.ID), n); err != nil {
				return nil, err
			}
		}
	}
	results, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: resultsStream(rc.RunID), Subjects: []string{resultsSubject(rc.RunID)},
		Description: "antidrift records of served run " + rc.Manifest.Run,
		Retention:   jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: dupWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: results stream: %w", err)
	}
	if _, err := results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: collectConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: c.AckWait, MaxAckPending: 1 << 20,
	}); err != nil {
		return nil, fmt.Errorf("queue: results consumer: %w", err)
	}
	// Published last: a replica attaches only once the stream and the
	// counters are ready.
	b, err := json.Marshal(rc)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if _, err := obs.PutBytes(ctx, envConfigName(rc.RunID), b); err != nil {
		return nil, fmt.Errorf("queue: publishing the run configuration: %w", err)
	}
	return results, nil
}

// envMismatch says why a result is not a record of the served run ("" when
// it is): its identity (run, scenario, the trajectory id its fields give),
// checkpoint, framework, version, a client policy, the scenario's hash as
// the replica served it, and the record validity rule.
func envMismatch(man store.Manifest, rec *trajectory.Record, byID map[string]*scenario.Scenario, hashes map[string]string, h nats.Header) string {
	s := byID[rec.ScenarioID]
	if s == nil {
		return fmt.Sprintf("scenario_id %q is not served in this run", secret.Text(rec.ScenarioID))
	}
	p := man.Plan
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"run", rec.Run, man.Run},
		{"traj_id header", h.Get(hdrTraj), rec.TrajID},
		{"traj_id", rec.TrajID, trajectory.TrajID(man.Run, p.Checkpoint, p.Framework, rec.ScenarioID, rec.Rollout, rec.Seed)},
		{"domain", rec.Domain, s.Domain},
		{"checkpoint", rec.Checkpoint, p.Checkpoint},
		{"framework", rec.Framework, p.Framework},
		{"version", rec.Version, man.Version},
		{"scenario hash", h.Get(hdrScenarioHash), hashes[s.ID]},
	} {
		if f.got != f.want {
			return fmt.Sprintf("%s is %q, the run's is %q", f.name, secret.Text(fmt.Sprint(f.got)), fmt.Sprint(f.want))
		}
	}
	if !strings.HasPrefix(rec.Policy, "client:") {
		return fmt.Sprintf("policy %q is not a served client's", secret.Text(rec.Policy))
	}
	if err := store.CheckRecord(rec); err != nil {
		return "not a valid record: " + err.Error()
	}
	return ""
}

// folderState is what a served run's folder holds: per scenario the
// rollout index after the highest one (trajectories and errors/ alike),
// and the trajectory ids in errors/.
func folderState(dir string) (map[string]int, map[string]bool, error) {
	next := map[string]int{}
	it := store.Records(dir).SkipText()
	for it.Next() {
		r := it.At()
		next[r.ScenarioID] = max(next[r.ScenarioID], r.Rollout+1)
	}
	if err := it.Err(); err != nil {
		return nil, nil, fmt.Errorf("queue: %w", err)
	}
	infra := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "errors", "*.jsonl"))
	for _, f := range files {
		err := scanJSONLines(f, func(b []byte) {
			var r struct {
				TrajID     string `json:"traj_id"`
				ScenarioID string `json:"scenario_id"`
				Rollout    int    `json:"rollout"`
			}
			if json.Unmarshal(b, &r) == nil && r.TrajID != "" { // a torn last line holds nothing to resume from
				infra[r.TrajID] = true
				next[r.ScenarioID] = max(next[r.ScenarioID], r.Rollout+1)
			}
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return next, infra, nil
}

// scanJSONLines calls fn with each non-empty line of a JSONL file.
func scanJSONLines(path string, fn func([]byte)) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		if b := bytes.TrimSpace(sc.Bytes()); len(b) > 0 {
			fn(b)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("queue: %s: %w", path, err)
	}
	return nil
}
