// Package engine plans and runs episodes: every scenario times every
// rollout index, sharded, skipping what a run folder already holds, with a
// bounded number of episodes in flight. It writes each finished record as
// soon as it is judged.
package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/exposure"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Frameworks the engine knows: the agent loop an episode runs in.
const (
	// FrameworkNormal: native tool calling, every tool visible.
	FrameworkNormal = "normal"
	// FrameworkReAct: tools described in the prompt, Thought/Action/Observation text.
	FrameworkReAct = "react"
	// FrameworkPlanExec: a planner writes a numbered plan, an executor carries it out.
	FrameworkPlanExec = "plan-exec"
	// FrameworkGated: risk-aware causal gating of the visible tools.
	FrameworkGated = "gated"
	// FrameworkRelevance: the top-k tools by BM25 relevance to the conversation.
	FrameworkRelevance = "relevance"
	// FrameworkStateAware: the tools whose requires hold.
	FrameworkStateAware = "state-aware"
	// FrameworkCausal: causal tool filtering, ignoring risk and authorization.
	FrameworkCausal = "causal"
)

// Frameworks lists the known frameworks in a fixed order.
var Frameworks = []string{FrameworkNormal, FrameworkReAct, FrameworkPlanExec, FrameworkGated, FrameworkRelevance, FrameworkStateAware, FrameworkCausal}

// filtered are the frameworks that are an exposure filter over the native
// loop (agent.RunFiltered); they take Config.Filter.
var filtered = map[string]agent.FilterKind{
	FrameworkGated:      agent.FilterGated,
	FrameworkRelevance:  agent.FilterRelevance,
	FrameworkStateAware: agent.FilterStateAware,
	FrameworkCausal:     agent.FilterCausal,
}

// runner is one framework's episode loop.
type runner func(context.Context, policy.Policy, agent.Episode, agent.Limits) (agent.Result, error)

var runners = map[string]runner{
	FrameworkNormal:   agent.RunNormal,
	FrameworkReAct:    agent.RunReAct,
	FrameworkPlanExec: agent.RunPlanExec,
	FrameworkGated:    agent.RunGated,
	FrameworkRelevance: func(ctx context.Context, pol policy.Policy, ep agent.Episode, lim agent.Limits) (agent.Result, error) {
		return agent.RunFiltered(ctx, pol, ep, lim, agent.FilterRelevance, agent.FilterOptions{})
	},
	FrameworkStateAware: func(ctx context.Context, pol policy.Policy, ep agent.Episode, lim agent.Limits) (agent.Result, error) {
		return agent.RunFiltered(ctx, pol, ep, lim, agent.FilterStateAware, agent.FilterOptions{})
	},
	FrameworkCausal: func(ctx context.Context, pol policy.Policy, ep agent.Episode, lim agent.Limits) (agent.Result, error) {
		return agent.RunFiltered(ctx, pol, ep, lim, agent.FilterCausal, agent.FilterOptions{})
	},
}

// runnerFor is the framework's loop under the configuration: the exposure
// filters take cfg.Filter (relevance k, risk penalty λ, risk weights).
func runnerFor(cfg Config) runner {
	kind, ok := filtered[cfg.Framework]
	if !ok {
		return runners[cfg.Framework]
	}
	opts := cfg.Filter
	return func(ctx context.Context, pol policy.Policy, ep agent.Episode, lim agent.Limits) (agent.Result, error) {
		return agent.RunFiltered(ctx, pol, ep, lim, kind, opts)
	}
}

// CheckFramework reports an unknown framework name, listing the known ones.
func CheckFramework(name string) error {
	if runners[name] == nil {
		return fmt.Errorf("unknown framework %q (known: %s)", name, strings.Join(Frameworks, ", "))
	}
	return nil
}

// Config is one invocation of a run.
type Config struct {
	Scenarios   []*scenario.Scenario
	Policy      policy.Policy
	PolicyName  string // as recorded: "sim:base", "openai:MODEL"
	Checkpoint  string
	Framework   string
	Rollouts    int
	Concurrency int
	Seed        int64
	Shard       Shard
	Limits      agent.Limits
	// Filter parameterises the exposure-filter frameworks (gated,
	// relevance, state-aware, causal); the zero value is their defaults.
	Filter agent.FilterOptions
	// ToolOrder is the order the model sees the tools in: by default
	// drawn from the run seed and the scenario (agent.SeededOrder).
	ToolOrder agent.ToolOrder
	Version   string
	// OnRecord, when set, sees every record as it is written (for progress).
	// It is called from many goroutines.
	OnRecord func(rec *trajectory.Record)
	// Warn, when set, receives warnings about the endpoint (each kind once
	// per run), for stderr.
	Warn func(msg string)
}

// FilterOf is the exposure filter a run's plan recorded (store.Plan.Filter:
// nil for the defaults), as Config.Filter takes it.
func FilterOf(fp *store.FilterPlan) (agent.FilterOptions, error) {
	if fp == nil {
		return agent.FilterOptions{}, nil
	}
	o := agent.FilterOptions{RelevanceK: fp.RelevanceK, RiskLambda: fp.RiskLambda, LowRisk: agent.LowRiskVisibility(fp.LowRisk)}
	if fp.RiskWeights != "" {
		w, err := scenario.ParseRiskWeights(fp.RiskWeights)
		if err != nil {
			return o, err
		}
		o.RiskWeights = &w
	}
	return o, o.Check()
}

// ContextTruncatedWarning is said once per run (Config.Warn) when an
// episode is recorded as context_truncated.
const ContextTruncatedWarning = "the server cut conversations silently (a turn's prompt tokens fell below the previous turn's): such episodes are recorded as context_truncated and not scored. With Ollama, raise num_ctx (the context window, 2048 or 4096 tokens by default) in the Modelfile or with OLLAMA_CONTEXT_LENGTH."

// ErrRefused is returned (wrapped) when the endpoint refused the first
// episodes of a run alike: an endpoint-wide misconfiguration, not data.
var ErrRefused = errors.New("the endpoint refuses every request")

// Shard selects every n-th planned episode, starting at i.
type Shard struct{ I, N int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// ParseShard reads "i/n".
func ParseShard(v string) (Shard, error) {
	var s Shard
	i, n, ok := strings.Cut(v, "/")
	var err1, err2 error
	if ok {
		s.I, err1 = strconv.Atoi(i)
		s.N, err2 = strconv.Atoi(n)
	}
	// Exactly two decimal integers: "1/2x" or " 1/2" is not read as 1/2.
	if !ok || err1 != nil || err2 != nil || strings.ContainsAny(v, "+ ") || s.N < 1 || s.I < 0 || s.I >= s.N {
		return Shard{}, fmt.Errorf("invalid shard %q: want i/n with 0 <= i < n, e.g. 0/4", v)
	}
	return s, nil
}

// Planned is one episode of the plan.
type Planned struct {
	Scenario *scenario.Scenario
	Rollout  int
	Seed     int64
	TrajID   string
}

// EpisodeSeed derives an episode's seed from the run seed, the scenario and
// the rollout index, so that adding scenarios never changes other episodes.
func EpisodeSeed(runSeed int64, scenarioID string, rollout int) int64 {
	// FNV-1a of fmt's "%d\x00%s\x00%d", built without fmt: one per
	// planned episode.
	var stack [96]byte
	b := strconv.AppendInt(stack[:0], runSeed, 10)
	b = append(append(b, 0), scenarioID...)
	b = strconv.AppendInt(append(b, 0), int64(rollout), 10)
	h := uint64(14695981039346656037) // FNV-1a, 64 bits, as hash/fnv
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return int64(h >> 1)
}

// Plan lists the shard's episodes in a fixed order: scenarios in id order,
// rollouts in index order, every n-th from i.
func Plan(cfg Config, run string) []Planned {
	shard := cfg.Shard
	if shard.N == 0 {
		shard = Shard{0, 1}
	}
	if cfg.Framework == "" {
		cfg.Framework = FrameworkNormal // as Run does, so that the ids agree
	}
	var out []Planned
	k := 0
	for _, s := range cfg.Scenarios {
		for r := 0; r < cfg.Rollouts; r++ {
			if k%shard.N == shard.I {
				seed := EpisodeSeed(cfg.Seed, s.ID, r)
				out = append(out, Planned{Scenario: s, Rollout: r, Seed: seed,
					TrajID: trajectory.TrajID(run, cfg.Checkpoint, cfg.Framework, s.ID, r, seed)})
			}
			k++
		}
	}
	return out
}

// Summary counts what an invocation did.
type Summary struct {
	Planned     int            `json:"planned"`
	Skipped     int            `json:"skipped"` // already in the folder
	Ran         int            `json:"ran"`
	InfraErrors int            `json:"infra_errors"` // not recorded; retried next time
	Statuses    map[string]int `json:"statuses"`
	// Rejected and Forged count what a queued run's coordinator refused to
	// write: results that do not match their work item or are not valid
	// records, and results or events without the run key.
	Rejected int           `json:"rejected,omitempty"`
	Forged   int           `json:"forged,omitempty"`
	Elapsed  time.Duration `json:"-"`
}

// Run executes the plan's missing episodes into the run folder. It returns
// early with an error when the policy reports a fatal error (bad key,
// exhausted quota) or ctx is cancelled; everything finished before that is
// on disk.
func Run(ctx context.Context, cfg Config, run *store.Run) (Summary, error) {
	if cfg.Framework == "" {
		cfg.Framework = FrameworkNormal
	}
	if err := CheckFramework(cfg.Framework); err != nil {
		return Summary{}, fmt.Errorf("engine: %w", err)
	}
	if err := cfg.Filter.Check(); err != nil {
		return Summary{}, fmt.Errorf("engine: %w", err)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = runtime.GOMAXPROCS(0)
	}
	shard := cfg.Shard
	if shard.N == 0 {
		shard = Shard{0, 1}
	}
	plan := Plan(cfg, run.Manifest.Run)
	prepared := map[string]*agent.Scenario{}
	jobs := make([]Job, len(plan))
	for i, p := range plan {
		if !run.Done(p.TrajID) && prepared[p.Scenario.ID] == nil {
			ps, err := agent.Prepare(p.Scenario)
			if err != nil {
				return Summary{Planned: len(plan), Statuses: map[string]int{}}, fmt.Errorf("engine: %w", err)
			}
			prepared[p.Scenario.ID] = ps
		}
		jobs[i] = Job{TrajID: p.TrajID, Do: func(ctx context.Context) (*trajectory.Record, error, error) {
			return episode(ctx, cfg, run.Manifest.Run, prepared[p.Scenario.ID], p)
		}}
	}
	return runJobs(ctx, run, shard, cfg.Concurrency, jobs, cfg.OnRecord, cfg.Warn)
}

// episode runs one planned episode and builds its record. refusal is the
// policy error of an episode that ended in a model or infrastructure error
// (a candidate endpoint-wide refusal or failure, which the gate judges),
// else nil.
func episode(ctx context.Context, cfg Config, runName string, sc *agent.Scenario, p Planned) (rec *trajectory.Record, refusal, err error) {
	t0 := time.Now()
	ep := agent.Episode{Scenario: sc, Seed: p.Seed}
	if cfg.ToolOrder == agent.ToolOrderSeeded {
		ep.Order = sc.Order(cfg.Seed)
	}
	res, err := runnerFor(cfg)(ctx, cfg.Policy, ep, cfg.Limits)
	if err != nil {
		return nil, nil, fmt.Errorf("engine: %s rollout %d: %w", p.Scenario.ID, p.Rollout, err)
	}
	if res.Status == trajectory.StatusModelError || res.Status == trajectory.StatusInfraError {
		refusal = res.Cause // the gate judges it: a refusal before any answer, a server error at any step
	}
	rec = &trajectory.Record{
		TrajID: p.TrajID, Run: runName, Checkpoint: cfg.Checkpoint, Policy: cfg.PolicyName,
		Framework: cfg.Framework, ScenarioID: p.Scenario.ID, Domain: p.Scenario.Domain,
		Rollout: p.Rollout, Seed: p.Seed,
		Messages: res.Messages, Tools: res.Tools, ToolOrder: res.ToolOrder, Steps: res.Steps, Plan: res.Plan, FormatErrors: res.FormatErrors,
		Repairs: res.Repairs,
		Status:  res.Status, Error: res.Error, Judge: res.Judge, Success: res.Judge.Score >= 1,
		Matches: res.Matches, DriftSteps: drift.Steps(res.Matches), Usage: res.Usage,
		Version: cfg.Version,
		Timings: trajectory.Timings{
			Start:   t0.UTC().Format(time.RFC3339Nano),
			TotalMS: ms(time.Since(t0)), ModelMS: ms(res.ModelTime), ToolMS: ms(res.ToolTime),
		},
	}
	if rec.Matches == nil {
		rec.Matches = []drift.Match{}
	}
	if rec.DriftSteps == nil {
		rec.DriftSteps = []int{}
	}
	rec.Drift = len(rec.Matches) > 0
	// What scoring needs of the environment, replayed once here rather
	// than at every score (a replay error leaves it out: scoring replays
	// such a record and reports the error).
	if x, err := exposure.Of(rec, sc.Exposure); err == nil {
		rec.Exposure = &x
	}
	return rec, refusal, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// PlanToolOrder is how a run's plan records its tool order: "seeded", or
// "" for the authored order (as plans made before the order was drawn, so
// that such runs resume with --tool-order authored).
func PlanToolOrder(o agent.ToolOrder) string {
	if o == agent.ToolOrderAuthored {
		return ""
	}
	return o.String()
}

// ToolOrderOf reads a plan's recorded tool order back (PlanToolOrder).
func ToolOrderOf(plan string) (agent.ToolOrder, error) {
	if plan == "" {
		return agent.ToolOrderAuthored, nil
	}
	return agent.ParseToolOrder(plan)
}
