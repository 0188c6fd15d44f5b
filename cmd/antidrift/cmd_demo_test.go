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

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.NotEmpty(t, m, pattern)
	return m
}
