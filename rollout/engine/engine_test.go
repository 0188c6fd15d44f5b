package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var loadSuite = sync.OnceValues(suite.Load)

// builtin returns the named scenarios of the built-in suite (all without
// ids), in id order.
func builtin(t *testing.T, ids ...string) []*scenario.Scenario {
	t.Helper()
	ss, err := loadSuite()
	require.NoError(t, err)
	if len(ids) == 0 {
		if raceEnabled {
			return suite.PerDomain(ss, 6)
		}
		return ss
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []*scenario.Scenario
	for _, s := range ss {
		if want[s.ID] {
			out = append(out, s)
		}
	}
	require.Len(t, out, len(ids), "built-in scenarios %v", ids)
	return out
}

// openRun opens a run folder whose plan matches cfg.
func openRun(t *testing.T, dir string, cfg engine.Config) *store.Run {
	t.Helper()
	ids := make([]string, len(cfg.Scenarios))
	for i, s := range cfg.Scenarios {
		ids[i] = s.ID
	}
	shard := cfg.Shard
	if shard.N == 0 {
		shard = engine.Shard{I: 0, N: 1}
	}
	run, err := store.Open(dir, store.Manifest{
		Version: "test", Run: "run-test", Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{
			ScenarioSource: "builtin", ScenarioHash: scenario.Hash(cfg.Scenarios), ScenarioIDs: ids,
			Policy: cfg.PolicyName, Checkpoint: cfg.Checkpoint, Framework: engine.FrameworkNormal,
			Rollouts: cfg.Rollouts, Seed: cfg.Seed, Shard: shard.String(), MaxSteps: cfg.Limits.MaxSteps,
		},
	}, false)
	require.NoError(t, err)
	return run
}

// readJSONL reads every record of one JSONL file ("" content: none).
func readJSONL(t *testing.T, path string) []*trajectory.Record {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []*trajectory.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var r trajectory.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "%s:%d", path, line)
		out = append(out, &r)
	}
	require.NoError(t, sc.Err())
	return out
}

// trajectories returns every record of a run folder by traj_id and fails on
// a duplicate.
func trajectories(t *testing.T, dir string) map[string]*trajectory.Record {
	t.Helper()
	out := map[string]*trajectory.Record{}
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		_, dup := out[r.TrajID]
		require.False(t, dup, "duplicate traj_id %s", r.TrajID)
		out[r.TrajID] = &r
	}
	require.NoError(t, it.Err())
	return out
}

func planIDs(cfg engine.Config) []string {
	var ids []string
	for _, p := range engine.Plan(cfg, "run-test") {
		ids = append(ids, p.TrajID)
	}
	sort.Strings(ids)
	return ids
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// assertAnswered checks that every tool call is answered by exactly one tool
// message with its id, right after the assistant message, in order.
func assertAnswered(t *testing.T, msgs []trajectory.Message) {
	t.Helper()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == trajectory.RoleTool {
			t.Errorf("message %d: tool message %q answers no call of the preceding assistant message", i, m.ToolCallID)
			continue
		}
		for j, tc := range m.ToolCalls {
			require.Less(t, i+1+j, len(msgs), "call %s unanswered", tc.ID)
			ans := msgs[i+1+j]
			assert.Equal(t, trajectory.RoleTool, ans.Role)
			assert.Equal(t, tc.ID, ans.ToolCallID, "message %d answers the wrong call", i+1+j)
		}
		i += len(m.ToolCalls)
	}
}

// ---------------------------------------------------------------------------
// Plan, seeds, shards

func TestParseShard(t *testing.T) {
	cases := []struct {
		in   string
		want engine.Shard
		ok   bool
	}{
		{"0/1", engine.Shard{I: 0, N: 1}, true},
		{"3/4", engine.Shard{I: 3, N: 4}, true},
		{"4/4", engine.Shard{}, false},
		{"-1/4", engine.Shard{}, false},
		{"0/0", engine.Shard{}, false},
		{"1", engine.Shard{}, false},
		{"a/b", engine.Shard{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := engine.ParseShard(tc.in)
			if !tc.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.in)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.in, got.String())
		})
	}
}

func TestPlan(t *testing.T) {
	ss := builtin(t)[:5]
	cfg := engine.Config{Scenarios: ss, Rollouts: 3, Seed: 7, Checkpoint: "c", Framework: engine.FrameworkNormal}
	full := engine.Plan(cfg, "r")
	require.Len(t, full, 15)
	for i, p := range full {
		assert.Equal(t, ss[i/3].ID, p.Scenario.ID, "scenarios in order")
		assert.Equal(t, i%3, p.Rollout, "rollouts in order")
		assert.Equal(t, engine.EpisodeSeed(7, p.Scenario.ID, p.Rollout), p.Seed)
		assert.Equal(t, trajectory.TrajID("r", "c", engine.FrameworkNormal, p.Scenario.ID, p.Rollout, p.Seed), p.TrajID)
	}
	assert.Equal(t, full, engine.Plan(cfg, "r"), "the plan is deterministic")

	// Shards partition the plan.
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		c := cfg
		c.Shard = engine.Shard{I: i, N: 4}
		for _, p := range engine.Plan(c, "r") {
			seen[p.TrajID]++
		}
	}
	require.Len(t, seen, len(full))
	for id, n := range seen {
		assert.Equal(t, 1, n, "episode %s in %d shards", id, n)
	}

	// Adding a scenario changes no other episode's seed or id.
	c := cfg
	c.Scenarios = builtin(t)[:6]
	assert.Equal(t, full, engine.Plan(c, "r")[:15])

	// Other run seeds, other episode seeds; distinct episodes, distinct seeds.
	assert.NotEqual(t, engine.EpisodeSeed(7, ss[0].ID, 0), engine.EpisodeSeed(8, ss[0].ID, 0))
	seeds := map[int64]bool{}
	for _, p := range full {
		seeds[p.Seed] = true
		assert.GreaterOrEqual(t, p.Seed, int64(0))
	}
	assert.Len(t, seeds, len(full))
}

func TestRunRejectsUnknownFramework(t *testing.T) {
	cfg := engine.Config{Scenarios: builtin(t)[:1], Rollouts: 1, Framework: "bogus", PolicyName: "sim:base"}
	cfg.Policy = sim.New(sim.Profiles[0], cfg.Scenarios)
	run := openRun(t, t.TempDir(), cfg)
	_, err := engine.Run(context.Background(), cfg, run)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown framework "bogus"`)
}

// ---------------------------------------------------------------------------
// Resume: a run interrupted at any point, or run twice, ends with exactly
// its plan.

// cancelAfter cancels the run after n completions.
type cancelAfter struct {
	policy.Policy
	n      atomic.Int64
	after  int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	if c.n.Add(1) == c.after {
		c.cancel()
	}
	return c.Policy.Complete(ctx, req)
}

func TestInterruptedRunResumesToItsPlan(t *testing.T) {
	ss := builtin(t)[:8]
	pol := sim.New(sim.Profiles[0], ss)
	cfg := engine.Config{Scenarios: ss, Policy: pol, PolicyName: pol.Name(), Checkpoint: "base", Rollouts: 3, Seed: 11, Concurrency: 4, Version: "test"}

	// Reference: one uninterrupted run.
	refDir := t.TempDir()
	sum, err := engine.Run(context.Background(), cfg, openRun(t, refDir, cfg))
	require.NoError(t, err)
	assert.Equal(t, engine.Summary{Planned: 24, Ran: 24, Statuses: sum.Statuses, Elapsed: sum.Elapsed}, sum)
	ref := trajectories(t, refDir)
	require.Equal(t, planIDs(cfg), keys(ref))

	// Interrupted twice, then finished.
	dir := t.TempDir()
	for _, after := range []int64{7, 30} {
		ctx, cancel := context.WithCancel(context.Background())
		c := cfg
		c.Policy = &cancelAfter{Policy: pol, after: after, cancel: cancel}
		_, err := engine.Run(ctx, c, openRun(t, dir, c))
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		assert.Less(t, len(trajectories(t, dir)), 24)
	}
	var seen []string
	var mu sync.Mutex
	c := cfg
	c.OnRecord = func(r *trajectory.Record) {
		mu.Lock()
		seen = append(seen, r.TrajID)
		mu.Unlock()
	}
	run := openRun(t, dir, c)
	before := run.DoneCount()
	sum, err = engine.Run(context.Background(), c, run)
	require.NoError(t, err)
	assert.Equal(t, before, sum.Skipped)
	assert.Equal(t, 24-before, sum.Ran)
	assert.Len(t, seen, sum.Ran, "OnRecord sees every written record")

	got := trajectories(t, dir)
	require.Equal(t, planIDs(cfg), keys(got), "exactly the plan: none lost, none duplicated")
	for id, r := range got {
		want := *ref[id]
		have := *r
		want.Timings, have.Timings = trajectory.Timings{}, trajectory.Timings{}
		assert.Equal(t, want, have, "episode %s differs from the uninterrupted run", id)
	}

	// A finished run has nothing left to do.
	sum, err = engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
	require.NoError(t, err)
	assert.Equal(t, 24, sum.Skipped)
	assert.Zero(t, sum.Ran)
}

// ---------------------------------------------------------------------------
// The HTTP path against a strict fake OpenAI server.

// compliant is the compliant path of a scenario as scripted calls, and a
// final answer that satisfies its answer assertions.
func compliant(t *testing.T, s *scenario.Scenario) ([]fakeserver.Call, string) {
	t.Helper()
	var out []fakeserver.Call
	for _, c := range compliantCalls(s) {
		args, err := s.CompleteArgs(c.tool, c.args, c.patterns)
		require.NoError(t, err)
		b, err := json.Marshal(args)
		require.NoError(t, err)
		out = append(out, fakeserver.Call{Name: c.tool, Arguments: string(b)})
	}
	return out, compliantAnswer(s)
}

// pathCall is one call of a compliant path, as a scenario states it.
type pathCall struct {
	tool     string
	args     map[string]json.RawMessage
	patterns map[string]string
}

// compliantCalls is the scenario's compliant path: probes.path where its
// author wrote the calls out in full (content-checking success needs
// them), else its required calls.
func compliantCalls(s *scenario.Scenario) []pathCall {
	var out []pathCall
	if s.Probes != nil && len(s.Probes.Path) > 0 {
		for _, c := range s.Probes.Path {
			out = append(out, pathCall{tool: c.Tool, args: c.Args})
		}
		return out
	}
	for _, c := range s.RequiredCalls {
		out = append(out, pathCall{c.Tool, c.Args, c.Patterns})
	}
	return out
}

// compliantAnswer is a final answer that satisfies the scenario's answer
// assertions: probes.answer, else the strings they look for.
func compliantAnswer(s *scenario.Scenario) string {
	if s.Probes != nil && s.Probes.Answer != "" {
		return s.Probes.Answer
	}
	answer := "Done."
	if a := s.Success.Answer; a != nil {
		parts := append([]string(nil), a.Contains...)
		for _, alt := range a.AnyOf {
			if len(alt) > 0 {
				parts = append(parts, alt[0])
			}
		}
		if len(parts) > 0 {
			answer += " " + strings.Join(parts, ", ") + "."
		}
	}
	return answer
}

// behaviour is how the fake server treats one rollout index.
type behaviour struct {
	name string
	// quirks on every tool-call answer
	quirks fakeserver.Quirk
	// invalidFirst adds a call with invalid JSON arguments before the first
	// compliant call, in the same turn
	invalidFirst bool
	// fail, when it returns true, answers attempt (from 1) of turn step
	// with the reply instead
	fail func(step, attempt int) (fakeserver.Reply, bool)
	want trajectory.Status
}

func failAt(step int, r fakeserver.Reply, attempts int) func(int, int) (fakeserver.Reply, bool) {
	return func(s, a int) (fakeserver.Reply, bool) {
		return r, s == step && (attempts < 0 || a <= attempts)
	}
}

// fakeEndpoint serves episodes of a plan from the fake server: each
// episode is recognised by its seed and follows its rollout's behaviour.
type fakeEndpoint struct {
	t         *testing.T
	behaviour []behaviour
	bySeed    map[int64]engine.Planned
	script    map[string][]fakeserver.Call
	answer    map[string]string

	mu       sync.Mutex
	attempts map[[2]int64]int // (seed, step) -> attempts
}

func newFakeEndpoint(t *testing.T, cfg engine.Config, bs []behaviour) *fakeEndpoint {
	f := &fakeEndpoint{t: t, behaviour: bs, bySeed: map[int64]engine.Planned{}, script: map[string][]fakeserver.Call{},
		answer: map[string]string{}, attempts: map[[2]int64]int{}}
	for _, p := range engine.Plan(cfg, "run-test") {
		f.bySeed[p.Seed] = p
	}
	for _, s := range cfg.Scenarios {
		f.script[s.ID], f.answer[s.ID] = compliant(t, s)
	}
	return f
}

func (f *fakeEndpoint) attemptsOf(seed int64, step int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[[2]int64{seed, int64(step)}]
}

func (f *fakeEndpoint) handle(req *fakeserver.Request) fakeserver.Reply {
	if req.Seed == nil {
		return fakeserver.Error(http.StatusBadRequest, "test: no seed", "invalid_request_error", "")
	}
	p, ok := f.bySeed[*req.Seed]
	if !ok {
		return fakeserver.Error(http.StatusBadRequest, fmt.Sprintf("test: unknown seed %d", *req.Seed), "invalid_request_error", "")
	}
	b := f.behaviour[p.Rollout%len(f.behaviour)]
	step := 0
	for _, m := range req.Messages {
		if m.Role == trajectory.RoleAssistant {
			step++
		}
	}
	f.mu.Lock()
	key := [2]int64{*req.Seed, int64(step)}
	f.attempts[key]++
	attempt := f.attempts[key]
	f.mu.Unlock()
	if b.fail != nil {
		if r, ok := b.fail(step, attempt); ok {
			return r
		}
	}
	calls := f.script[p.Scenario.ID]
	if step < len(calls) {
		turn := []fakeserver.Call{calls[step]}
		if step == 0 && b.invalidFirst {
			turn = append([]fakeserver.Call{{Name: calls[0].Name, Arguments: `{"oops": `}}, turn...)
		}
		return fakeserver.ToolCalls(turn...).With(b.quirks)
	}
	return fakeserver.Text(f.answer[p.Scenario.ID])
}

func newClient(t *testing.T, srv *fakeserver.Server, mutate ...func(*openai.Config)) *openai.Client {
	t.Helper()
	cfg := openai.Config{BaseURL: srv.URL(), Model: "test-model", Timeout: 10 * time.Second, MaxRetries: 3,
		BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond, Concurrency: 4}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := openai.New(cfg)
	require.NoError(t, err)
	return c
}

var generatedID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

func TestOpenAIQuirksAndErrors(t *testing.T) {
	behaviours := []behaviour{
		{name: "plain", want: trajectory.StatusCompleted},
		{name: "arguments as objects", quirks: fakeserver.ObjectArguments, want: trajectory.StatusCompleted},
		{name: "missing ids", quirks: fakeserver.MissingIDs, want: trajectory.StatusCompleted},
		{name: "empty ids", quirks: fakeserver.EmptyIDs | fakeserver.MissingType, want: trajectory.StatusCompleted},
		{name: "null content, stop with tool calls", quirks: fakeserver.NullContent | fakeserver.StopWithToolCalls | fakeserver.MissingUsage, want: trajectory.StatusCompleted},
		{name: "invalid JSON arguments", invalidFirst: true, want: trajectory.StatusCompleted},
		{name: "context length (OpenAI)", fail: failAt(1, fakeserver.ContextLengthOpenAI(), -1), want: trajectory.StatusContextLength},
		{name: "context length (vLLM)", fail: failAt(0, fakeserver.ContextLengthVLLM(), -1), want: trajectory.StatusContextLength},
		{name: "429 with Retry-After", fail: failAt(1, fakeserver.RateLimited("0.01"), 2), want: trajectory.StatusCompleted},
		{name: "5xx then success", fail: func(s, a int) (fakeserver.Reply, bool) {
			return fakeserver.ServerError(500 + a*2), s == 1 && a <= 2 // 502, 504
		}, want: trajectory.StatusCompleted},
		{name: "5xx forever", fail: failAt(1, fakeserver.ServerError(503), -1), want: trajectory.StatusInfraError},
		{name: "connection reset once", fail: failAt(0, fakeserver.Reset(), 1), want: trajectory.StatusCompleted},
	}
	ss := builtin(t, "commerce-late-delivery-refund-001", "productivity-followup-draft-001")
	cfg := engine.Config{Scenarios: ss, PolicyName: "openai:test-model", Checkpoint: "ckpt", Rollouts: len(behaviours),
		Seed: 3, Concurrency: 4, Version: "test"}
	fe := newFakeEndpoint(t, cfg, behaviours)
	srv := fakeserver.Start(t, fakeserver.Options{Handler: fe.handle})
	cfg.Policy = newClient(t, srv)

	dir := t.TempDir()
	sum, err := engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
	require.NoError(t, err)
	assert.Empty(t, srv.Violations(), "the client broke the protocol")

	n := len(ss)
	assert.Equal(t, n*len(behaviours), sum.Planned)
	assert.Equal(t, n*len(behaviours), sum.Ran, "every episode ends accounted for")
	assert.Equal(t, n, sum.InfraErrors)
	assert.Equal(t, map[string]int{"completed": n * 9, "context_length": n * 2, "infra_error": n}, sum.Statuses)

	recs := trajectories(t, dir)
	errs := readJSONL(t, filepath.Join(dir, "errors", store.ShardFile("0/1")))
	assert.Len(t, recs, n*(len(behaviours)-1))
	assert.Len(t, errs, n)
	for _, r := range errs {
		_, inTraj := recs[r.TrajID]
		assert.False(t, inTraj, "an infra error is not a trajectory")
		recs[r.TrajID] = r
	}

	plan := map[string]engine.Planned{}
	for _, p := range engine.Plan(cfg, "run-test") {
		plan[p.TrajID] = p
	}
	require.Equal(t, keys(plan), keys(recs))
	for id, r := range recs {
		p := plan[id]
		b := behaviours[p.Rollout]
		t.Run(p.Scenario.ID+"/"+b.name, func(t *testing.T) {
			assert.Equal(t, b.want, r.Status, "error: %s", r.Error)
			assert.Equal(t, "openai:test-model", r.Policy)
			assert.Equal(t, p.Scenario.ID, r.ScenarioID)
			assert.Equal(t, p.Seed, r.Seed)
			assertAnswered(t, r.Messages)
			if b.want == trajectory.StatusCompleted {
				assert.True(t, r.Success, "judge: %+v", r.Judge)
				assert.False(t, r.Drift)
				assert.Empty(t, r.Error)
			} else {
				assert.False(t, r.Success)
				assert.NotEmpty(t, r.Error)
			}
			var ids []string
			for _, m := range r.Messages {
				for _, tc := range m.ToolCalls {
					ids = append(ids, tc.ID)
					assert.Equal(t, "function", tc.Type)
					if b.invalidFirst && len(ids) == 1 {
						assert.NotEmpty(t, tc.Function.ArgsError)
						assert.Empty(t, tc.Function.Parsed)
					} else {
						assert.Empty(t, tc.Function.ArgsError)
						assert.True(t, json.Valid(tc.Function.Parsed), "parsed arguments of %s", tc.Function.Name)
					}
				}
			}
			seen := map[string]bool{}
			for _, id := range ids {
				// Ids are the client's own, unique in the episode.
				assert.Regexp(t, generatedID, id, "client ids are 9 alphanumerics")
				assert.False(t, seen[id], "id %s used twice", id)
				seen[id] = true
			}
			switch b.name {
			case "invalid JSON arguments":
				require.GreaterOrEqual(t, len(r.Messages), 5)
				assert.Len(t, r.Messages[2].ToolCalls, 2)
				assert.Contains(t, r.Messages[3].Content, "invalid arguments for")
				assert.Equal(t, "invalid_args", r.Steps[0].Calls[0].Outcome)
				assert.Equal(t, "matched", r.Steps[0].Calls[1].Outcome)
				assert.Len(t, r.Steps, len(compliantCalls(p.Scenario))+1, "the episode went on")
			case "5xx forever":
				assert.Contains(t, r.Error, "HTTP 503")
				assert.Equal(t, 4, fe.attemptsOf(p.Seed, 1), "1 attempt + 3 retries")
				assert.Equal(t, trajectory.Judgement{}, r.Judge)
			case "429 with Retry-After", "5xx then success":
				assert.Equal(t, 3, fe.attemptsOf(p.Seed, 1))
			case "connection reset once":
				assert.Equal(t, 2, fe.attemptsOf(p.Seed, 0))
			case "context length (OpenAI)":
				assert.Contains(t, r.Error, "maximum context length")
				assert.Len(t, r.Steps, 1)
			}
			if b.fail == nil {
				assert.Equal(t, 1, fe.attemptsOf(p.Seed, 0), "no retry without a failure")
			}
		})
	}

	// A rerun against a healthy server retries the infrastructure errors,
	// and only them.
	healthy := newFakeEndpoint(t, cfg, []behaviour{{name: "plain"}})
	srv2 := fakeserver.Start(t, fakeserver.Options{Handler: healthy.handle})
	cfg.Policy = newClient(t, srv2)
	run := openRun(t, dir, cfg)
	assert.Equal(t, n*(len(behaviours)-1), run.DoneCount())
	sum, err = engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)
	assert.Empty(t, srv2.Violations())
	assert.Equal(t, n, sum.Ran)
	assert.Equal(t, n*(len(behaviours)-1), sum.Skipped)
	assert.Equal(t, map[string]int{"completed": n}, sum.Statuses)

	final := trajectories(t, dir)
	assert.Equal(t, planIDs(cfg), keys(final), "final trajectories are the plan, without duplicates")
	for _, r := range errs {
		assert.Equal(t, trajectory.StatusCompleted, final[r.TrajID].Status)
		assert.True(t, final[r.TrajID].Success)
	}
	assert.Len(t, readJSONL(t, filepath.Join(dir, "errors", store.ShardFile("0/1"))), n, "the error log is kept for diagnosis")
}

func TestOpenAITimeouts(t *testing.T) {
	behaviours := []behaviour{
		{name: "hangs once", fail: failAt(0, fakeserver.Hang(), 1), want: trajectory.StatusCompleted},
		{name: "hangs forever", fail: failAt(1, fakeserver.Hang(), -1), want: trajectory.StatusInfraError},
	}
	ss := builtin(t, "productivity-followup-draft-001")
	cfg := engine.Config{Scenarios: ss, PolicyName: "openai:test-model", Rollouts: 2, Seed: 1, Concurrency: 2}
	fe := newFakeEndpoint(t, cfg, behaviours)
	srv := fakeserver.Start(t, fakeserver.Options{Handler: fe.handle})
	cfg.Policy = newClient(t, srv, func(c *openai.Config) { c.Timeout = 250 * time.Millisecond; c.MaxRetries = 1 })

	dir := t.TempDir()
	sum, err := engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
	require.NoError(t, err)
	assert.Empty(t, srv.Violations())
	assert.Equal(t, map[string]int{"completed": 1, "infra_error": 1}, sum.Statuses)
	plan := engine.Plan(cfg, "run-test")
	assert.Equal(t, 2, fe.attemptsOf(plan[0].Seed, 0))
	assert.Equal(t, 2, fe.attemptsOf(plan[1].Seed, 1))

	recs := trajectories(t, dir)
	require.Len(t, recs, 1)
	assert.Equal(t, trajectory.StatusCompleted, recs[plan[0].TrajID].Status)
	errs := readJSONL(t, filepath.Join(dir, "errors", store.ShardFile("0/1")))
	require.Len(t, errs, 1)
	assert.Equal(t, plan[1].TrajID, errs[0].TrajID)
	assert.Equal(t, trajectory.StatusInfraError, errs[0].Status)
	assert.Contains(t, errs[0].Error, "timed out")
}

func TestOpenAIFatalErrorsStopTheRun(t *testing.T) {
	cases := []struct {
		name     string
		reply    fakeserver.Reply
		apiKey   string // the server's key; the client presents "sk-wrong-key"
		wantText string
		wantDone int // records on disk
	}{
		{name: "401", reply: fakeserver.Unauthorized(), wantText: "authentication failed", wantDone: 2},
		{name: "insufficient quota", reply: fakeserver.InsufficientQuota(), wantText: "quota exhausted", wantDone: 2},
		{name: "wrong API key", apiKey: "sk-right-key", wantText: "authentication failed", wantDone: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Rollout 2 of 4 hits the failure; one episode at a time.
			bs := []behaviour{{name: "ok"}, {name: "ok"}, {name: "fatal", fail: failAt(1, tc.reply, -1)}, {name: "ok"}}
			if tc.apiKey != "" {
				bs[2].fail = nil
			}
			ss := builtin(t, "productivity-followup-draft-001")
			cfg := engine.Config{Scenarios: ss, PolicyName: "openai:test-model", Rollouts: len(bs), Seed: 1, Concurrency: 1}
			fe := newFakeEndpoint(t, cfg, bs)
			srv := fakeserver.Start(t, fakeserver.Options{Handler: fe.handle, APIKey: tc.apiKey})
			cfg.Policy = newClient(t, srv, func(c *openai.Config) { c.APIKey = "sk-wrong-key"; c.Concurrency = 1 })

			dir := t.TempDir()
			sum, err := engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
			require.Error(t, err)
			assert.ErrorIs(t, err, policy.ErrFatal)
			assert.Contains(t, err.Error(), tc.wantText)
			assert.NotContains(t, err.Error(), "sk-wrong-key", "the key never reaches an error")
			assert.Empty(t, srv.Violations())
			assert.Equal(t, tc.wantDone, sum.Ran)
			assert.Len(t, trajectories(t, dir), tc.wantDone, "what finished before the failure is on disk")
			assert.Empty(t, readJSONL(t, filepath.Join(dir, "errors", store.ShardFile("0/1"))), "a fatal error is not an episode's error")
			if tc.apiKey == "" {
				assert.Equal(t, 1, fe.attemptsOf(fe.planSeed(2), 1), "fatal errors are not retried")
			}
			assert.Zero(t, fe.attemptsOf(fe.planSeed(3), 0), "no episode starts after a fatal error")

			// Fixed, the run resumes to its plan.
			healthy := newFakeEndpoint(t, cfg, []behaviour{{name: "ok"}})
			srv2 := fakeserver.Start(t, fakeserver.Options{Handler: healthy.handle})
			cfg.Policy = newClient(t, srv2)
			sum, err = engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
			require.NoError(t, err)
			assert.Equal(t, len(bs)-tc.wantDone, sum.Ran)
			assert.Equal(t, planIDs(cfg), keys(trajectories(t, dir)))
		})
	}
}

// planSeed is the seed of the rollout-th planned episode of the first scenario.
func (f *fakeEndpoint) planSeed(rollout int) int64 {
	for seed, p := range f.bySeed {
		if p.Rollout == rollout {
			return seed
		}
	}
	f.t.Fatalf("no rollout %d", rollout)
	return 0
}

// The engine's classification of policy errors, without HTTP: model and
// context-length errors are data, infrastructure errors go to errors/, a
// fatal error stops the run.
func TestRunRecordsErrorsByClass(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		wantStatus trajectory.Status // of every record
		wantTraj   int
		wantErrs   int
		wantFatal  bool
	}{
		{"model error is data", policy.ErrModel, trajectory.StatusModelError, 4, 0, false},
		{"context length is data", policy.ErrContextLength, trajectory.StatusContextLength, 4, 0, false},
		{"infra error is retried", policy.ErrInfra, trajectory.StatusInfraError, 0, 4, false},
		{"fatal stops the run", policy.ErrFatal, "", 0, 0, true},
	}
	ss := builtin(t)[:2]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol := policyFunc(func(ctx context.Context, req policy.Request) (policy.Response, error) {
				return policy.Response{}, fmt.Errorf("test: %w", tc.err)
			})
			cfg := engine.Config{Scenarios: ss, Policy: pol, PolicyName: "test", Rollouts: 2, Seed: 1, Concurrency: 2,
				Limits: agent.Limits{MaxSteps: 5}}
			dir := t.TempDir()
			sum, err := engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
			if tc.wantFatal {
				require.ErrorIs(t, err, policy.ErrFatal)
			} else {
				require.NoError(t, err)
				assert.Equal(t, map[string]int{string(tc.wantStatus): 4}, sum.Statuses)
			}
			recs := trajectories(t, dir)
			errs := readJSONL(t, filepath.Join(dir, "errors", store.ShardFile("0/1")))
			assert.Len(t, recs, tc.wantTraj)
			assert.Len(t, errs, tc.wantErrs)
			for _, r := range recs {
				assert.Equal(t, tc.wantStatus, r.Status)
				assert.Contains(t, r.Error, "test: ")
				assert.False(t, r.Success)
			}
			for _, r := range errs {
				assert.Equal(t, tc.wantStatus, r.Status)
			}
		})
	}
}

type policyFunc func(context.Context, policy.Request) (policy.Response, error)

func (f policyFunc) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	return f(ctx, req)
}
