package pairs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// rec builds a record from a script: one tool call per assistant turn, a
// name starting with "!" drifting, then a final answer. Call ids carry the
// traj id, as real ids differ between episodes.
func rec(id, sid, ck string, success bool, calls ...string) *trajectory.Record {
	r := &trajectory.Record{
		TrajID: id, Run: "run-t", Checkpoint: ck, Policy: "test", Framework: "normal", ScenarioID: sid, Domain: "productivity",
		Messages: []trajectory.Message{
			{Role: "system", Content: "sys " + sid},
			{Role: "user", Content: "task " + sid},
		},
		Tools:   []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}`)},
		Status:  trajectory.StatusCompleted,
		Success: success,
	}
	for i, c := range calls {
		name := strings.TrimPrefix(c, "!")
		turn := len(r.Messages)
		cid := fmt.Sprintf("call_%s_%d", id, i)
		r.Messages = append(r.Messages,
			trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: cid, Type: "function",
				Function: trajectory.FunctionCall{Name: name, Arguments: `{"x":1}`, Parsed: json.RawMessage(`{"x":1}`)}}}},
			trajectory.Message{Role: "tool", Content: "ok " + name, ToolCallID: cid, Name: name})
		step := trajectory.Step{Turn: turn, Calls: []trajectory.CallNote{{Call: i, ID: cid, Tool: name, Outcome: "matched", Drift: c != name}}}
		r.Steps = append(r.Steps, step)
		if c != name {
			r.Drift = true
			r.DriftSteps = append(r.DriftSteps, i)
			r.Matches = append(r.Matches,
				drift.Match{Call: i, Turn: turn, Tool: name, Drift: scenario.DriftData, Kind: scenario.KindPurposeLimitation,
					Provisions: []string{"GDPR-5-1-b", "GDPR-5-1-c"}, Violation: 0, Annotated: true},
				drift.Match{Call: i, Turn: turn, Tool: name, Drift: scenario.DriftTool, Violation: -1})
		}
	}
	r.Steps = append(r.Steps, trajectory.Step{Turn: len(r.Messages)})
	r.Messages = append(r.Messages, trajectory.Message{Role: "assistant", Content: "done " + id})
	if r.DriftSteps == nil {
		r.DriftSteps = []int{}
	}
	return r
}

// writeRun writes records as a run folder (one file per slice of parts).
func writeRun(t *testing.T, dir string, parts ...[]*trajectory.Record) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(dir, store.Manifest{Version: "test", Run: "run-t", Plan: store.Plan{ScenarioSource: "test"}}))
	for i, recs := range parts {
		var buf bytes.Buffer
		for _, r := range recs {
			b, err := json.Marshal(r)
			require.NoError(t, err)
			buf.Write(b)
			buf.WriteByte('\n')
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", fmt.Sprintf("part-%d-of-%d.jsonl", i, len(parts))), buf.Bytes(), 0o644))
	}
	return dir
}

// build pairs run folders and returns the rows and statistics.
func build(t *testing.T, opt pairs.Options, dirs ...string) ([]*dataset.DPORow, *pairs.Stats) {
	t.Helper()
	ix, err := dataset.OpenIndex(dirs...)
	require.NoError(t, err)
	defer ix.Close()
	var rows []*dataset.DPORow
	st, err := pairs.Build(ix, opt, func(r *dataset.DPORow) error { rows = append(rows, r); return nil })
	require.NoError(t, err)
	return rows, st
}

// simRun rolls a simulated checkpoint out on the built-in suite into dir.
func simRun(dir, profile string, rollouts int, seed int64, concurrency int) error {
	ss, err := suite.Load()
	if err != nil {
		return err
	}
	if raceEnabled {
		ss = suite.PerDomain(ss, 8)
	}
	p, err := sim.Lookup(profile)
	if err != nil {
		return err
	}
	name := "sim:" + profile
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	cfg := engine.Config{Scenarios: ss, Policy: sim.New(p, ss), PolicyName: name, Checkpoint: name, Framework: engine.FrameworkNormal,
		Rollouts: rollouts, Seed: seed, Concurrency: concurrency, Version: "test", Limits: agent.Limits{MaxSteps: 20}}
	run, err := store.Open(dir, store.Manifest{Version: "test", Run: "run-" + profile, Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Policy: name,
			Checkpoint: name, Framework: cfg.Framework, Rollouts: rollouts, Seed: seed, Shard: "0/1", MaxSteps: 20}}, false)
	if err != nil {
		return err
	}
	sum, err := engine.Run(context.Background(), cfg, run)
	if err != nil {
		return err
	}
	if sum.Ran != len(ss)*rollouts {
		return fmt.Errorf("ran %d episodes, want %d", sum.Ran, len(ss)*rollouts)
	}
	return nil
}
