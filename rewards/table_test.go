package rewards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/dataset"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func writeRun(t *testing.T, dir string, recs ...*trajectory.Record) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(dir, store.Manifest{Version: "test", Run: "run-t"}))
	var buf bytes.Buffer
	for _, r := range recs {
		if r.Status == "" {
			r.Status = trajectory.StatusCompleted // a finished episode, as every record states its status
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"), buf.Bytes(), 0o644))
	return dir
}

func table(t *testing.T, c rewards.Config, dirs ...string) ([]*dataset.RewardRow, *rewards.Summary) {
	t.Helper()
	return tableWith(t, c, rewards.TableOptions{Ratios: dataset.DefaultRatios, Seed: 1}, dirs...)
}

func tableWith(t *testing.T, c rewards.Config, opt rewards.TableOptions, dirs ...string) ([]*dataset.RewardRow, *rewards.Summary) {
	t.Helper()
	ix, err := dataset.OpenIndex(dirs...)
	require.NoError(t, err)
	defer ix.Close()
	var rows []*dataset.RewardRow
	sum, err := rewards.Table(ix, c, opt, func(r *dataset.RewardRow) error {
		rows = append(rows, r)
		return nil
	})
	require.NoError(t, err)
	return rows, sum
}

// withTools gives a record tools a and x, and step notes: at step 0 the
// tools visible0, at later turns every tool (a gate that opened).
func withTools(r *trajectory.Record, visible0 ...string) *trajectory.Record {
	r.Tools = []json.RawMessage{
		json.RawMessage(`{"type":"function","function":{"name":"a","parameters":{}}}`),
		json.RawMessage(`{"type":"function","function":{"name":"x","parameters":{}}}`)}
	first := true
	for k, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		v := []string{"a", "x"}
		if first {
			v, first = visible0, false
		}
		r.Steps = append(r.Steps, trajectory.Step{Turn: k, Visible: v})
	}
	return r
}

func TestTableHandComputed(t *testing.T) {
	dir := writeRun(t, t.TempDir(),
		withTools(rec("b1", "s1", "B", true, call{tool: "a"}), "a"),
		withTools(rec("a3", "s1", "A", false, call{tool: "x", drift: true}), "a"),
		withTools(rec("a1", "s1", "A", true, call{tool: "a"}), "a"),
		withTools(rec("a2", "s1", "A", true, call{tool: "a"}, call{tool: "x", drift: true}), "a"),
		withTools(rec("c1", "s0", "A", true, call{tool: "a"}), "a"),
		// the same messages, but x visible at step 0: another first request
		withTools(rec("a0", "s1", "A", false, call{tool: "a"}), "a", "x"),
	)
	layout := func(c dataset.Completion) rewards.TableOptions {
		return rewards.TableOptions{Ratios: dataset.DefaultRatios, Seed: 1, Render: dataset.RenderOptions{Completion: c}}
	}
	rows, sum := tableWith(t, cfg(rewards.Uniform), layout(dataset.CompletionModelTurns), dir)
	ids := map[string]string{}
	for _, r := range rows {
		ids[r.TrajID] = r.GroupID
	}
	// a1, a2, a3: one first request (later turns' tools differ from step 0
	// and do not matter); a0 saw x at step 0; b1 another checkpoint.
	assert.Equal(t, ids["a1"], ids["a2"])
	assert.Equal(t, ids["a1"], ids["a3"])
	assert.NotEqual(t, ids["a1"], ids["a0"])
	assert.NotEqual(t, ids["a1"], ids["b1"])
	assert.Regexp(t, `^s1@A#[0-9a-f]{12}$`, ids["a1"])
	assert.Equal(t, strings.TrimPrefix(ids["b1"], "s1@B"), strings.TrimPrefix(ids["a1"], "s1@A"), "the hash is over the first request alone")
	byID := map[string]*dataset.RewardRow{}
	for _, r := range rows {
		byID[r.TrajID] = r
	}
	// Group of a1, a2, a3: rewards 1, -0.5, -0.5: mean 0; sample std sqrt((1+0.25+0.25)/2) = sqrt(0.75).
	std := math.Sqrt(0.75) + 1e-4
	assert.InDelta(t, 1/std, byID["a1"].Advantage, 1e-12)
	assert.InDelta(t, -0.5/std, byID["a2"].Advantage, 1e-12)
	assert.InDelta(t, -0.5/std, byID["a3"].Advantage, 1e-12)
	for _, id := range []string{"a0", "b1", "c1"} {
		assert.Zero(t, byID[id].Advantage, "a one-member group has advantage 0")
	}
	assert.Equal(t, []float64{0, -0.5, 0}, byID["a2"].ProcessRewards)
	assert.Equal(t, 4, sum.Groups)
	assert.Equal(t, 3, sum.SingletonGroup)
	assert.Equal(t, 6, sum.Rows)
	assert.Equal(t, 1, sum.SplitPrompts, "s1 under A was sent two first requests")
	a2 := byID["a2"]
	assert.Equal(t, "s1", a2.ScenarioID)
	assert.Equal(t, "A", a2.Checkpoint)
	assert.True(t, a2.Success)
	assert.True(t, a2.Drift)
	assert.Len(t, a2.Prompt, 2)
	assert.Len(t, a2.Completion, 3, "model-turns: the model's turns only")
	for _, m := range a2.Completion {
		assert.Contains(t, string(m), `"role":"assistant"`)
	}
	rest, _ := tableWith(t, cfg(rewards.Uniform), layout(dataset.CompletionRest), dir)
	for _, r := range rest {
		if r.TrajID == "a2" {
			assert.Len(t, r.Completion, 5, "rest: tool results kept")
		}
	}
	assert.Equal(t, dataset.SchemaVersion, a2.SchemaVersion)

	// Per turn (the command's default): one row per assistant turn, the
	// prompt everything before it, tools as visible at that turn, the
	// turn's process reward; reward and advantage the trajectory's.
	turns, tsum := tableWith(t, cfg(rewards.Uniform), layout(dataset.CompletionTurn), dir)
	var a2turns []*dataset.RewardRow
	for _, r := range turns {
		if r.TrajID == "a2" {
			a2turns = append(a2turns, r)
		}
	}
	require.Len(t, a2turns, 3)
	for k, r := range a2turns {
		assert.Equal(t, int64(2+2*k), r.Turn)
		assert.Len(t, r.Prompt, 2+2*k, "the conversation before the turn, tool results included")
		require.Len(t, r.Completion, 1)
		assert.Contains(t, string(r.Completion[0]), `"role":"assistant"`)
		assert.Equal(t, []float64{[]float64{0, -0.5, 0}[k]}, r.ProcessRewards)
		assert.Equal(t, byID["a2"].Advantage, r.Advantage)
		assert.Equal(t, byID["a2"].GroupID, r.GroupID)
	}
	assert.Len(t, a2turns[0].Tools, 1, "step 0 showed a alone")
	assert.Len(t, a2turns[1].Tools, 2)
	assert.Equal(t, 4, tsum.Groups)
	assert.Equal(t, len(turns), tsum.Rows)
}

func simRun(dir, profile string, seed int64, concurrency int) error {
	ss, err := testSuite()
	if err != nil {
		return err
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
		Rollouts: 8, Seed: seed, Concurrency: concurrency, Version: "test", Limits: agent.Limits{MaxSteps: 20}}
	run, err := store.Open(dir, store.Manifest{Version: "test", Run: "run-" + profile, Plan: store.Plan{ScenarioSource: "builtin",
		ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Policy: name, Checkpoint: name, Framework: cfg.Framework, Rollouts: 8, Seed: seed, Shard: "0/1"}}, false)
	if err != nil {
		return err
	}
	_, err = engine.Run(context.Background(), cfg, run)
	return err
}

func noNull(t *testing.T, what string, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		t.Errorf("%s: null", what)
	case map[string]any:
		for k, e := range x {
			noNull(t, what+"."+k, e)
		}
	case []any:
		for i, e := range x {
			noNull(t, fmt.Sprintf("%s[%d]", what, i), e)
		}
	}
}

// simFamily rolls the built-in suite out with simulated profiles (simRun,
// one run folder each) and returns the suite, by id, and the folders.
// testSuite is the built-in suite the simulated runs roll out; under the
// race detector a stratified part of it (six scenarios a domain, 672 rows
// for two checkpoints: past the failures TestTableSameForAnyCoreCount
// injects at rows 333 and 500): the table's workers race or not on any
// number of rows, and the plain pass runs all.
func testSuite() ([]*scenario.Scenario, error) {
	ss, err := suite.Load()
	if racetest.Enabled {
		ss = suite.PerDomain(ss, 6)
	}
	if familyPerDomain > 0 {
		ss = suite.PerDomain(ss, familyPerDomain)
	}
	return ss, err
}

// familyPerDomain, when set, makes simFamily's runs a stratified part of
// the suite, that many scenarios a domain: for tests whose subject is the
// table's code paths (held, streamed, batched), not the suite.
var familyPerDomain int

// smallFamily sets familyPerDomain for the rest of the test.
func smallFamily(t *testing.T, n int) {
	prev := familyPerDomain
	familyPerDomain = n
	t.Cleanup(func() { familyPerDomain = prev })
}

func simFamily(t *testing.T, seed int64, profiles ...string) ([]*scenario.Scenario, map[string]*scenario.Scenario, []string) {
	t.Helper()
	ss, err := testSuite()
	require.NoError(t, err)
	byID := map[string]*scenario.Scenario{}
	for _, s := range ss {
		byID[s.ID] = s
	}
	root := t.TempDir()
	var dirs []string
	for _, p := range profiles {
		d := filepath.Join(root, p)
		require.NoError(t, simRun(d, p, seed, 8))
		dirs = append(dirs, d)
	}
	return ss, byID, dirs
}

func TestTableSimulatedFamily(t *testing.T) {
	ss, byID, dirs := simFamily(t, 1, "base", "dpo-2")
	c := rewards.Default()
	c.Schemes = rewards.AllSchemes
	c.Scenarios = byID
	rows, sum := table(t, c, dirs...)
	require.Len(t, rows, 2*len(ss)*8)
	assert.Equal(t, 2*len(ss), sum.Groups)

	groups := map[string][]*dataset.RewardRow{}
	splitOf := map[string]string{}
	for _, r := range rows {
		groups[r.GroupID] = append(groups[r.GroupID], r)
		assert.Regexp(t, "^"+regexp.QuoteMeta(r.ScenarioID+"@"+r.Checkpoint)+"#[0-9a-f]{12}$", r.GroupID)
		s := 0.0
		for _, p := range r.ProcessRewards {
			s += p
		}
		assert.InDelta(t, r.Reward, s, 1e-9, "process rewards of %s sum to its reward", r.TrajID)
		if r.Drift {
			assert.Less(t, r.Reward, 0.0)
		} else if r.Success {
			assert.Equal(t, 1.0, r.Reward)
		} else {
			assert.Equal(t, 0.0, r.Reward)
		}
		if sp, ok := splitOf[r.ScenarioID]; ok {
			assert.Equal(t, sp, r.Split)
		}
		splitOf[r.ScenarioID] = r.Split
		for i, m := range append(append([]json.RawMessage{}, r.Prompt...), r.Completion...) {
			var v map[string]any
			require.NoError(t, json.Unmarshal(m, &v))
			noNull(t, fmt.Sprintf("%s message %d", r.TrajID, i), v)
			if tcs, ok := v["tool_calls"]; ok {
				for _, tc := range tcs.([]any) {
					assert.IsType(t, map[string]any{}, tc.(map[string]any)["function"].(map[string]any)["arguments"])
				}
			}
		}
		assert.Equal(t, "user", func() any {
			var v map[string]any
			_ = json.Unmarshal(r.Prompt[len(r.Prompt)-1], &v)
			return v["role"]
		}())
	}
	// Advantages as TRL computes them, recomputed here from the rewards.
	for id, g := range groups {
		require.Len(t, g, 8, id)
		mean := 0.0
		for _, r := range g {
			mean += r.Reward
		}
		mean /= float64(len(g))
		v := 0.0
		for _, r := range g {
			v += (r.Reward - mean) * (r.Reward - mean)
		}
		std := math.Sqrt(v / float64(len(g)-1))
		for _, r := range g {
			assert.InDelta(t, (r.Reward-mean)/(std+1e-4), r.Advantage, 1e-9, id)
		}
	}

	// Same inputs, another file order (one episode at a time): identical rows.
	again := filepath.Join(t.TempDir(), "again")
	require.NoError(t, simRun(again, "base", 1, 1))
	a, _ := table(t, c, dirs[0])
	b, _ := table(t, c, again)
	assert.True(t, bytes.Equal(jsonl(t, a), jsonl(t, b)))
}

func jsonl(t *testing.T, rows []*dataset.RewardRow) []byte {
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}
