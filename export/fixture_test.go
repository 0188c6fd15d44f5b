package export

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/dataset"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
)

// loadSuite is the built-in suite the fixture runs roll out; under the
// race detector a stratified part of it (four scenarios a domain): the
// writers race or not on any number of rows, and the plain pass runs all.
var loadSuite = sync.OnceValues(func() ([]*scenario.Scenario, error) {
	ss, err := suite.Load()
	if racetest.Enabled {
		ss = suite.PerDomain(ss, 4)
	}
	return ss, err
})

// simRun rolls the built-in suite out in-process with a simulated profile
// into a run folder and returns its path.
func simRun(tb testing.TB, dir, profile string, rollouts int, seed int64, concurrency int) string {
	tb.Helper()
	ss, err := loadSuite()
	require.NoError(tb, err)
	prof, err := sim.Lookup(profile)
	require.NoError(tb, err)
	pol := sim.New(prof, ss)
	cfg := engine.Config{Scenarios: ss, Policy: pol, PolicyName: pol.Name(), Checkpoint: "sim:" + profile, Rollouts: rollouts,
		Seed: seed, Shard: engine.Shard{I: 0, N: 1}, Concurrency: concurrency, Version: "test", Framework: engine.FrameworkNormal}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	run := fmt.Sprintf("run-%s-%d", profile, seed)
	man := store.Manifest{Version: "test", Run: run, Created: "2026-01-01T00:00:00Z", Plan: store.Plan{
		ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Policy: cfg.PolicyName,
		Checkpoint: cfg.Checkpoint, Framework: cfg.Framework, Rollouts: rollouts, Seed: seed, Shard: "0/1",
	}}
	r, err := store.Open(dir, man, false)
	require.NoError(tb, err)
	_, err = engine.Run(context.Background(), cfg, r)
	require.NoError(tb, err)
	return dir
}

func msg(s string) json.RawMessage { return json.RawMessage(s) }

// synthetic rows with the edge cases: empty lists, unicode, nested
// arguments, quotes and newlines in content, NaN-free floats.
func dpoRows(n int) []dataset.DPORow {
	var out []dataset.DPORow
	for i := 0; i < n; i++ {
		m := float64(i) / 3
		r := dataset.DPORow{
			Prompt: []json.RawMessage{msg(`{"role":"system","content":"Be careful."}`), msg(fmt.Sprintf(`{"role":"user","content":"Draft #%d — «café» \"quoted\"\nnext line"}`, i))},
			Chosen: []json.RawMessage{
				msg(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"id":"c%d","type":"function","function":{"name":"create_draft","arguments":{"to":"a@b.example","body":{"lines":["x",%d],"ok":true}}}}]}`, i, i)),
				msg(fmt.Sprintf(`{"role":"tool","content":"{\"status\":\"saved\"}","tool_call_id":"c%d","name":"create_draft"}`, i)),
				msg(`{"role":"assistant","content":"Saved."}`),
			},
			Rejected:         []json.RawMessage{msg(`{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"send_email","arguments":{}}}]}`)},
			Tools:            []json.RawMessage{msg(`{"type":"function","function":{"name":"create_draft","parameters":{"type":"object","properties":{}}}}`)},
			PairID:           fmt.Sprintf("p%04d", i),
			ScenarioID:       fmt.Sprintf("scenario-%d", i%5),
			Domain:           []string{"productivity", "finance"}[i%2],
			Split:            []string{"train", "validation", "test"}[i%3],
			PairType:         []string{"trajectory", "step"}[i%2],
			ChosenTrajID:     fmt.Sprintf("%016x", i),
			RejectedTrajID:   fmt.Sprintf("%016x", i+1000),
			ChosenCheckpoint: "sim:base", RejectedCheckpoint: "sim:sft",
			DivergenceStep: i % 7, ChosenReward: 1, RejectedReward: -0.5 * float64(i%3), RewardGap: 1 + 0.5*float64(i%3),
			SchemaVersion: dataset.SchemaVersion, Margin: &m,
		}
		if i%4 != 0 {
			r.DriftTypes = []string{"data", "scope"}[:1+i%2]
			r.ViolationKinds = []string{"purpose_limitation"}
			r.Provisions = []string{"EU-GDPR-5-1-b", "CN-PIPL-6"}[:i%2+1]
		}
		if i%6 == 0 {
			r.Tools = nil // an empty list, not a missing one
		}
		out = append(out, r)
	}
	return out
}

func rewardRows(n int) []dataset.RewardRow {
	var out []dataset.RewardRow
	for i := 0; i < n; i++ {
		r := dataset.RewardRow{
			Prompt:     []json.RawMessage{msg(`{"role":"user","content":"hi"}`)},
			Completion: []json.RawMessage{msg(`{"role":"assistant","content":"ok"}`)},
			Tools:      []json.RawMessage{},
			GroupID:    fmt.Sprintf("s%d|sim:base", i%4), Reward: float64(i%3) - 1, Advantage: float64(i%5)/2 - 1,
			TrajID: fmt.Sprintf("t%d", i), ScenarioID: fmt.Sprintf("s%d", i%4), Domain: "health", Split: "train",
			Checkpoint: "sim:base", Success: i%2 == 0, Drift: i%3 == 0, SchemaVersion: dataset.SchemaVersion,
		}
		for j := 0; j < i%4; j++ {
			r.ProcessRewards = append(r.ProcessRewards, -0.5*float64(j))
		}
		out = append(out, r)
	}
	return out
}
