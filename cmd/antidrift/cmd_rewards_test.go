package main

import (
	"bytes"
	"encoding/json"
	"github.com/antidrift/antidrift/rollout/dataset"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/store"
)

func TestRewardsCommand(t *testing.T) {
	dirs := pairRuns(t)
	recs := recordsByID(t, dirs...)
	out := t.TempDir()
	code, stdout, stderr := runScenarios(t, append(append([]string{"rewards"}, dirs...), "--out", out, "--scheme", "provision,risk,privilege", "--json")...)
	require.Equal(t, 0, code, stderr)
	var res struct {
		Summary rewards.Summary `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	for _, f := range []string{"data/rewards-train.parquet", "arrow/rewards-train.arrow", "jsonl/rewards.jsonl", "README.md", "manifest.json"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	rows := readJSONL[dataset.RewardRow](t, filepath.Join(out, "jsonl/rewards.jsonl"))
	require.Len(t, rows, len(recs))
	assert.Equal(t, len(recs), res.Summary.Rows)

	groups := map[string][]dataset.RewardRow{}
	for _, r := range rows {
		rec := recs[r.TrajID]
		assert.Equal(t, rec.Success, r.Success)
		assert.Equal(t, rec.Drift, r.Drift)
		assert.Equal(t, rewards.GroupID(rec.ScenarioID, rec.Checkpoint, rec.Framework), r.GroupID)
		sum := 0.0
		for _, p := range r.ProcessRewards {
			sum += p
		}
		assert.InDelta(t, r.Reward, sum, 1e-9)
		assertNoNull(t, "prompt", r.Prompt)
		assertNoNull(t, "completion", r.Completion)
		groups[r.GroupID] = append(groups[r.GroupID], r)
	}
	// advantages match the GRPO formula, recomputed here
	for id, g := range groups {
		require.Len(t, g, 6, id)
		mean := 0.0
		for _, r := range g {
			mean += r.Reward
		}
		mean /= float64(len(g))
		ss := 0.0
		for _, r := range g {
			ss += (r.Reward - mean) * (r.Reward - mean)
		}
		std := math.Sqrt(ss / float64(len(g)-1))
		for _, r := range g {
			assert.InDelta(t, (r.Reward-mean)/(std+1e-4), r.Advantage, 1e-9, id)
		}
	}

	// Same inputs → byte-identical files.
	out2 := t.TempDir()
	code, _, stderr = runScenarios(t, append(append([]string{"rewards"}, dirs[1], dirs[0]), "--out", out2, "--scheme", "provision,risk,privilege")...)
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"data/rewards-train.parquet", "arrow/rewards-train.arrow", "jsonl/rewards.jsonl"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		assert.True(t, bytes.Equal(a, b), f)
	}
}

func TestRewardsCommandScenarios(t *testing.T) {
	dirs := pairRuns(t)
	// A run whose manifest says it used other scenarios than the built-in
	// suite now has: refused for risk and privilege, fine otherwise.
	moved := t.TempDir()
	require.NoError(t, os.CopyFS(moved, os.DirFS(dirs[0])))
	m, err := store.ReadManifest(moved)
	require.NoError(t, err)
	m.Plan.ScenarioHash = "0000000000000000000000000000000000000000000000000000000000000000"
	require.NoError(t, store.WriteManifest(moved, m))

	code, _, stderr := runScenarios(t, "rewards", moved, "--out", t.TempDir(), "--scheme", "risk")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "differ from those the run used")
	code, _, stderr = runScenarios(t, "rewards", moved, "--out", t.TempDir(), "--scheme", "uniform,provision", "--format", "jsonl")
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, "rewards", moved, "--out", t.TempDir(), "--scheme", "privilege", "--scenarios", "/nonexistent")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "/nonexistent")

	// Weights from a flat JSON object change the provision rewards.
	w := filepath.Join(t.TempDir(), "w.json")
	require.NoError(t, os.WriteFile(w, []byte(`{"GDPR-5-1-c": 10}`), 0o644))
	a, b := t.TempDir(), t.TempDir()
	code, _, stderr = runScenarios(t, "rewards", dirs[0], "--out", a, "--scheme", "provision", "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, "rewards", dirs[0], "--out", b, "--scheme", "provision", "--format", "jsonl", "--provisions", w)
	require.Equal(t, 0, code, stderr)
	ra := readJSONL[dataset.RewardRow](t, filepath.Join(a, "jsonl/rewards.jsonl"))
	rb := readJSONL[dataset.RewardRow](t, filepath.Join(b, "jsonl/rewards.jsonl"))
	require.Equal(t, len(ra), len(rb))
	lower := 0
	for i := range ra {
		assert.LessOrEqual(t, rb[i].Reward, ra[i].Reward)
		if rb[i].Reward < ra[i].Reward {
			lower++
		}
	}
	assert.Positive(t, lower, "some drift cites GDPR-5-1-c")
}

func TestRewardsCommandBadInput(t *testing.T) {
	dirs := pairRuns(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no run", []string{"rewards"}, "requires at least 1 arg"},
		{"not a run folder", []string{"rewards", t.TempDir()}, "is not a run folder"},
		{"bad scheme", []string{"rewards", dirs[0], "--scheme", "risk,legal"}, "unknown reward scheme"},
		{"bad weights", []string{"rewards", dirs[0], "--provisions", writeTemp(t, `{"GDPR-5-1-c": -1}`)}, "non-negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := runScenarios(t, append(tc.args, "--out", out)...)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, tc.want)
			assert.NoDirExists(t, out)
		})
	}
}

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}
