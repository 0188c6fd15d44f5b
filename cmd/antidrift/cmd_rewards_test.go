package main

import (
	"bytes"
	"encoding/json"
	"github.com/antidrift/antidrift/rollout/dataset"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	assert.Equal(t, len(rows), res.Summary.Rows)
	perTraj := map[string]float64{}
	for _, r := range rows {
		rec := recs[r.TrajID]
		assert.Equal(t, rec.Success, r.Success)
		assert.Equal(t, rec.Drift, r.Drift)
		require.Len(t, r.ProcessRewards, 1, "one row per turn: its one process reward")
		perTraj[r.TrajID] += r.ProcessRewards[0]
		assertNoNull(t, "prompt", r.Prompt)
		assertNoNull(t, "completion", r.Completion)
	}
	require.Len(t, perTraj, len(recs), "every trajectory has rows")
	for _, r := range rows {
		assert.InDelta(t, r.Reward, perTraj[r.TrajID], 1e-9, "a trajectory's turns' process rewards sum to its reward")
	}
	checkGRPOGroups(t, recs, rows)
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

// TestGRPOAdvantagesOverKeptRows: with --max-tokens dropping some rows of
// a group, the advantages in the file are TRL's formula over the rollouts
// the file still holds (a rollout stays while one of its per-turn rows
// does), group by group, every row carrying its rollout's value, and the
// card says so.
func TestGRPOAdvantagesOverKeptRows(t *testing.T) {
	run := simRunDir(t, "sim:base", "8")
	type row struct {
		Group        string  `json:"group_id"`
		Traj         string  `json:"traj_id"`
		Reward       float64 `json:"reward"`
		Advantage    float64 `json:"advantage"`
		Prompt, Comp int64
	}
	read := func(dir string) []row {
		var out []row
		for _, r := range jsonlRows(t, filepath.Join(dir, "jsonl", "rewards.jsonl")) {
			var x row
			require.NoError(t, json.Unmarshal(r["group_id"], &x.Group))
			require.NoError(t, json.Unmarshal(r["traj_id"], &x.Traj))
			require.NoError(t, json.Unmarshal(r["reward"], &x.Reward))
			require.NoError(t, json.Unmarshal(r["advantage"], &x.Advantage))
			require.NoError(t, json.Unmarshal(r["prompt_tokens_est"], &x.Prompt))
			require.NoError(t, json.Unmarshal(r["completion_tokens_est"], &x.Comp))
			out = append(out, x)
		}
		return out
	}
	full := filepath.Join(t.TempDir(), "full")
	code, _, stderr := runScenarios(t, "rewards", run, "--out", full, "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	all := read(full)
	var totals []int64
	for _, r := range all {
		totals = append(totals, r.Prompt+r.Comp)
	}
	slices.Sort(totals)
	bound := totals[len(totals)*2/3]
	cut := filepath.Join(t.TempDir(), "cut")
	code, _, stderr = runScenarios(t, "rewards", run, "--out", cut, "--format", "jsonl", "--max-tokens", strconv.FormatInt(bound, 10))
	require.Equal(t, 0, code, stderr)
	kept := read(cut)
	require.NotEmpty(t, kept)
	require.Less(t, len(kept), len(all))

	groupsOf := func(rs []row) map[string][]row {
		g := map[string][]row{}
		for _, r := range rs {
			g[r.Group] = append(g[r.Group], r)
		}
		return g
	}
	before, after := groupsOf(all), groupsOf(kept)
	partial, changed := 0, 0
	for id, g := range after {
		if len(g) < len(before[id]) {
			partial++
		}
		// TRL: (R - mean) / (std + 1e-4), std with Bessel's correction,
		// over the group's distinct rollouts (a group of one: 0).
		rewards := map[string]float64{}
		for _, r := range g {
			rewards[r.Traj] = r.Reward
		}
		mean, ss := 0.0, 0.0
		for _, v := range rewards {
			mean += v
		}
		mean /= float64(len(rewards))
		for _, v := range rewards {
			ss += (v - mean) * (v - mean)
		}
		for i, r := range g {
			want := 0.0
			if len(rewards) > 1 {
				want = (r.Reward - mean) / (math.Sqrt(ss/float64(len(rewards)-1)) + 1e-4)
			}
			assert.InDelta(t, want, r.Advantage, 1e-9, "group %s row %d", id, i)
			for _, b := range before[id] {
				if b.Reward == r.Reward && math.Abs(b.Advantage-r.Advantage) > 1e-9 {
					changed++
					break
				}
			}
		}
	}
	t.Logf("bound %d tokens: %d of %d rows kept, %d of %d groups partly dropped, %d advantages recomputed", bound, len(kept), len(all), partial, len(after), changed)
	assert.Positive(t, partial, "the bound leaves some groups partly dropped")
	// A rollout stays while one of its turns does: advantages change only
	// in groups that lost a whole rollout (each checked against the
	// formula above either way).
	lost := 0
	for id, g := range after {
		kept := map[string]bool{}
		for _, r := range g {
			kept[r.Traj] = true
		}
		gone := map[string]bool{}
		for _, b := range before[id] {
			if !kept[b.Traj] {
				gone[b.Traj] = true
			}
		}
		lost += len(gone)
	}
	t.Logf("%d rollouts lost every row", lost)
	if lost > 0 {
		// Rollouts of one group share their first request, so their first
		// turns are dropped together or kept together: a group seldom
		// loses only some of its rollouts.
		assert.Positive(t, changed, "groups that lost a rollout get their advantages recomputed")
	}
	card, err := os.ReadFile(filepath.Join(cut, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "Advantages are computed over the rollouts of this file")
	assert.Contains(t, string(card), "rows dropped before the advantages were computed")
}
