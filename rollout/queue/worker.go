package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Endpoint tells a worker how to reach an endpoint a run names, and how
// many episodes all workers together may run against it.
type Endpoint struct {
	// Match is the base URL as the run records it (rollout --base-url).
	Match string `json:"match"`
	// BaseURL is what this worker dials (default: Match).
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding this worker's key
	// (default: the run's --api-key-env). Never the key itself.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// Lease names the shared cap (default: Match); workers that name one
	// server differently share its cap by giving the same Lease.
	Lease string `json:"lease,omitempty"`
	// MaxConcurrency is the cap on episodes in flight against the endpoint
	// across every worker (default: the run's --concurrency).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
}

// LoadEndpoints reads an endpoints file: {"endpoints": [Endpoint, ...]}.
func LoadEndpoints(path string) ([]Endpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	var doc struct {
		Endpoints []Endpoint `json:"endpoints"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("queue: %s: %w", path, err)
	}
	for i, e := range doc.Endpoints {
		switch {
		case e.Match == "":
			return nil, fmt.Errorf("queue: %s: $.endpoints[%d].match: missing (the base URL as the run records it)", path, i)
		case e.MaxConcurrency < 0:
			return nil, fmt.Errorf("queue: %s: $.endpoints[%d].max_concurrency: %d is negative", path, i, e.MaxConcurrency)
		case strings.HasPrefix(e.APIKeyEnv, "sk-") || strings.ContainsAny(e.APIKeyEnv, " =/"):
			return nil, fmt.Errorf("queue: %s: $.endpoints[%d].api_key_env: not a variable name (give the name of the variable holding the key, never the key)", path, i)
		}
	}
	return doc.Endpoints, nil
}

// Worker pulls work items of every run on the server (or of one), runs
// each episode, publishes its record and then acks the item.
type Worker struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Name identifies the worker in what it reports (default host:pid).
	Name string
	// Concurrency bounds this worker's episodes in flight (default 8).
	Concurrency int
	Endpoints   []Endpoint
	// Version is this toolkit's version; a run planned by another version
	// is refused.
	Version string
	// Scenarios, when set, is the worker's own suite: a run whose scenario
	// hash it does not reproduce is refused. Unset: the run's own
	// scenarios (carried in its configuration) are used.
	Scenarios []*scenario.Scenario
	// Run limits the worker to one run (its name); empty: every run.
	Run string
	// IdleExit ends Serve after so long without work (0: never).
	IdleExit time.Duration
	// Log receives what the worker refuses or fails at; nil: discarded.
	Log io.Writer

	leases   *leaser
	slots    chan struct{}
	inflight atomic.Int64
	lastWork atomic.Int64
	done     atomic.Int64
	mu       sync.Mutex
	active   map[string]bool
	refused  map[string]string // run id -> plan key refused
	// stopped: run id -> the configuration publication this worker hit a
	// fatal endpoint error (or an endpoint-wide refusal) under; it takes
	// none of the run's items until the run is published anew.
	stopped map[string]string
	gates   map[string]*refusalProbation // run id -> its first-wave refusal gate
}

// Episodes is the number of records this worker has published.
func (w *Worker) Episodes() int64 { return w.done.Load() }

// Serve runs until ctx ends (or IdleExit). It returns nil on either.
func (w *Worker) Serve(ctx context.Context) error {
	if w.Concurrency <= 0 {
		w.Concurrency = 8
	}
	if w.Name == "" {
		host, _ := os.Hostname()
		w.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if w.Log == nil {
		w.Log = io.Discard
	}
	w.slots = make(chan struct{}, w.Concurrency)
	w.leases = newLeaser(w.JS, w.Name)
	w.active, w.refused = map[string]bool{}, map[string]string{}
	w.stopped, w.gates = map[string]string{}, map[string]*refusalProbation{}
	w.lastWork.Store(time.Now().UnixNano())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leasesDone := make(chan struct{})
	go func() { defer close(leasesDone); w.leases.refresh(ctx) }()
	defer func() { cancel(); <-leasesDone }() // idle slots go back to the bucket
	var wg sync.WaitGroup
	defer wg.Wait()
	poke := make(chan struct{}, 1)
	if sub, err := w.NC.Subscribe(announceSubject, func(*nats.Msg) {
		select {
		case poke <- struct{}{}:
		default:
		}
	}); err == nil {
		defer sub.Unsubscribe()
	}
	only := ""
	if w.Run != "" {
		only = workStream(RunID(w.Run))
	}
	for ctx.Err() == nil {
		names := w.JS.StreamNames(ctx)
		for name := range names.Name() {
			if !strings.HasPrefix(name, workPrefix) || (only != "" && name != only) {
				continue
			}
			id := strings.TrimPrefix(name, workPrefix)
			w.mu.Lock()
			busy := w.active[id]
			w.active[id] = true
			w.mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.serveRun(ctx, id)
				w.mu.Lock()
				delete(w.active, id)
				w.mu.Unlock()
			}()
		}
		if w.IdleExit > 0 && w.inflight.Load() == 0 && time.Since(time.Unix(0, w.lastWork.Load())) > w.IdleExit {
			cancel()
			break
		}
		select { // poll, or look at once when a coordinator announces work
		case <-ctx.Done():
		case <-poke:
		case <-time.After(2 * time.Second):
		}
	}
	return nil
}

// runner is what a worker knows of one run.
type runner struct {
	rc      *RunConfig
	cfg     engine.Config
	byID    map[string]*scenario.Scenario
	lease   string // "" for in-process policies
	cap     int
	mu      sync.Mutex
	prepped map[string]*agent.Scenario
	hashes  map[string]string // scenario.Hash by scenario id
	stop    atomic.Bool
	// askNumCtx asks the server for num_ctx once, inside an endpoint
	// slot, when the coordinator's check did not hand it over.
	askNumCtx sync.Once
}

// learnNumCtx asks the server for an Ollama model's num_ctx, once, when
// the coordinator's check did not hand it over (openai.Client.LearnNumCtx).
func (r *runner) learnNumCtx(ctx context.Context) {
	r.askNumCtx.Do(func() {
		if c, ok := r.cfg.Policy.(*openai.Client); ok && r.rc.NumCtx == 0 {
			c.LearnNumCtx(ctx)
		}
	})
}

// scenarioHash is the hash of one scenario as this worker runs it, sent
// with each result for the coordinator to compare with its plan's.
func (r *runner) scenarioHash(s *scenario.Scenario) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.hashes[s.ID]; ok {
		return h
	}
	if r.hashes == nil {
		r.hashes = map[string]string{}
	}
	h := scenario.Hash([]*scenario.Scenario{s})
	r.hashes[s.ID] = h
	return h
}

// report tells the run's coordinator (and this worker's log) what this
// worker cannot do; the event is signed with the run key, without which
// the coordinator ignores it.
func (w *Worker) report(rc *RunConfig, kind, msg string) {
	msg = secret.Text(msg) // an endpoint error may quote a URL
	fmt.Fprintf(w.Log, "antidrift: worker %s: %s\n", w.Name, msg)
	ev := event{Worker: w.Name, Kind: kind, Message: msg, Publication: rc.publication}
	ev.Auth = sign(rc.RunKey, ev.authParts(rc.RunID)...)
	b, _ := json.Marshal(ev)
	_ = w.NC.Publish(eventsSubject(rc.RunID), b)
}

func (w *Worker) serveRun(ctx context.Context, id string) {
	rc, err := w.loadConfig(ctx, id)
	if err != nil {
		return // not published yet, or the run just finished: next round
	}
	w.mu.Lock()
	refusedKey, refused := w.refused[id]
	stoppedAt, stopped := w.stopped[id]
	w.mu.Unlock()
	if refused && refusedKey == rc.PlanKey || stopped && stoppedAt == rc.publication {
		return
	}
	r, err := w.prepare(rc)
	if err != nil {
		w.mu.Lock()
		w.refused[id] = rc.PlanKey
		w.mu.Unlock()
		w.report(rc, "refused", err.Error())
		return
	}
	cons, err := w.JS.Consumer(ctx, workStream(id), workersConsumer)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	checked := time.Now()
	for ctx.Err() == nil && !r.stop.Load() {
		if time.Since(checked) > 2*time.Second { // a resumed run may change its settings (base URL, timeouts)
			checked = time.Now()
			if digest, err := w.configDigest(ctx, id); err == nil && digest != rc.digest {
				return
			}
		}
		select { // at least one free slot, then as many as are free
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < 64 {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		if r.stop.Load() { // an episode met a fatal endpoint error while this loop waited for a slot
			for ; n > 0; n-- {
				<-w.slots
			}
			return
		}
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(time.Second))
		got := 0
		reload := false
		if err == nil {
			for m := range batch.Messages() {
				got++
				var it item
				if json.Unmarshal(m.Data(), &it) != nil || it.TrajID == "" {
					_ = m.Term() // not a work item; never redelivered
					<-w.slots
					continue
				}
				if it.Config != rc.digest && !reload {
					// Queued under another configuration: a resumed run's
					// new settings, or an older item under the current one.
					if cur, err := w.configDigest(ctx, id); err == nil && cur != rc.digest {
						_ = m.Nak()
						reload = true
						<-w.slots
						continue
					}
				}
				if reload || it.PlanKey != rc.PlanKey {
					_ = m.Nak() // a new plan under this run name: reload its configuration
					reload = true
					<-w.slots
					continue
				}
				w.inflight.Add(1)
				w.lastWork.Store(time.Now().UnixNano())
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-w.slots; w.inflight.Add(-1); w.lastWork.Store(time.Now().UnixNano()) }()
					w.handle(ctx, r, m, it)
				}()
			}
			err = batch.Error()
		}
		for ; got < n; got++ {
			<-w.slots
		}
		if reload || errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
			errors.Is(err, jetstream.ErrConsumerDeleted) {
			return
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			sleep(ctx, 250*time.Millisecond) // reconnecting
		}
	}
}

func (w *Worker) loadConfig(ctx context.Context, id string) (*RunConfig, error) {
	obs, err := w.JS.ObjectStore(ctx, configBucket)
	if err != nil {
		return nil, err
	}
	info, err := obs.GetInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	b, err := obs.GetBytes(ctx, id)
	if err != nil {
		return nil, err
	}
	var rc RunConfig
	if err := json.Unmarshal(b, &rc); err != nil {
		return nil, fmt.Errorf("queue: run %s: configuration: %w", id, err)
	}
	sum := sha256.Sum256(b)
	rc.digest = hex.EncodeToString(sum[:])
	rc.publication = info.NUID
	return &rc, nil
}

func (w *Worker) configDigest(ctx context.Context, id string) (string, error) {
	obs, err := w.JS.ObjectStore(ctx, configBucket)
	if err != nil {
		return "", err
	}
	b, err := obs.GetBytes(ctx, id)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// prepare checks that this worker may run the run's items and builds its
// policy. The errors are the refusal messages.
func (w *Worker) prepare(rc *RunConfig) (*runner, error) {
	m := rc.Manifest
	if rc.Format != Format {
		return nil, fmt.Errorf("refusing run %s: its queue format is %d, this worker reads %d; use workers of the coordinator's antidrift version", m.Run, rc.Format, Format)
	}
	if m.Version != w.Version {
		return nil, fmt.Errorf("refusing run %s: it was planned by antidrift %s and this worker is %s; records of one run must come from one toolkit version (run workers of the coordinator's version)", m.Run, m.Version, w.Version)
	}
	ss, err := parseScenarios(rc.Scenarios)
	if err != nil {
		return nil, fmt.Errorf("refusing run %s: its scenarios do not decode here: %v; use workers of the coordinator's antidrift version", m.Run, err)
	}
	if w.Scenarios != nil {
		own := map[string]*scenario.Scenario{}
		for _, s := range w.Scenarios {
			own[s.ID] = s
		}
		mine := make([]*scenario.Scenario, 0, len(m.Plan.ScenarioIDs))
		for _, sid := range m.Plan.ScenarioIDs {
			if s := own[sid]; s != nil {
				mine = append(mine, s)
			}
		}
		if h := scenario.Hash(mine); h != m.Plan.ScenarioHash {
			return nil, fmt.Errorf("refusing run %s: its scenario-suite hash is %s but this worker's --scenarios give %s (%d of its %d scenarios found); give the worker the run's scenarios, or leave --scenarios out to use the ones the run carries", m.Run, short(m.Plan.ScenarioHash), short(h), len(mine), len(m.Plan.ScenarioIDs))
		}
		ss = mine
	} else if h := scenario.Hash(ss); h != m.Plan.ScenarioHash {
		return nil, fmt.Errorf("refusing run %s: its scenarios hash to %s here, not %s as planned; use workers of the coordinator's antidrift version", m.Run, short(h), short(m.Plan.ScenarioHash))
	}
	r := &runner{rc: rc, byID: map[string]*scenario.Scenario{}, prepped: map[string]*agent.Scenario{}}
	for _, s := range ss {
		r.byID[s.ID] = s
	}
	var wall time.Duration
	if m.Settings.EpisodeTime != "" {
		d, err := time.ParseDuration(m.Settings.EpisodeTime)
		if err != nil {
			return nil, fmt.Errorf("refusing run %s: episode wall time %q: %v", m.Run, m.Settings.EpisodeTime, err)
		}
		wall = d
	}
	r.cfg = engine.Config{
		Scenarios: ss, PolicyName: m.Plan.Policy, Checkpoint: m.Plan.Checkpoint, Framework: m.Plan.Framework,
		Rollouts: m.Plan.Rollouts, Seed: m.Plan.Seed, Version: m.Version,
		Limits: agent.Limits{MaxSteps: m.Plan.MaxSteps, MaxTokens: m.Plan.MaxTokens, WallTime: wall,
			Temperature: m.Plan.Temperature, OmitTemperature: m.Plan.OmitTemperature, MaxTurnTokens: m.Plan.MaxTurnTokens},
	}
	if err := engine.CheckFramework(r.cfg.Framework); err != nil {
		return nil, fmt.Errorf("refusing run %s: %v", m.Run, err)
	}
	if r.cfg.ToolOrder, err = engine.ToolOrderOf(m.Plan.ToolOrder); err != nil { // the tool order the run planned
		return nil, fmt.Errorf("refusing run %s: %v", m.Run, err)
	}
	if r.cfg.Filter, err = engine.FilterOf(m.Plan.Filter); err != nil { // the exposure filter the run planned
		return nil, fmt.Errorf("refusing run %s: exposure filter: %v", m.Run, err)
	}
	kind, name, _ := strings.Cut(m.Plan.Policy, ":")
	switch kind {
	case "sim":
		prof, err := sim.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("refusing run %s: %v", m.Run, err)
		}
		r.cfg.Policy = sim.New(prof, ss)
	case "openai":
		ep := Endpoint{Match: m.Settings.BaseURL}
		for _, e := range w.Endpoints {
			if strings.TrimRight(e.Match, "/") == strings.TrimRight(m.Settings.BaseURL, "/") {
				ep = e
			}
		}
		if ep.BaseURL == "" {
			ep.BaseURL = ep.Match
		}
		if ep.BaseURL == "" {
			return nil, fmt.Errorf("refusing run %s: it names no base URL; give this worker --endpoints with the URL to use", m.Run)
		}
		if ep.APIKeyEnv == "" {
			ep.APIKeyEnv = m.Settings.APIKeyEnv
		}
		if ep.Lease == "" {
			ep.Lease = ep.Match
		}
		r.cap = ep.MaxConcurrency
		if r.cap == 0 {
			r.cap = m.Settings.Concurrency
		}
		if r.cap <= 0 {
			r.cap = w.Concurrency
		}
		r.lease = leaseName(ep.Lease)
		var timeout time.Duration
		if rc.RequestTimeout != "" {
			timeout, _ = time.ParseDuration(rc.RequestTimeout)
		}
		tp, err := openai.ParseTokenParam(rc.TokenParam)
		if err != nil {
			return nil, fmt.Errorf("refusing run %s: token param: %v; use workers of the coordinator's antidrift version", m.Run, err)
		}
		var ready time.Duration
		if rc.ReadyWait != "" {
			if ready, err = time.ParseDuration(rc.ReadyWait); err != nil {
				return nil, fmt.Errorf("refusing run %s: ready wait %q: %v", m.Run, rc.ReadyWait, err)
			}
			if ready == 0 {
				ready = -1 // the run said: do not wait
			}
		}
		c, err := openai.New(openai.Config{BaseURL: ep.BaseURL, Model: name, APIKey: openai.KeyFromEnv(ep.APIKeyEnv),
			Timeout: timeout, MaxRetries: rc.MaxRetries, Concurrency: w.Concurrency, TokenParam: tp, ReadyWait: ready})
		if err != nil {
			return nil, fmt.Errorf("refusing run %s: %v", m.Run, err)
		}
		// What the coordinator's endpoint check learnt; without num_ctx,
		// the first episode asks the server (an Ollama one answers), so
		// that a conversation the server cuts silently is still told.
		c.Learn(openai.Report{TokenParam: rc.LearnedTokenParam, NumCtx: rc.NumCtx})
		r.cfg.Policy = c
	default:
		return nil, fmt.Errorf("refusing run %s: unknown policy %q", m.Run, m.Plan.Policy)
	}
	return r, nil
}

func short(h string) string { return h[:min(len(h), 12)] }

func (r *runner) prepared(s *scenario.Scenario) (*agent.Scenario, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.prepped[s.ID]; p != nil {
		return p, nil
	}
	p, err := agent.Prepare(s)
	if err != nil {
		return nil, err
	}
	r.prepped[s.ID] = p
	return p, nil
}

// handle runs one work item: episode, result, ack. The item is kept alive
// with progress acks while it runs.
func (w *Worker) handle(ctx context.Context, r *runner, m jetstream.Msg, it item) {
	rc := r.rc
	s := r.byID[it.Scenario]
	if s == nil || engine.EpisodeSeed(rc.Manifest.Plan.Seed, it.Scenario, it.Rollout) != it.Seed ||
		trajectory.TrajID(rc.Manifest.Run, r.cfg.Checkpoint, r.cfg.Framework, it.Scenario, it.Rollout, it.Seed) != it.TrajID {
		w.report(rc, "refused", fmt.Sprintf("run %s: work item %s is not in the run's plan; dropped", rc.Manifest.Run, it.TrajID))
		_ = m.Term()
		return
	}
	ackWait := rc.ackWait()
	kctx, stopKeep := context.WithCancel(ctx)
	defer stopKeep()
	go func() {
		t := time.NewTicker(max(ackWait/3, 50*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-kctx.Done():
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	nak := func(d time.Duration) {
		if d > 0 {
			_ = m.NakWithDelay(d)
		} else {
			_ = m.Nak()
		}
	}
	sc, err := r.prepared(s)
	if err != nil {
		w.report(rc, "refused", fmt.Sprintf("run %s: %v", rc.Manifest.Run, err))
		nak(ackWait)
		return
	}
	var key string
	if r.lease != "" {
		if key, err = w.leases.acquire(ctx, r.lease, r.cap); err != nil {
			nak(0)
			return
		}
	}
	r.learnNumCtx(ctx) // in this item's endpoint slot: the cap holds
	p := engine.Planned{Scenario: s, Rollout: it.Rollout, Seed: it.Seed, TrajID: it.TrajID}
	rec, cause, err := engine.RunOne(ctx, r.cfg, rc.Manifest.Run, sc, p)
	if key != "" {
		w.leases.release(r.lease, key) // the endpoint is done with it: publishing needs no slot
	}
	stop := func(why error) {
		r.stop.Store(true)
		w.mu.Lock()
		w.stopped[rc.RunID] = rc.publication
		w.mu.Unlock()
		w.report(rc, "fatal", fmt.Sprintf("run %s: stopped taking its items: %v", rc.Manifest.Run, why))
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			nak(0) // shutting down: someone else takes it now
		case errors.Is(err, policy.ErrFatal):
			stop(err)
			nak(ackWait)
		default:
			nak(ackWait)
		}
		return
	}
	md, _ := m.Metadata()
	last := md != nil && int(md.NumDelivered) >= rc.MaxDeliver
	switch verdict, why := w.gate(rc).admit(engine.FirstWaveRefusal(rec, cause), cause, last); verdict {
	case probationHold:
		// Refused before any model answer while this worker has seen
		// nothing else of the run, or one of a streak of the same server
		// error: not a record yet. The item comes back soon and is
		// recorded once the endpoint has shown it answers.
		nak(max(min(ackWait/4, 5*time.Second), 250*time.Millisecond))
		return
	case probationRefused:
		stop(why)
		nak(ackWait)
		return
	}
	suffix := ""
	if rec.Status == trajectory.StatusInfraError {
		if md != nil && int(md.NumDelivered) < rc.MaxDeliver {
			nak(min(ackWait/4<<(md.NumDelivered-1), 30*time.Second)) // another delivery, maybe another worker
			return
		}
		suffix = fmt.Sprintf("#infra-%d", it.Attempt)
	}
	msgID := resultMsgID(rc.RunKey, it.TrajID, suffix)
	out, err := encodeRecord(resultsSubject(rc.RunID), rec, 0)
	if err != nil {
		nak(ackWait)
		return
	}
	out.Header.Set(hdrScenarioHash, r.scenarioHash(s))
	out.Header.Set(hdrAuth, resultAuth(rc.RunKey, rc.RunID, out))
	for {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = w.JS.PublishMsg(pctx, out, jetstream.WithMsgID(msgID))
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return // not acked: redelivered, and a duplicate result is dropped
		}
		sleep(ctx, 250*time.Millisecond) // the server is restarting; the item is kept alive meanwhile
	}
	w.done.Add(1)
	// A lost ack only means a redelivery, whose result is a duplicate the
	// results stream and the coordinator drop.
	_ = m.Ack()
}
