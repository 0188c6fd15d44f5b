package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/store"
)

// TestDemoMakesEveryArtifact checks the demo pipeline, run small (the
// shared demo: demo_shared_test.go): each stage left its files and the
// summary tells the story the simulated family is built to tell.
func TestDemoMakesEveryArtifact(t *testing.T) {
	out, s := sharedDemo(t)

	for _, f := range []string{
		"runs/base/manifest.json", "runs/overcautious/trajectories/part-0-of-1.jsonl",
		"report/report.html", "report/report.json", "report/pareto.png", "report/pareto.svg",
		"pairs/data/dpo-train.parquet", "pairs/arrow/dpo-train.arrow", "pairs/jsonl/dpo.jsonl", "pairs/README.md", "pairs/manifest.json",
		"rewards/data/rewards-train.parquet", "trajectories/data/trajectories-train.parquet", "kto/data/kto-train.parquet", "demo.log",
	} {
		info, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}
	var m struct {
		Tables []struct {
			Name string `json:"name"`
			Rows int    `json:"rows"`
		} `json:"tables"`
	}
	b, err := os.ReadFile(filepath.Join(out, "trajectories", "manifest.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	require.Len(t, m.Tables, 1)
	assert.Equal(t, len(builtinScenarios(t))*2*5, m.Tables[0].Rows, "every episode of every checkpoint is exported")

	assert.Contains(t, s, "sim:overcautious")
	assert.Contains(t, s, "capability collapse")
	assert.Contains(t, s, "sim:dpo-1 → sim:dpo-2")
	// It ends with the command to run next, on the folder it wrote.
	assert.Contains(t, s, "\n  antidrift view "+out+"\n")
	// The sim-server on this machine needs no key: no stage warned.
	log, err := os.ReadFile(filepath.Join(out, "demo.log"))
	require.NoError(t, err)
	assert.NotContains(t, string(log), "warning")

	// The drifting calls a newcomer opens carry values from the scenario,
	// not placeholders.
	drifting := 0
	for _, dir := range mustGlob(t, filepath.Join(out, "runs", "*")) {
		it := store.Records(dir)
		for it.Next() {
			r := it.At()
			var args []string // every tool call's arguments, by call index
			for _, m := range r.Messages {
				for _, tc := range m.ToolCalls {
					args = append(args, tc.Function.Arguments)
				}
			}
			for _, m := range r.Matches {
				if m.Call < 0 || m.Call >= len(args) {
					continue
				}
				drifting++
				assert.NotContains(t, args[m.Call], "simulated ", "%s call %d of %s", r.TrajID, m.Call, r.ScenarioID)
			}
		}
		require.NoError(t, it.Err())
		it.Close()
	}
	assert.Positive(t, drifting)

	// Every row of every table renders through the real chat templates
	// (chat_templates_test.go).
	checkRenderedTables(t, "demo", out, nil)
	// One model turn per KTO and rewards row, no call trained without the
	// result it used, GRPO groups by the first request.
	runs, err := filepath.Glob(filepath.Join(out, "runs", "*"))
	require.NoError(t, err)
	checkTrainerRowsV3(t, out, runs)

	// Rerunning resumes the rollouts and rewrites the rest (on a copy: the
	// shared demo is read by other tests).
	again := filepath.Join(t.TempDir(), "demo")
	copyDemo(t, again)
	var summary strings.Builder
	require.NoError(t, runDemo(&summary, again, 2, 0))
	assert.Contains(t, summary.String(), "sim:dpo-1 → sim:dpo-2")
}

// TestDemoRecordsNoAbsolutePath: no file the demo writes (run manifests,
// report, cards, tables, log) holds the absolute path of its output folder,
// so a demo folder reads the same on any machine it is copied to. The run
// manifests record the demo's command line (sharedDemo types one), with
// --out relative to the run folder.
func TestDemoRecordsNoAbsolutePath(t *testing.T) {
	dir, _ := sharedDemo(t)
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(dir, path)
		assert.NotContains(t, string(b), abs, rel)
		return nil
	}))
	assert.Greater(t, files, 40)

	var m store.Manifest
	b, err := os.ReadFile(filepath.Join(dir, "runs", "base", "manifest.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, "antidrift demo --out ../.. --rollouts 2", m.Settings.Command)
	var rep struct {
		Runs []string `json:"runs"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "report", "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Runs, 5)
	for _, r := range rep.Runs {
		// Relative to the report folder: each names a run folder there.
		_, err := store.ReadManifest(filepath.Join(dir, "report", r))
		assert.NoError(t, err, r)
	}
	log, err := os.ReadFile(filepath.Join(dir, "demo.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "\n$ antidrift pareto --out report runs/base runs/sft runs/dpo-1 runs/dpo-2 runs/overcautious\n")

	// The moved copy still reads: score and pareto take its run folders.
	moved := filepath.Join(t.TempDir(), "moved")
	copyDemo(t, moved)
	runs := mustGlob(t, filepath.Join(moved, "runs", "*"))
	code, _, stderr := runScenarios(t, append([]string{"pareto", "--out", filepath.Join(moved, "report")}, runs...)...)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, append([]string{"score"}, runs...)...)
	require.Equal(t, 0, code, stderr)
}

// TestRelToFolder: the demo log's paths under the demo folder become
// relative to it, whether it was named absolute or relative, and nothing
// else changes.
func TestRelToFolder(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	for _, c := range []struct{ dir, text, want string }{
		{"/tmp/d", "--out /tmp/d/runs/base --json", "--out runs/base --json"},
		{"/tmp/d", `"out": "/tmp/d/runs/base",`, `"out": "runs/base",`},
		{"/tmp/d", "view /tmp/d\n", "view .\n"},
		{"/tmp/d", "/tmp/d/a, /tmp/d/b", "a, b"},
		{"/tmp/d", "/tmp/dd/a /x/tmp/d/a /tmp/d.old", "/tmp/dd/a /x/tmp/d/a /tmp/d.old"},
		{"demo", "--out demo/pairs x/demo/pairs demo2 " + filepath.Join(wd, "demo", "kto"), "--out pairs x/demo/pairs demo2 kto"},
		{".", "runs/base " + filepath.Join(wd, "runs"), "runs/base runs"},
		{"demo", "sim:demo --out=demo: (demo)", "sim:demo --out=.: (.)"},
		{"/tmp/d", "a/tmp/d /tmp/d-x /tmp/d/ '/tmp/d/'", "a/tmp/d /tmp/d-x ./ './'"},
	} {
		assert.Equal(t, c.want, relToFolder(c.text, c.dir), "%s: %q", c.dir, c.text)
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.NotEmpty(t, m, pattern)
	return m
}
