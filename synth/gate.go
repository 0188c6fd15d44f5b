package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/qc"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// gate rolls every probe out on s into dir/<probe> (resuming what is
// there) and applies the execution gate.
func (p *pipeline) gate(ctx context.Context, s *scenario.Scenario, dir string) (qc.Result, error) {
	ss := []*scenario.Scenario{s}
	var dirs []string
	for _, pr := range p.cfg.Probes {
		d := filepath.Join(dir, labels.NameFor(pr.Spec))
		if err := p.rollProbe(ctx, pr, ss, d); err != nil {
			return qc.Result{}, fmt.Errorf("qc probe %s: %w", pr.Spec, err)
		}
		dirs = append(dirs, d)
	}
	res, err := qc.Analyse(ss, dirs, p.cfg.MinDrifting)
	if err != nil {
		return qc.Result{}, err
	}
	return res[0], nil
}

func (p *pipeline) rollProbe(ctx context.Context, pr Probe, ss []*scenario.Scenario, dir string) error {
	pol, err := pr.New(ss)
	if err != nil {
		return err
	}
	plan := store.Plan{
		ScenarioSource: "synth", ScenarioHash: scenario.Hash(ss), ScenarioIDs: []string{ss[0].ID},
		Policy: pr.Spec, Checkpoint: pr.Spec, Framework: engine.FrameworkNormal, Rollouts: p.cfg.Rollouts,
		Seed: p.cfg.Seed, Shard: "0/1", MaxSteps: p.cfg.MaxSteps, ToolOrder: engine.PlanToolOrder(agent.ToolOrderSeeded),
	}
	if kind, model, ok := strings.Cut(pr.Spec, ":"); ok && kind == "openai" {
		plan.Model = model
	}
	pb, _ := json.Marshal(plan)
	man := store.Manifest{
		Version: p.cfg.Version, Run: "run-" + hashBytes(pb)[:8], Created: time.Now().UTC().Format(time.RFC3339), Plan: plan,
		Settings: store.Settings{Concurrency: p.cfg.Rollouts, Command: "antidrift synth"},
	}
	run, err := store.Open(dir, man, false)
	if err != nil {
		return err
	}
	defer run.Close()
	sum, err := engine.Run(ctx, engine.Config{
		Scenarios: ss, Policy: pol, PolicyName: pr.Spec, Checkpoint: pr.Spec, Framework: engine.FrameworkNormal,
		Rollouts: p.cfg.Rollouts, Concurrency: p.cfg.Rollouts, Seed: p.cfg.Seed, Shard: engine.Shard{I: 0, N: 1},
		Version: p.cfg.Version, Limits: agent.Limits{MaxSteps: p.cfg.MaxSteps},
	}, run)
	if err != nil {
		return err
	}
	if sum.InfraErrors > 0 {
		return fmt.Errorf("%d probe episodes hit infrastructure errors", sum.InfraErrors)
	}
	return nil
}

// qcTokens sums the tokens probe endpoints reported in a seed's rollouts
// (simulated probes report none).
func (p *pipeline) qcTokens(seedDir string) trajectory.Usage {
	var u trajectory.Usage
	dirs, _ := filepath.Glob(filepath.Join(seedDir, "round-*", "qc", "*"))
	if len(dirs) == 0 {
		return u
	}
	it := store.Records(dirs...)
	defer it.Close()
	for it.Next() {
		// Simulated probes cost nothing: their made-up usage is not a cost.
		if rec := it.At(); !strings.HasPrefix(rec.Policy, "sim:") {
			u = u.Add(rec.Usage)
		}
	}
	return u
}

// evidence is the gate's evidence as the critic reads it: per required
// call and per drift point, how many rollouts made or hit it, and each
// probe's share.
func evidence(s *scenario.Scenario, r qc.Result) string {
	type callEv struct {
		Call    string `json:"call"`
		Covered int    `json:"rollouts_making_it"`
	}
	type driftEv struct {
		Point string `json:"drift_point"`
		Hit   int    `json:"rollouts_hitting_it"`
	}
	out := struct {
		Episodes   int                    `json:"episodes"`
		Covered    int                    `json:"rollouts_covering_every_required_call"`
		Drifting   int                    `json:"rollouts_hitting_a_drift_point"`
		NeedDrift  string                 `json:"gate"`
		Required   []callEv               `json:"required_calls"`
		Violations []driftEv              `json:"drift_points"`
		Probes     map[string]qc.ProbeRes `json:"probes"`
		Statuses   map[string]int         `json:"episode_endings"`
	}{Episodes: r.Episodes, Covered: r.Covered, Drifting: r.Drifting, Probes: r.Probes, Statuses: r.Statuses,
		NeedDrift: "at least 1 rollout covers every required call; enough rollouts hit a drift point"}
	for j, c := range s.RequiredCalls {
		args, _ := json.Marshal(c.Args)
		out.Required = append(out.Required, callEv{Call: fmt.Sprintf("required_calls[%d] %s %s", j, c.Tool, args), Covered: r.RequiredCovered[j]})
	}
	for j, v := range s.Violations {
		args, _ := json.Marshal(v.Args)
		out.Violations = append(out.Violations, driftEv{Point: fmt.Sprintf("violations[%d] %s %s (%s drift, lure in %s)", j, v.Tool, args, v.Drift, v.TriggerIn), Hit: r.ViolationsHit[j]})
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b)
}
