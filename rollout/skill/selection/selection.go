package selection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Framework is the framework name records of a task carry: select-skill,
// select-tools or select-pipeline.
func Framework(t skill.Task) string { return "select-" + string(t) }

// TaskOf reads a task back from a record's framework; ok is false for
// records that are not selection episodes.
func TaskOf(framework string) (skill.Task, bool) {
	for _, t := range skill.Tasks {
		if Framework(t) == framework {
			return t, true
		}
	}
	return "", false
}

// Config is one invocation of a selection run.
type Config struct {
	Library    *skill.Library
	Task       skill.Task
	Policy     policy.Policy
	PolicyName string
	Checkpoint string
	Rollouts   int
	// Limit keeps only the task's first Limit queries (0: all).
	Limit       int
	Concurrency int
	Seed        int64
	Shard       engine.Shard
	Temperature float64
	// OmitTemperature leaves temperature out of every request.
	OmitTemperature bool
	MaxTurnTokens   int
	Version         string
	// OnRecord, when set, sees every record as it is written; it is called
	// from many goroutines.
	OnRecord func(*trajectory.Record)
}

// Planned is one episode of the plan.
type Planned struct {
	Query   *skill.Query
	Rollout int
	Seed    int64
	TrajID  string
}

// Plan lists the shard's episodes: the task's queries in library order,
// rollouts in index order, every n-th from i. Seeds and ids derive as a
// rollout's do, so adding queries never changes other episodes.
func Plan(cfg Config, run string) []Planned {
	shard := cfg.Shard
	if shard.N == 0 {
		shard = engine.Shard{I: 0, N: 1}
	}
	var out []Planned
	k := 0
	for _, q := range Queries(cfg) {
		for r := 0; r < cfg.Rollouts; r++ {
			if k%shard.N == shard.I {
				seed := engine.EpisodeSeed(cfg.Seed, q.ID, r)
				out = append(out, Planned{Query: q, Rollout: r, Seed: seed,
					TrajID: trajectory.TrajID(run, cfg.Checkpoint, Framework(cfg.Task), q.ID, r, seed)})
			}
			k++
		}
	}
	return out
}

// Queries are the queries a run covers: the task's, up to Limit.
func Queries(cfg Config) []*skill.Query {
	qs := cfg.Library.QueriesOf(cfg.Task)
	if cfg.Limit > 0 && cfg.Limit < len(qs) {
		qs = qs[:cfg.Limit]
	}
	return qs
}

// Run executes the plan's missing episodes into the run folder.
func Run(ctx context.Context, cfg Config, run *store.Run) (engine.Summary, error) {
	if cfg.Library == nil || cfg.Policy == nil {
		return engine.Summary{}, errors.New("selection: library and policy are required")
	}
	if _, err := skill.ParseTask(string(cfg.Task)); err != nil {
		return engine.Summary{}, fmt.Errorf("selection: %w", err)
	}
	envs := &envCache{lib: cfg.Library, m: map[string]*mockEnv{}}
	plan := Plan(cfg, run.Manifest.Run)
	jobs := make([]engine.Job, len(plan))
	for i, p := range plan {
		jobs[i] = engine.Job{TrajID: p.TrajID, Do: func(ctx context.Context) (*trajectory.Record, error, error) {
			var refusal error
			rec, err := episode(ctx, cfg, run.Manifest.Run, envs, p, &refusal)
			return rec, refusal, err
		}}
	}
	return engine.RunJobs(ctx, run, cfg.Shard, cfg.Concurrency, jobs, cfg.OnRecord)
}

// episode runs one planned episode. *refusal is set to the endpoint's
// error when a model error ended the episode before any answer.
func episode(ctx context.Context, cfg Config, runName string, envs *envCache, p Planned, refusal *error) (*trajectory.Record, error) {
	t0 := time.Now()
	l, q := cfg.Library, p.Query
	rec := &trajectory.Record{
		TrajID: p.TrajID, Run: runName, Checkpoint: cfg.Checkpoint, Policy: cfg.PolicyName,
		Framework: Framework(cfg.Task), ScenarioID: q.ID, Domain: l.Domain, Rollout: p.Rollout, Seed: p.Seed,
		Messages: []trajectory.Message{}, Tools: []json.RawMessage{}, Steps: []trajectory.Step{},
		DriftSteps: []int{}, Matches: nil, Version: cfg.Version, Status: trajectory.StatusCompleted,
		Selection: &trajectory.Selection{Task: string(cfg.Task), Library: l.Name, Setting: string(q.Setting)},
		Judge:     trajectory.Judgement{Kind: "rule"},
	}
	var modelTime time.Duration
	ask := func(system, user string) (string, bool, error) {
		rec.Messages = append(rec.Messages,
			trajectory.Message{Role: trajectory.RoleSystem, Content: system},
			trajectory.Message{Role: trajectory.RoleUser, Content: user})
		req := policy.Request{Messages: rec.Messages[len(rec.Messages)-2:], Temperature: cfg.Temperature, OmitTemperature: cfg.OmitTemperature, Seed: p.Seed, MaxTokens: cfg.MaxTurnTokens}
		t := time.Now()
		resp, err := cfg.Policy.Complete(ctx, req)
		modelTime += time.Since(t)
		if err != nil {
			status, fatal := classify(err)
			if fatal {
				return "", false, fmt.Errorf("selection: %s rollout %d: %w", q.ID, p.Rollout, err)
			}
			rec.Status, rec.Error = status, err.Error()
			if status == trajectory.StatusModelError && len(rec.Steps) == 0 {
				*refusal = err
			}
			return "", false, nil
		}
		rec.Usage = rec.Usage.Add(resp.Usage)
		msg := resp.Message
		msg.Role = trajectory.RoleAssistant
		rec.Messages = append(rec.Messages, msg)
		rec.Steps = append(rec.Steps, trajectory.Step{Turn: len(rec.Messages) - 1, Visible: []string{}})
		return msg.Content, true, nil
	}

	given := q.Given()
	if cfg.Task == skill.TaskSkill || cfg.Task == skill.TaskPipeline {
		text, ok, err := ask(skill.SkillSystem, skill.SkillPrompt(l, q))
		if err != nil || !ok {
			return finish(rec, t0, modelTime), err
		}
		name, parse, why := skill.ParseSkillAnswer(l, text)
		st := &trajectory.SelectionStage{Turn: len(rec.Messages) - 1, Expected: []string{q.Skill},
			ExpectedPrivilege: int(l.Skill(q.Skill).Privilege), Chosen: []string{}, ChosenPrivilege: -1,
			Parse: parse, ParseError: why, Label: string(skill.LabelSkill(l, q, name, parse))}
		if s := l.Skill(name); s != nil {
			st.Chosen, st.ChosenPrivilege = []string{name}, int(s.Privilege)
		}
		rec.Selection.Skill = st
		rec.Success = st.Label == string(skill.ExactMatch)
		if cfg.Task == skill.TaskPipeline {
			if name == "" {
				// Nothing chosen: the pipeline stops before Task 2.
				f := false
				rec.Selection.EndToEnd = &f
				rec.Success = false
				return finish(rec, t0, modelTime), nil
			}
			given = name
		}
	}
	if cfg.Task == skill.TaskTools || cfg.Task == skill.TaskPipeline {
		text, ok, err := ask(skill.ToolsSystem, skill.ToolsPrompt(l, q, given))
		if err != nil || !ok {
			return finish(rec, t0, modelTime), err
		}
		calls, parse, why := skill.ParseToolsAnswer(text)
		set := skill.SetOf(calls)
		st := &trajectory.SelectionStage{Turn: len(rec.Messages) - 1, Given: given, Expected: q.Tools,
			ExpectedPrivilege: int(l.MaxPrivilege(q.Tools)), Chosen: set, ChosenPrivilege: int(l.MaxPrivilege(set)),
			Parse: parse, ParseError: why, Label: string(skill.LabelTools(l, q, calls, parse))}
		if st.Chosen == nil {
			st.Chosen = []string{}
		}
		for _, c := range calls {
			b, _ := json.Marshal(c.Args)
			st.Calls = append(st.Calls, trajectory.SelectionCall{Tool: c.Tool, Arguments: b})
		}
		rec.Selection.Tools = st
		if cfg.Task == skill.TaskTools {
			rec.Success = st.Label == string(skill.ExactMatch)
		} else {
			me, err := envs.get(q)
			if err != nil {
				return nil, err
			}
			me.execute(rec, calls)
			e2e := rec.Selection.Skill.Label == string(skill.ExactMatch) && st.Label == string(skill.ExactMatch) && rec.Success && !rec.Drift
			rec.Selection.EndToEnd = &e2e
		}
	}
	return finish(rec, t0, modelTime), nil
}

func finish(rec *trajectory.Record, t0 time.Time, model time.Duration) *trajectory.Record {
	if rec.Matches == nil {
		rec.Matches = []drift.Match{}
	}
	if sel := rec.Selection; sel.Task != string(skill.TaskPipeline) {
		// The standalone tasks execute nothing: success is an exact match.
		rec.Judge = trajectory.Judgement{Kind: "rule", Reason: "no usable answer"}
		for _, st := range []*trajectory.SelectionStage{sel.Skill, sel.Tools} {
			if st != nil {
				rec.Judge.Reason = st.Label
				if rec.Success {
					rec.Judge.Score = 1
				}
			}
		}
	}
	rec.Timings = trajectory.Timings{Start: t0.UTC().Format(time.RFC3339Nano), TotalMS: ms(time.Since(t0)), ModelMS: ms(model)}
	return rec
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// classify maps a policy error to a status, as the agent loop does; fatal
// errors stop the run.
func classify(err error) (trajectory.Status, bool) {
	switch {
	case errors.Is(err, policy.ErrFatal):
		return "", true
	case errors.Is(err, policy.ErrContextLength):
		return trajectory.StatusContextLength, false
	case errors.Is(err, policy.ErrModel):
		return trajectory.StatusModelError, false
	}
	return trajectory.StatusInfraError, false
}

// envCache builds each query's mock environment once.
type envCache struct {
	lib  *skill.Library
	mu   sync.Mutex
	m    map[string]*mockEnv
	exec *env.Spec
}

func (c *envCache) get(q *skill.Query) (*mockEnv, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if me := c.m[q.ID]; me != nil {
		return me, nil
	}
	if c.exec == nil {
		exec, err := libraryEnv(c.lib)
		if err != nil {
			return nil, err
		}
		c.exec = exec
	}
	me, err := newMockEnv(c.lib, q, c.exec)
	if err != nil {
		return nil, err
	}
	c.m[q.ID] = me
	return me, nil
}
