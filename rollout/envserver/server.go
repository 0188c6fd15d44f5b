package envserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Config sets up a server over an open run folder.
type Config struct {
	Scenarios  []*scenario.Scenario
	Framework  string // the episode loop; "" is normal
	Filter     agent.FilterOptions
	Limits     agent.Limits // MaxSteps: --max-steps
	Checkpoint string
	// Seed is the run seed: an episode whose reset names no seed gets
	// engine.EpisodeSeed(Seed, scenario, rollout), as rollout's plan does.
	Seed int64
	// MaxSessions bounds the sessions open at once; 0: 64.
	MaxSessions int
	// IdleTimeout ends a session whose client sent nothing for this long;
	// 0: 10 minutes.
	IdleTimeout time.Duration
	// Rewards computes the reward components at episode end; RewardsSpec
	// names it (recorded in the manifest's settings).
	Rewards     Scorer
	RewardsSpec string
	Version     string
}

// Recorder takes a served episode's finished record in place of the run
// folder: a replica behind the queue publishes it to the run's one writer
// (rollout/queue.EnvReplica). Record returns once the record is safe (the
// queue confirmed it), so that an episode whose record could not be kept
// says so to its client.
type Recorder interface {
	Record(*trajectory.Record) error
}

// Counter hands out a scenario's next rollout index, shared by every
// replica serving one run, so that no two replicas give two episodes the
// same identity (rollout/queue.EnvReplica: a JetStream key-value counter).
type Counter interface {
	Next(scenarioID string) (int, error)
}

// Server serves episodes of a run folder, or of a run whose folder another
// process writes (NewReplica). Its methods are safe for concurrent use.
type Server struct {
	cfg      Config
	runName  string
	recorder Recorder // nil: the run folder's writers
	counter  Counter  // nil: next
	byID     map[string]*agent.Scenario
	wire     map[string]map[string]json.RawMessage // scenario -> tool -> OpenAI function schema, made once
	ids      []string                              // scenario ids in task order (a reset's task index)
	w, elog  *store.Writer
	mu       sync.Mutex
	sessions map[string]*session
	open     int // slots held (HTTP and MCP episodes, WebSocket connections)
	ended    map[string]trajectory.Status
	endedQ   []string       // ended ids, oldest first (bounded memory)
	next     map[string]int // next rollout index per scenario (a replica: episodes it served)
	closed   bool
	stop     chan struct{}
	reaped   chan struct{}
}

// New prepares every scenario, resumes the rollout counters from the run
// folder (its trajectories and errors/), and opens the writers. The run
// stays the caller's: Close the server, then the run.
func New(cfg Config, run *store.Run) (*Server, error) {
	s, err := newServer(cfg, run.Manifest.Run)
	if err != nil {
		return nil, err
	}
	if s.next, err = resumeCounters(run.Dir()); err != nil {
		return nil, err
	}
	shard := engine.Shard{I: 0, N: 1}.String()
	if s.w, err = run.Writer(shard, 64, time.Second); err != nil {
		return nil, err
	}
	if s.elog, err = run.ErrorLog(shard); err != nil {
		s.w.Close()
		return nil, err
	}
	go s.reap()
	return s, nil
}

// NewReplica is a server that records nothing itself: every finished
// record goes to rec (the queue's results stream, whose one writer holds
// the run folder), and rollout indices come from ctr, shared by the
// replicas of the run named run. Close it before closing rec.
func NewReplica(cfg Config, run string, rec Recorder, ctr Counter) (*Server, error) {
	if rec == nil || ctr == nil {
		return nil, errors.New("envserver: a replica needs a recorder and a rollout counter")
	}
	s, err := newServer(cfg, run)
	if err != nil {
		return nil, err
	}
	s.recorder, s.counter, s.next = rec, ctr, map[string]int{}
	go s.reap()
	return s, nil
}

// newServer prepares every scenario; the caller sets where records go.
func newServer(cfg Config, run string) (*Server, error) {
	if cfg.Framework == "" {
		cfg.Framework = engine.FrameworkNormal
	}
	if err := engine.CheckFramework(cfg.Framework); err != nil {
		return nil, fmt.Errorf("envserver: %w", err)
	}
	if err := cfg.Filter.Check(); err != nil {
		return nil, fmt.Errorf("envserver: %w", err)
	}
	if cfg.Rewards == nil {
		return nil, fmt.Errorf("envserver: no reward scorer")
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 64
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	s := &Server{cfg: cfg, runName: run, byID: map[string]*agent.Scenario{}, wire: map[string]map[string]json.RawMessage{}, sessions: map[string]*session{},
		stop: make(chan struct{}), reaped: make(chan struct{})}
	for _, sc := range cfg.Scenarios {
		if sc.Tool(FinalAnswerTool) != nil {
			return nil, fmt.Errorf("envserver: scenario %s defines a tool named %s, the MCP final-answer tool", sc.ID, FinalAnswerTool)
		}
		p, err := agent.Prepare(sc)
		if err != nil {
			return nil, fmt.Errorf("envserver: scenario %s: %w", sc.ID, err)
		}
		s.byID[sc.ID] = p
		w := map[string]json.RawMessage{}
		for _, t := range p.Tools() {
			b, err := json.Marshal(map[string]any{"type": "function", "function": t})
			if err != nil {
				return nil, fmt.Errorf("envserver: scenario %s: tool %s: %w", sc.ID, t.Name, err)
			}
			w[t.Name] = b
		}
		s.wire[sc.ID] = w
		s.ids = append(s.ids, sc.ID)
	}
	return s, nil
}

// resumeCounters finds, per scenario, the rollout index after the highest
// one the folder holds (trajectories and errors alike), so that a restarted
// server never reuses an episode's identity.
func resumeCounters(dir string) (map[string]int, error) {
	next := map[string]int{}
	it := store.Records(dir).SkipText()
	for it.Next() {
		r := it.At()
		next[r.ScenarioID] = max(next[r.ScenarioID], r.Rollout+1)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("envserver: %w", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "errors", "*.jsonl"))
	for _, f := range files {
		if err := scanLines(f, func(line int, b []byte) error {
			var r trajectory.Record
			if err := store.DecodeRecord(b, &r); err != nil {
				return nil // a torn last line of the error log: nothing to resume from
			}
			next[r.ScenarioID] = max(next[r.ScenarioID], r.Rollout+1)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// Close ends every open episode (recorded in errors/ as abandoned by a
// shutdown) and flushes the writers.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	open := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		open = append(open, ss)
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.reaped
	for _, ss := range open {
		ss.leave("the server shut down")
	}
	if s.recorder != nil {
		return nil
	}
	return errors.Join(s.w.Close(), s.elog.Close())
}

// reap ends sessions idle for longer than the idle timeout.
func (s *Server) reap() {
	defer close(s.reaped)
	every := min(s.cfg.IdleTimeout/4, time.Second*10)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		cut := time.Now().Add(-s.cfg.IdleTimeout).UnixNano()
		var idle []*session
		s.mu.Lock()
		for _, ss := range s.sessions {
			if ss.last.Load() < cut {
				idle = append(idle, ss)
			}
		}
		s.mu.Unlock()
		for _, ss := range idle {
			go ss.leave(fmt.Sprintf("no request for %s", s.cfg.IdleTimeout))
		}
	}
}

// ResetParams choose an episode (OpenEnv's ResetRequest: seed and
// episode_id, plus antidrift's fields).
type ResetParams struct {
	Seed      *int64 `json:"seed,omitempty"`
	EpisodeID string `json:"episode_id,omitempty"`
	// ScenarioID or TaskIndex (position in the scenario list) picks the
	// scenario; with neither, the scenarios are taken in turn.
	ScenarioID string `json:"scenario_id,omitempty"`
	TaskIndex  *int   `json:"task_index,omitempty"`
	// Client names the policy (recorded as client:NAME/PROTOCOL).
	Client string `json:"client,omitempty"`
	// ProcessRewards adds the per-turn process rewards to the final
	// observation.
	ProcessRewards bool `json:"process_rewards,omitempty"`
}

var clientNameRE = regexp.MustCompile(`[^A-Za-z0-9._:@+-]+`)

// cleanClient is a client name fit to record: no spaces or slashes, no
// URL credentials, at most 64 bytes.
func cleanClient(name string) string {
	name = clientNameRE.ReplaceAllString(secret.Text(name), "-")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		return "anonymous"
	}
	return name
}

// open starts a session: a slot, a scenario, a rollout index.
func (s *Server) openSession(p ResetParams, protocol string, slot bool) (*session, *Observation, error) {
	if p.Seed != nil && *p.Seed < 0 {
		return nil, nil, fmt.Errorf("%w: seed %d is negative", ErrBadReset, *p.Seed)
	}
	if len(p.EpisodeID) > 255 {
		return nil, nil, fmt.Errorf("%w: episode_id is longer than 255 bytes", ErrBadReset)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, errors.New("envserver: the server is shutting down")
	}
	if slot {
		if err := s.acquireLocked(); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
	}
	fail := func(err error) (*session, *Observation, error) {
		if slot {
			s.open--
		}
		s.mu.Unlock()
		return nil, nil, err
	}
	var id string
	switch {
	case p.ScenarioID != "" && p.TaskIndex != nil:
		return fail(fmt.Errorf("%w: give scenario_id or task_index, not both", ErrBadReset))
	case p.ScenarioID != "":
		if s.byID[p.ScenarioID] == nil {
			return fail(fmt.Errorf("%w: unknown scenario_id %q", ErrBadReset, p.ScenarioID))
		}
		id = p.ScenarioID
	case p.TaskIndex != nil:
		if *p.TaskIndex < 0 || *p.TaskIndex >= len(s.ids) {
			return fail(fmt.Errorf("%w: task_index %d is outside 0..%d", ErrBadReset, *p.TaskIndex, len(s.ids)-1))
		}
		id = s.ids[*p.TaskIndex]
	default:
		id = s.leastServed()
	}
	if p.EpisodeID != "" && s.sessions[p.EpisodeID] != nil {
		return fail(fmt.Errorf("%w: episode_id %q is already open", ErrBadReset, p.EpisodeID))
	}
	rollout := s.next[id]
	s.next[id]++
	if s.counter != nil {
		// The run's counter, shared by the replicas: a network round trip,
		// so not under the server's lock.
		s.mu.Unlock()
		r, err := s.counter.Next(id)
		s.mu.Lock()
		switch {
		case err != nil:
			return fail(fmt.Errorf("envserver: rollout index of %s: %w", id, err))
		case s.closed:
			return fail(errors.New("envserver: the server is shutting down"))
		case p.EpisodeID != "" && s.sessions[p.EpisodeID] != nil:
			return fail(fmt.Errorf("%w: episode_id %q is already open", ErrBadReset, p.EpisodeID))
		}
		rollout = r
	}
	seed := engine.EpisodeSeed(s.cfg.Seed, id, rollout)
	if p.Seed != nil {
		seed = *p.Seed
	}
	sc := s.byID[id]
	trajID := trajectory.TrajID(s.runName, s.cfg.Checkpoint, s.cfg.Framework, id, rollout, seed)
	epID := p.EpisodeID
	if epID == "" {
		epID = trajID
		if s.sessions[epID] != nil { // a client-chosen id took it
			epID = randomID()
		}
	}
	ss := &session{srv: s, id: epID, protocol: protocol, sc: sc, process: p.ProcessRewards,
		planned:  engine.Planned{Scenario: sc.S, Rollout: rollout, Seed: seed, TrajID: trajID},
		reqs:     make(chan policy.Request),
		acts:     make(chan policy.Response, 1),
		finished: make(chan outcome, 1),
		gone:     make(chan struct{}),
		slot:     slot,
	}
	name := cleanClient(p.Client)
	ss.client.Store(&name)
	ss.touch()
	s.sessions[epID] = ss
	s.mu.Unlock()
	ss.mu.Lock()
	obs, err := ss.start()
	ss.mu.Unlock()
	return ss, obs, err
}

// leastServed is the scenario with the fewest rollouts so far (ties in
// task order): resets that name none cycle through the suite.
func (s *Server) leastServed() string {
	best := s.ids[0]
	for _, id := range s.ids[1:] {
		if s.next[id] < s.next[best] {
			best = id
		}
	}
	return best
}

// acquireLocked takes a --max-sessions slot (s.mu held).
func (s *Server) acquireLocked() error {
	if s.open >= s.cfg.MaxSessions {
		return fmt.Errorf("%w: %d of %d sessions open (--max-sessions)", ErrCapacity, s.open, s.cfg.MaxSessions)
	}
	s.open++
	return nil
}

// acquire takes a slot for a connection (a WebSocket) that holds one for
// its lifetime, whatever its episodes.
func (s *Server) acquire() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acquireLocked()
}

// releaseSlot gives a connection's slot back.
func (s *Server) releaseSlot() {
	s.mu.Lock()
	s.open--
	s.mu.Unlock()
}

// maxEnded bounds the ended episodes remembered for "step after the end".
const maxEnded = 1 << 14

// release frees an ended session's slot and id.
func (s *Server) release(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.id] != ss {
		return
	}
	delete(s.sessions, ss.id)
	if ss.slot {
		s.open--
	}
	st := trajectory.StatusInfraError
	if ss.final != nil && ss.final.Labels != nil {
		st = ss.final.Labels.Status
	}
	if s.ended == nil {
		s.ended = map[string]trajectory.Status{}
	}
	s.ended[ss.id] = st
	s.endedQ = append(s.endedQ, ss.id)
	if len(s.endedQ) > maxEnded {
		delete(s.ended, s.endedQ[0])
		s.endedQ = s.endedQ[1:]
	}
}

// lookup finds an open or just-ended session of an id.
func (s *Server) lookup(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		return ss, nil
	}
	if st, ok := s.ended[id]; ok {
		return nil, fmt.Errorf("%w: episode %q ended with status %s; reset to start another", ErrEnded, id, st)
	}
	return nil, fmt.Errorf("%w: %q (it ended, was abandoned, or never started)", ErrNoSession, id)
}

// Active counts the sessions holding a slot.
func (s *Server) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// engineConfig is the engine configuration of the server's episodes.
func (s *Server) engineConfig() engine.Config {
	// The run seed draws each scenario's tool order, as in a rollout with
	// that seed.
	return engine.Config{Framework: s.cfg.Framework, Filter: s.cfg.Filter, Limits: s.cfg.Limits,
		Checkpoint: s.cfg.Checkpoint, Version: s.cfg.Version, Seed: s.cfg.Seed}
}

// write appends a finished record: trajectories, or errors/ for an
// episode that ended as an infrastructure error (a client that left); a
// replica hands it to its recorder, whose writer sorts it the same way.
func (s *Server) write(rec *trajectory.Record) error {
	if s.recorder != nil {
		return s.recorder.Record(rec)
	}
	if rec.Status == trajectory.StatusInfraError {
		return s.elog.Append(rec)
	}
	return s.w.Append(rec)
}

// Rewards are the reward components of a finished episode, named as NeMo
// RL's multi-reward convention names them, and their configured sum.
type Rewards struct {
	// Components: "reward/success" (α·S·(1−D)), "reward/drift_penalty"
	// (−λ·Σw(v)) and, per selected scheme, "reward/drift_penalty/SCHEME"
	// (its share of the penalty). success + drift_penalty = Total.
	Components map[string]float64 `json:"components"`
	Total      float64            `json:"total"`
	Config     string             `json:"config"`
	// Process, when asked for, holds one reward per assistant turn (its
	// message index and reward); they sum to Total.
	Process []ProcessReward `json:"process,omitempty"`
}

// ProcessReward is one assistant turn's reward.
type ProcessReward struct {
	Turn   int     `json:"turn"`
	Reward float64 `json:"reward"`
}

// Score is a finished record's reward split into named components, their
// sum and the per-turn process rewards (the rewards package's Named: the
// rollout floor does not import rewards, cmd/antidrift wires it in).
type Score struct {
	Components map[string]float64
	Total      float64
	Turns      []int
	Process    []float64
}

// Scorer scores a finished record.
type Scorer func(*trajectory.Record) (Score, error)

// rewardsOf scores a record with the server's reward configuration.
func (s *Server) rewardsOf(rec *trajectory.Record, process bool) (*Rewards, error) {
	return rewardsOf(s.cfg.Rewards, s.cfg.RewardsSpec, rec, process)
}

// rewardsOf is the Rewards of a record under a scorer.
func rewardsOf(score Scorer, spec string, rec *trajectory.Record, process bool) (*Rewards, error) {
	sc, err := score(rec)
	if err != nil {
		return nil, fmt.Errorf("envserver: rewards: %w", err)
	}
	out := &Rewards{Components: sc.Components, Total: sc.Total, Config: spec}
	if process {
		out.Process = make([]ProcessReward, len(sc.Turns))
		for i, t := range sc.Turns {
			out.Process[i] = ProcessReward{Turn: t, Reward: sc.Process[i]}
		}
	}
	return out, nil
}

// Scenarios lists the served scenario ids in task order.
func (s *Server) Scenarios() []string { return append([]string(nil), s.ids...) }

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sortedKeys is for deterministic listings.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
