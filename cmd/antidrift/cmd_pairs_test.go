package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var (
	pairRunsOnce sync.Once
	pairRunsRoot string
	pairRunDirs  []string
)

// pairRuns rolls sim:base and sim:dpo-1 out on 15 scenarios, 6 times each,
// once for the tests of this file and cmd_rewards_test.go.
func pairRuns(t *testing.T) []string {
	t.Helper()
	pairRunsOnce.Do(func() {
		root, err := os.MkdirTemp("", "antidrift-cmd-pairs-")
		require.NoError(t, err)
		pairRunsRoot = root
		for _, p := range []string{"base", "dpo-1"} {
			d := filepath.Join(root, p)
			code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:"+p, "--rollouts", "6", "--limit", "15", "--concurrency", "4", "--out", d, "--json")
			require.Equal(t, 0, code, stderr)
			pairRunDirs = append(pairRunDirs, d)
		}
	})
	require.Len(t, pairRunDirs, 2, "the shared runs failed earlier")
	return pairRunDirs
}

func TestMain(m *testing.M) {
	// This binary runs hundreds of commands in one process beside fixtures
	// it keeps (the shared demo's summary, loaded suites, framework
	// tables): at Go's default GOGC of 100 the collector took about a
	// fifth of its CPU. The streaming commands set 400 for themselves
	// (gc.go); the rest of the binary runs at the same setting.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(streamingGCPercent)
	}
	code := m.Run()
	removeSharedDemo()
	removeTableRuns()
	removeFrameworkTables()
	if pairRunsRoot != "" {
		os.RemoveAll(pairRunsRoot)
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func readJSONL[R any](t *testing.T, path string) []R {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []R
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r R
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

func recordsByID(t *testing.T, dirs ...string) map[string]trajectory.Record {
	t.Helper()
	out := map[string]trajectory.Record{}
	for _, d := range dirs {
		for _, r := range records(t, d) {
			out[r.TrajID] = r
		}
	}
	return out
}

// lastRole returns the role of the last message of a message column.
func lastRole(t *testing.T, ms []json.RawMessage) string {
	t.Helper()
	require.NotEmpty(t, ms)
	var m struct {
		Role string `json:"role"`
	}
	require.NoError(t, json.Unmarshal(ms[len(ms)-1], &m))
	return m.Role
}

func assertNoNull(t *testing.T, what string, ms []json.RawMessage) {
	t.Helper()
	for i, m := range ms {
		var v any
		require.NoError(t, json.Unmarshal(m, &v))
		var walk func(string, any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case nil:
				t.Errorf("%s[%d]%s is null", what, i, path)
			case map[string]any:
				for k, e := range x {
					if k == "arguments" {
						_, ok := e.(map[string]any)
						assert.True(t, ok, "%s[%d]%s.arguments must be an object", what, i, path)
					}
					walk(path+"."+k, e)
				}
			case []any:
				for _, e := range x {
					walk(path+"[]", e)
				}
			}
		}
		walk("", v)
	}
}

func TestPairsCommand(t *testing.T) {
	dirs := pairRuns(t)
	recs := recordsByID(t, dirs...)
	out := t.TempDir()
	code, stdout, stderr := runScenarios(t, append(append([]string{"pairs"}, dirs...), "--out", out, "--step-pairs", "--json", "--margin")...)
	require.Equal(t, 0, code, stderr)
	var res struct {
		Files []string     `json:"files"`
		Stats *pairs.Stats `json:"stats"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	for _, f := range []string{"data/dpo-train.parquet", "arrow/dpo-train.arrow", "jsonl/dpo.jsonl", "pairs_stats.json", "README.md", "manifest.json"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	left, _ := filepath.Glob(filepath.Join(out, ".antidrift-tmp-*"))
	assert.Empty(t, left, "no staging folder is left behind")

	rows := readJSONL[dataset.DPORow](t, filepath.Join(out, "jsonl/dpo.jsonl"))
	require.NotEmpty(t, rows)
	assert.Equal(t, res.Stats.Pairs(), len(rows))
	splitOf := map[string]string{}
	types := map[string]int{}
	for _, r := range rows {
		c, rj := recs[r.ChosenTrajID], recs[r.RejectedTrajID]
		assert.True(t, c.Clean(), "every chosen is a clean success")
		assert.True(t, rj.Drift, "every rejected drifts")
		if s, ok := splitOf[r.ScenarioID]; ok {
			assert.Equal(t, s, r.Split, "no scenario spans two splits")
		}
		splitOf[r.ScenarioID] = r.Split
		assert.Contains(t, []string{"user", "tool"}, lastRole(t, r.Prompt), "every prompt ends on a user or tool message")
		assertNoNull(t, "prompt", r.Prompt)
		assertNoNull(t, "chosen", r.Chosen)
		assertNoNull(t, "rejected", r.Rejected)
		require.NotNil(t, r.Margin)
		assert.Equal(t, r.RewardGap, *r.Margin)
		types[r.PairType]++
	}
	assert.Positive(t, types[pairs.TypeTrajectory])
	assert.Positive(t, types[pairs.TypeStep])
	readme, err := os.ReadFile(filepath.Join(out, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "## Pairing")

	// Same inputs (runs in another order) → byte-identical tables.
	out2 := t.TempDir()
	code, _, stderr = runScenarios(t, "pairs", dirs[1], dirs[0], "--out", out2, "--step-pairs", "--json", "--margin")
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"data/dpo-train.parquet", "arrow/dpo-train.arrow", "jsonl/dpo.jsonl"} {
		a, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(out2, f))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s differs between two runs on the same inputs", f)
	}

	// Rewriting with fewer formats removes this command's stale files only.
	require.NoError(t, os.WriteFile(filepath.Join(out, "mine.txt"), []byte("keep"), 0o644))
	code, _, stderr = runScenarios(t, append(append([]string{"pairs"}, dirs...), "--out", out, "--format", "jsonl", "--cross-checkpoint", "--pair-types", "trajectory")...)
	require.Equal(t, 0, code, stderr)
	assert.NoFileExists(t, filepath.Join(out, "data/dpo-train.parquet"))
	assert.NoFileExists(t, filepath.Join(out, "arrow/dpo-train.arrow"))
	assert.FileExists(t, filepath.Join(out, "mine.txt"))
	for _, r := range readJSONL[dataset.DPORow](t, filepath.Join(out, "jsonl/dpo.jsonl")) {
		assert.NotEqual(t, r.ChosenCheckpoint, r.RejectedCheckpoint)
		assert.Equal(t, pairs.TypeTrajectory, r.PairType)
	}
}

func TestPairsCommandTextOutput(t *testing.T) {
	dirs := pairRuns(t)
	code, stdout, stderr := runScenarios(t, "pairs", dirs[0], "--out", t.TempDir(), "--format", "jsonl", "--max-per-scenario", "1", "--step-only", "--step-continuation", "turn")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "CHECKPOINT")
	assert.Contains(t, stdout, "step pairs:")
	assert.NotContains(t, stdout, "trajectory pairs:")
	assert.Contains(t, stdout, "wrote ")
}

func TestPairsCommandBadInput(t *testing.T) {
	dirs := pairRuns(t)
	broken := t.TempDir()
	require.NoError(t, os.CopyFS(broken, os.DirFS(dirs[0])))
	files, _ := filepath.Glob(filepath.Join(broken, "trajectories", "*.jsonl"))
	require.Len(t, files, 1)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = "{\"traj_id\": oops}\n"
	require.NoError(t, os.WriteFile(files[0], []byte(strings.Join(lines, "")), 0o644))

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"not a run folder", []string{"pairs", t.TempDir()}, "is not a run folder"},
		{"broken line", []string{"pairs", broken}, files[0] + ":3:"},
		{"bad split", []string{"pairs", dirs[0], "--split", "0.5,0.5"}, "invalid split"},
		{"bad format", []string{"pairs", dirs[0], "--format", "csv"}, "unknown format"},
		{"bad scheme", []string{"pairs", dirs[0], "--scheme", "legal"}, "unknown reward scheme"},
		{"bad continuation", []string{"pairs", dirs[0], "--step-pairs", "--step-continuation", "all"}, "--step-continuation"},
		{"out is a run folder", []string{"pairs", dirs[0], "--out-is-run"}, "is a run folder"},
		{"missing provisions file", []string{"pairs", dirs[0], "--provisions", "/nonexistent/weights.json"}, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := tc.args
			if args[len(args)-1] == "--out-is-run" {
				args = append(args[:len(args)-1], "--out", dirs[1])
			} else {
				args = append(args, "--out", out)
			}
			code, _, stderr := runScenarios(t, args...)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, tc.want)
			if es, err := os.ReadDir(out); err == nil {
				assert.Empty(t, es, "a failed command leaves no output")
			}
		})
	}
}

func TestPairsCommandFailureKeepsEarlierOutput(t *testing.T) {
	dirs := pairRuns(t)
	out := t.TempDir()
	code, _, stderr := runScenarios(t, "pairs", dirs[0], "--out", out, "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	before := snapshot(t, out)

	// A weights catalogue missing the provisions the records cite fails
	// while pairing: nothing already written is touched.
	cat := filepath.Join(t.TempDir(), "cat.json")
	require.NoError(t, os.WriteFile(cat, []byte(`{"version":1,"provisions":[{"id":"X-1","jurisdiction":"EU","instrument":"I","article":"1","summary":"s","weight":1}]}`), 0o644))
	code, _, stderr = runScenarios(t, "pairs", dirs[0], "--out", out, "--format", "parquet", "--scheme", "provision", "--provisions", cat)
	require.Equal(t, 1, code)
	assert.Contains(t, stderr, "has no weight")
	assert.Equal(t, before, snapshot(t, out))
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		names = append(names, rel)
		return nil
	}))
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		out[n] = string(b)
	}
	return out
}
