package queue

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Coordinator runs a plan through the queue: it publishes every planned,
// unfinished episode as a work item and collects the finished records into
// the run folder, whose only writer it is.
type Coordinator struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Config is the run as for engine.Run (Policy and Concurrency are the
	// workers' business and unused here). OnRecord sees every record
	// collected.
	Config engine.Config
	// Folder is the open run folder (store.Open, with its manifest).
	Folder *store.Run
	// AckWait and MaxDeliver shape redelivery (defaults DefaultAckWait,
	// DefaultMaxDeliver).
	AckWait    time.Duration
	MaxDeliver int
	// RequestTimeout, MaxRetries, TokenParam and ReadyWait are handed to
	// the workers' HTTP clients (zero: their defaults; ReadyWait negative:
	// no waiting for a loading server).
	RequestTimeout time.Duration
	MaxRetries     int
	TokenParam     openai.TokenParam
	ReadyWait      time.Duration
	// Learned is what the coordinator's endpoint check learnt
	// (openai.Client.Learned), handed to the workers.
	Learned openai.Report
	// Log receives warnings and what workers report (refusals, fatal
	// endpoint errors); nil discards them.
	Log io.Writer

	key string // the run key, once Run has it
}

// Run publishes the plan's unfinished episodes and collects their records
// until every one has a record or an infrastructure error, or ctx ends.
// Everything collected before an error or a cancellation is on disk; rerun
// it to resume (work items already queued are not queued twice).
func (c *Coordinator) Run(ctx context.Context) (sum engine.Summary, retErr error) {
	start := time.Now()
	cfg := c.Config
	if cfg.Framework == "" {
		cfg.Framework = engine.FrameworkNormal
	}
	if err := engine.CheckFramework(cfg.Framework); err != nil {
		return engine.Summary{}, fmt.Errorf("queue: %w", err)
	}
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	logw := c.Log
	if logw == nil {
		logw = io.Discard
	}
	man := c.Folder.Manifest
	runName := man.Run
	id := RunID(runName)
	key := planKey(man)

	plan := engine.Plan(cfg, runName)
	sum = engine.Summary{Planned: len(plan), Statuses: map[string]int{}}
	attempts, err := infraCounts(filepath.Join(c.Folder.Dir(), "errors"))
	if err != nil {
		return sum, err
	}
	planned := make(map[string]engine.Planned, len(plan))
	written := map[string]bool{}
	outstanding := map[string]bool{}
	var todo []item
	for _, p := range plan {
		planned[p.TrajID] = p
		if c.Folder.Done(p.TrajID) {
			written[p.TrajID] = true
			sum.Skipped++
			continue
		}
		outstanding[p.TrajID] = true
		todo = append(todo, item{PlanKey: key, TrajID: p.TrajID, Scenario: p.Scenario.ID,
			Rollout: p.Rollout, Seed: p.Seed, Attempt: attempts[p.TrajID]})
	}
	if len(todo) == 0 {
		c.cleanup(ctx, id)
		sum.Elapsed = time.Since(start)
		return sum, nil
	}

	rc := RunConfig{Format: Format, RunID: id, PlanKey: key, Manifest: man,
		AckWaitMS: c.AckWait.Milliseconds(), MaxDeliver: c.MaxDeliver, MaxRetries: c.MaxRetries}
	if c.RequestTimeout > 0 {
		rc.RequestTimeout = c.RequestTimeout.String()
	}
	if c.TokenParam != openai.TokenAuto {
		rc.TokenParam = c.TokenParam.String()
	}
	rc.LearnedTokenParam, rc.NumCtx = c.Learned.TokenParam, c.Learned.NumCtx
	switch {
	case c.ReadyWait > 0:
		rc.ReadyWait = c.ReadyWait.String()
	case c.ReadyWait < 0:
		rc.ReadyWait = "0s"
	}
	if rc.Scenarios, err = scenarioFiles(cfg.Scenarios); err != nil {
		return sum, err
	}
	if rc.RunKey, err = c.runKey(ctx, id, key); err != nil {
		return sum, err
	}
	c.key = rc.RunKey
	rcb, err := json.Marshal(rc)
	if err != nil {
		return sum, fmt.Errorf("queue: %w", err)
	}
	digest := sha256.Sum256(rcb)
	for i := range todo {
		todo[i].Config = hex.EncodeToString(digest[:])
	}
	work, results, err := c.setup(ctx, &rc, rcb) // sets rc.publication
	if err != nil {
		return sum, err
	}

	shard := cfg.Shard
	if shard.N == 0 {
		shard = engine.Shard{I: 0, N: 1}
	}
	w, err := c.Folder.Writer(shard.String(), 1<<30, time.Hour) // synced by the collector, before it acks
	if err != nil {
		return sum, err
	}
	elog, err := c.Folder.ErrorLog(shard.String())
	if err != nil {
		w.Close()
		return sum, err
	}
	defer func() {
		if cerr := errors.Join(w.Close(), elog.Close()); cerr != nil && retErr == nil {
			retErr = cerr
		}
	}()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// What workers say (refusals, fatal endpoint errors), each once. A
	// fatal endpoint error stops the run, as in a local run: the endpoint
	// (a key, a quota, a URL, a flag) fails every episode until fixed, and
	// the worker that met it takes none of the run's items until the run
	// is started again.
	var seenMu sync.Mutex
	seen := map[string]bool{}
	var forged atomic.Int64 // results and events without the run key
	evSub, err := c.NC.Subscribe(eventsSubject(id), func(m *nats.Msg) {
		var ev event
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		seenMu.Lock()
		defer seenMu.Unlock()
		if !verify(rc.RunKey, ev.Auth, ev.authParts(id)...) {
			// Not from a worker that read this run's configuration: a
			// forged or stray "fatal" must not stop the run.
			forged.Add(1)
			fmt.Fprintf(logw, "antidrift: queue: ignored a %q event claiming to be from worker %q without the run key (forged, or from another run)\n", secret.Printable(ev.Kind), secret.Printable(ev.Worker))
			return
		}
		if ev.Publication != rc.publication {
			// Signed, but about an earlier start of this run (a worker
			// still finishing what it took then): it cannot stop this one.
			return
		}
		if k := ev.Worker + "\x00" + ev.Message; !seen[k] {
			seen[k] = true
			fmt.Fprintf(logw, "antidrift: worker %s: %s\n", secret.Printable(ev.Worker), secret.Printable(ev.Message))
		}
		if ev.Kind == "fatal" {
			cancel(fmt.Errorf("%w: worker %s: %s", ErrStopped, secret.Printable(ev.Worker), secret.Printable(ev.Message)))
		}
	})
	if err != nil {
		return sum, fmt.Errorf("queue: %w", err)
	}
	defer evSub.Unsubscribe()

	// Items out of deliveries: the server's advisory names them at once;
	// a periodic sweep catches those whose advisory was missed.
	dead := make(chan uint64, 1024)
	advSub, err := c.NC.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+workStream(id)+"."+workersConsumer, func(m *nats.Msg) {
		var adv struct {
			StreamSeq uint64 `json:"stream_seq"`
		}
		if json.Unmarshal(m.Data, &adv) == nil && adv.StreamSeq > 0 {
			select {
			case dead <- adv.StreamSeq:
			default:
			}
		}
	})
	if err != nil {
		return sum, fmt.Errorf("queue: %w", err)
	}
	defer advSub.Unsubscribe()

	_ = c.NC.Publish(announceSubject, []byte(id))
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); c.publish(ctx, id, todo) }()
	go func() { defer bg.Done(); c.reap(ctx, id, key, work, dead, logw) }()
	defer bg.Wait()
	defer cancel(nil)

	warnedTruncated := false
	scenHashes := map[string]string{}
	rcons, err := results.Consumer(ctx, collectConsumer)
	if err != nil {
		return sum, fmt.Errorf("queue: results consumer: %w", err)
	}
	for len(outstanding) > 0 && ctx.Err() == nil {
		batch, ferr := rcons.Fetch(512, jetstream.FetchMaxWait(100*time.Millisecond))
		if ferr != nil {
			sleep(ctx, 200*time.Millisecond) // disconnected: the connection reconnects
			continue
		}
		var acks []jetstream.Msg
		for m := range batch.Messages() {
			rec, isForged, ok := admitResult(m, rc.RunKey, id, logw, "queue")
			if !ok {
				if isForged {
					forged.Add(1)
				} else {
					sum.Rejected++
				}
				continue
			}
			p, ok := planned[rec.TrajID]
			if !ok || rec.Run != runName {
				acks = append(acks, m)
				continue // not this plan's: a stale result
			}
			if why := c.mismatch(rec, p, m.Headers(), scenHashes); why != "" {
				// A result that is not what its work item asked for: never
				// written; the item's genuine result still lands.
				sum.Rejected++
				fmt.Fprintf(logw, "antidrift: queue: refused the result for %s (%s rollout %d): %s\n", rec.TrajID, p.Scenario.ID, p.Rollout, why)
				_ = m.Term()
				continue
			}
			acks = append(acks, m)
			infra := rec.Status == trajectory.StatusInfraError
			switch {
			case written[rec.TrajID]:
				continue // a duplicate
			case infra && !outstanding[rec.TrajID]:
				continue // already counted this invocation
			}
			target := w
			if infra {
				target = elog
			}
			if err := target.Append(rec); err != nil {
				cancel(err)
				break
			}
			if !infra {
				written[rec.TrajID] = true
			}
			delete(outstanding, rec.TrajID)
			sum.Ran++
			sum.Statuses[string(rec.Status)]++
			if infra {
				sum.InfraErrors++
			}
			if rec.Status == trajectory.StatusContextTruncated && cfg.Warn != nil && !warnedTruncated {
				warnedTruncated = true
				cfg.Warn(engine.ContextTruncatedWarning)
			}
			if cfg.OnRecord != nil {
				cfg.OnRecord(rec)
			}
		}
		if context.Cause(ctx) != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
			break
		}
		if len(acks) == 0 {
			continue
		}
		if err := w.Sync(); err != nil {
			cancel(err)
			break
		}
		for _, m := range acks {
			_ = m.Ack()
		}
	}
	cancel(nil)
	bg.Wait()
	sum.Elapsed = time.Since(start)
	sum.Forged = int(forged.Load())
	if n := sum.Rejected + sum.Forged; n > 0 {
		fmt.Fprintf(logw, "antidrift: queue: refused %d results or events (%d not matching their work item or not valid records, %d without the run key); none was written\n", n, sum.Rejected, sum.Forged)
	}
	if len(outstanding) > 0 {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return sum, cause
		}
		return sum, context.Canceled
	}
	if sum.InfraErrors == 0 {
		c.cleanup(context.WithoutCancel(ctx), id)
	}
	return sum, nil
}

// runKey is the run's key: the one already published for this plan (a
// restarted coordinator must accept what workers signed before), else a new
// random one.
func (c *Coordinator) runKey(ctx context.Context, id, plan string) (string, error) {
	if obs, err := c.JS.ObjectStore(ctx, configBucket); err == nil {
		if old, gerr := obs.GetBytes(ctx, id); gerr == nil {
			var prev RunConfig
			if json.Unmarshal(old, &prev) == nil && prev.PlanKey == plan && prev.RunKey != "" {
				return prev.RunKey, nil
			}
		}
	}
	return newRunKey()
}

// mismatch says how a result differs from its work item and from what the
// run folder's readers accept ("" when it does not): the identity fields
// of the planned episode, the run's checkpoint, policy, framework and
// toolkit version, the scenario's hash as the worker ran it, and the
// record validity rule (store.CheckRecord).
func (c *Coordinator) mismatch(rec *trajectory.Record, p engine.Planned, h nats.Header, hashes map[string]string) string {
	cfg := c.Config
	fw := cfg.Framework
	if fw == "" {
		fw = engine.FrameworkNormal
	}
	want, ok := hashes[p.Scenario.ID]
	if !ok {
		want = scenario.Hash([]*scenario.Scenario{p.Scenario})
		hashes[p.Scenario.ID] = want
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"traj_id header", h.Get(hdrTraj), rec.TrajID},
		{"scenario_id", rec.ScenarioID, p.Scenario.ID},
		{"domain", rec.Domain, p.Scenario.Domain},
		{"rollout", rec.Rollout, p.Rollout},
		{"seed", rec.Seed, p.Seed},
		{"checkpoint", rec.Checkpoint, cfg.Checkpoint},
		{"policy", rec.Policy, cfg.PolicyName},
		{"framework", rec.Framework, fw},
		{"version", rec.Version, cfg.Version},
		{"scenario hash", h.Get(hdrScenarioHash), want},
	} {
		if f.got != f.want {
			return fmt.Sprintf("%s is %q, the work item's is %q", f.name, fmt.Sprint(f.got), fmt.Sprint(f.want))
		}
	}
	if err := store.CheckRecord(rec); err != nil {
		return "not a valid record: " + err.Error()
	}
	if !rec.Status.Valid() {
		return fmt.Sprintf("not a valid record: unknown status %q", rec.Status)
	}
	return ""
}

// setup creates (or updates) the run's streams, consumers and
// configuration. A run name reused for another plan starts from empty
// streams.
func (c *Coordinator) setup(ctx context.Context, rc *RunConfig, b []byte) (work, results jetstream.Stream, err error) {
	js := c.JS
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: configBucket, Storage: jetstream.FileStorage,
		Description: "antidrift run configurations (never a secret)"})
	if err != nil {
		return nil, nil, fmt.Errorf("queue: config bucket: %w", err)
	}
	if old, gerr := obs.GetBytes(ctx, rc.RunID); gerr == nil {
		var prev RunConfig
		if json.Unmarshal(old, &prev) != nil || prev.PlanKey != rc.PlanKey {
			for _, s := range []string{workStream(rc.RunID), resultsStream(rc.RunID)} {
				if derr := js.DeleteStream(ctx, s); derr != nil && !errors.Is(derr, jetstream.ErrStreamNotFound) {
					return nil, nil, fmt.Errorf("queue: removing the previous plan's stream %s: %w", s, derr)
				}
			}
		}
	}
	info, err := obs.PutBytes(ctx, rc.RunID, b)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: publishing the run configuration: %w", err)
	}
	rc.publication = info.NUID
	work, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: workStream(rc.RunID), Subjects: []string{workSubject(rc.RunID)},
		Description: "antidrift work items of run " + rc.Manifest.Run,
		Retention:   jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: dupWindow,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("queue: work stream: %w", err)
	}
	results, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: resultsStream(rc.RunID), Subjects: []string{resultsSubject(rc.RunID)},
		Description: "antidrift records of run " + rc.Manifest.Run,
		Retention:   jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: dupWindow,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("queue: results stream: %w", err)
	}
	if _, err := work.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: workersConsumer, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: c.AckWait, MaxDeliver: c.MaxDeliver, MaxAckPending: 1 << 20, MaxWaiting: 4096,
	}); err != nil {
		return nil, nil, fmt.Errorf("queue: work consumer: %w", err)
	}
	if _, err := results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: collectConsumer, AckPolicy: jetstream.AckExplicitPolicy,
		// Results fetched but lost in a server restart come back after this.
		AckWait: min(max(c.AckWait, 2*time.Second), 30*time.Second), MaxAckPending: 1 << 20,
	}); err != nil {
		return nil, nil, fmt.Errorf("queue: results consumer: %w", err)
	}
	return work, results, nil
}

// publish queues the items, retrying those the server did not confirm
// (a restart in progress) until ctx ends. Items already queued, or taken
// and not yet collected, are dropped by the server as duplicates.
func (c *Coordinator) publish(ctx context.Context, id string, items []item) {
	for len(items) > 0 && ctx.Err() == nil {
		var failed []item
		for lo := 0; lo < len(items) && ctx.Err() == nil; lo += 2048 {
			chunk := items[lo:min(lo+2048, len(items))]
			futs := make([]jetstream.PubAckFuture, len(chunk))
			for i, it := range chunk {
				b, _ := json.Marshal(it)
				m := nats.NewMsg(workSubject(id))
				m.Data = b
				m.Header.Set(hdrTraj, it.TrajID)
				f, err := c.JS.PublishMsgAsync(m, jetstream.WithMsgID(it.msgID()))
				if err != nil {
					failed = append(failed, it)
					continue
				}
				futs[i] = f
			}
			for i, f := range futs {
				if f == nil {
					continue
				}
				select {
				case <-f.Ok():
				case <-f.Err():
					failed = append(failed, chunk[i])
				case <-time.After(10 * time.Second):
					failed = append(failed, chunk[i])
				case <-ctx.Done():
					return
				}
			}
		}
		items = failed
		if len(items) > 0 {
			sleep(ctx, 500*time.Millisecond)
		}
	}
}

// reap turns items that ran out of deliveries into infrastructure-error
// results (collected like any other) and removes them from the work
// stream, so that a resumed run retries them.
func (c *Coordinator) reap(ctx context.Context, id, key string, work jetstream.Stream, dead <-chan uint64, logw io.Writer) {
	kill := func(seq uint64) {
		raw, err := work.GetMsg(ctx, seq)
		if err != nil {
			return // gone already (acked, or reaped)
		}
		var it item
		if json.Unmarshal(raw.Data, &it) == nil && it.PlanKey == key && it.TrajID != "" {
			rec := c.infraRecord(it, fmt.Sprintf("no worker finished this episode in %d deliveries (workers killed, or an endpoint failing); retried when the run resumes", c.MaxDeliver))
			if err := c.publishRecord(ctx, id, rec, fmt.Sprintf("#dead-%d", it.Attempt)); err != nil {
				return // retried by the next sweep
			}
		}
		if err := work.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			fmt.Fprintf(logw, "antidrift: queue: removing dead work item %d: %v\n", seq, err)
		}
	}
	tick := time.NewTicker(max(c.AckWait/2, 250*time.Millisecond))
	defer tick.Stop()
	cons, _ := work.Consumer(ctx, workersConsumer)
	for {
		select {
		case <-ctx.Done():
			return
		case seq := <-dead:
			kill(seq)
		case <-tick.C:
			if cons == nil {
				cons, _ = work.Consumer(ctx, workersConsumer)
				continue
			}
			ci, err := cons.Info(ctx)
			if err != nil || ci.NumPending > 0 || ci.NumAckPending > 0 {
				continue
			}
			si, err := work.Info(ctx)
			if err != nil || si.State.Msgs == 0 {
				continue
			}
			// Nothing waits for a delivery or an ack, yet messages are
			// left: each has used up its deliveries.
			for seq := si.State.FirstSeq; seq <= si.State.LastSeq && ctx.Err() == nil; seq++ {
				kill(seq)
			}
		}
	}
}

// infraRecord is the record of an episode that has no result.
func (c *Coordinator) infraRecord(it item, msg string) *trajectory.Record {
	cfg := c.Config
	if cfg.Framework == "" {
		cfg.Framework = engine.FrameworkNormal
	}
	rec := &trajectory.Record{TrajID: it.TrajID, Run: c.Folder.Manifest.Run, Checkpoint: cfg.Checkpoint, Policy: cfg.PolicyName,
		Framework: cfg.Framework, ScenarioID: it.Scenario, Rollout: it.Rollout, Seed: it.Seed,
		Status: trajectory.StatusInfraError, Error: msg, Version: cfg.Version,
		Timings: trajectory.Timings{Start: time.Now().UTC().Format(time.RFC3339Nano)}}
	for _, s := range cfg.Scenarios {
		if s.ID == it.Scenario {
			rec.Domain = s.Domain
		}
	}
	return rec
}

// publishRecord publishes a record the coordinator makes itself (an item
// out of deliveries), signed like a worker's; suffix tells its message id
// apart from the episode's result.
func (c *Coordinator) publishRecord(ctx context.Context, id string, rec *trajectory.Record, suffix string) error {
	m, err := encodeRecord(resultsSubject(id), rec, 0)
	if err != nil {
		return err
	}
	for _, s := range c.Config.Scenarios {
		if s.ID == rec.ScenarioID {
			m.Header.Set(hdrScenarioHash, scenario.Hash([]*scenario.Scenario{s}))
		}
	}
	m.Header.Set(hdrAuth, resultAuth(c.key, id, m))
	_, err = c.JS.PublishMsg(ctx, m, jetstream.WithMsgID(resultMsgID(c.key, rec.TrajID, suffix)))
	return err
}

// cleanup removes a finished run's streams and configuration.
func (c *Coordinator) cleanup(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, s := range []string{workStream(id), resultsStream(id)} {
		_ = c.JS.DeleteStream(ctx, s)
	}
	if obs, err := c.JS.ObjectStore(ctx, configBucket); err == nil {
		_ = obs.Delete(ctx, id)
	}
}

// infraCounts counts the infrastructure-error records of each episode in
// a run folder's errors/ files: a resumed retry gets a fresh work item id.
func infraCounts(dir string) (map[string]int, error) {
	out := map[string]int{}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("queue: %w", err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			var r struct {
				TrajID string `json:"traj_id"`
			}
			if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &r) == nil && r.TrajID != "" {
				out[r.TrajID]++
			}
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("queue: %s: %w", f, err)
		}
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
