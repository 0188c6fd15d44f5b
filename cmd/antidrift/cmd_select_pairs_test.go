package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/pairs/leastpriv"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectPairs(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"select", "--task", "tools", "--library", "builtin:email", "--policy", "sim:base", "--rollouts", "2", "--out", dir, "--json"}))
	recs := recordsByID(t, dir)
	out := t.TempDir()
	code, _, stderr := runScenarios(t, "select-pairs", dir, "--out", out, "--json")
	require.Equal(t, 0, code, stderr)
	rows := readJSONL[dataset.DPORow](t, filepath.Join(out, "dpo.jsonl"))
	require.NotEmpty(t, rows)
	constructed := 0
	for _, r := range rows {
		assert.Equal(t, leastpriv.TypeTools, r.PairType)
		if c, ok := recs[r.ChosenTrajID]; ok {
			assert.Equal(t, "exact_match", c.Selection.Tools.Label)
			assert.Equal(t, r.ScenarioID, c.ScenarioID)
		} else {
			assert.Equal(t, leastpriv.Constructed, r.ChosenCheckpoint)
		}
		if rj, ok := recs[r.RejectedTrajID]; ok {
			assert.Equal(t, "over_privilege", rj.Selection.Tools.Label, "every rejected over-reaches")
			assert.Equal(t, r.ScenarioID, rj.ScenarioID, "chosen and rejected answer the same query")
		} else {
			assert.True(t, strings.HasPrefix(r.RejectedTrajID, leastpriv.Constructed+":"))
			assert.Equal(t, leastpriv.Constructed, r.RejectedCheckpoint)
			constructed++
		}
	}
	assert.Positive(t, constructed)
	for _, f := range []string{"kto.parquet", "kto.arrow", "kto.jsonl", "README.md", "manifest.json"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	// Byte-identical on a second run.
	out2 := t.TempDir()
	code, _, stderr = runScenarios(t, "select-pairs", dir, "--out", out2)
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"dpo.parquet", "kto.parquet", "dpo.jsonl"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		assert.True(t, bytes.Equal(a, b), f)
	}
	// A rollout run is refused, naming it.
	roll := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "2", "--out", roll, "--json"}))
	code, _, stderr = runScenarios(t, "select-pairs", roll, "--out", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not a select run")
}
