package main

import (
	"bytes"
	"fmt"
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
	rows := readJSONL[dataset.DPORow](t, filepath.Join(out, "jsonl", "dpo.jsonl"))
	require.NotEmpty(t, rows)
	constructed := 0
	for _, r := range rows {
		assert.Equal(t, leastpriv.TypeTools, r.PairType)
		assert.Positive(t, r.PromptTokensEst, "real token estimates")
		assert.Positive(t, r.ChosenTokensEst)
		assert.Positive(t, r.RejectedTokensEst)
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
	for _, f := range []string{"data/kto-train.parquet", "arrow/kto-train.arrow", "jsonl/kto.jsonl", "data/dpo-train.parquet", "README.md", "manifest.json"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	for _, r := range readJSONL[dataset.KTORow](t, filepath.Join(out, "jsonl", "kto.jsonl")) {
		assert.Positive(t, r.PromptTokensEst)
		assert.Positive(t, r.CompletionTokensEst)
	}
	// The card: non-zero lengths, its own column descriptions, the
	// constructed sides counted with the command for model-written ones.
	card, err := os.ReadFile(filepath.Join(out, "README.md"))
	require.NoError(t, err)
	cs := string(card)
	assert.NotContains(t, cs, "max_length=0")
	assert.NotContains(t, cs, "| prompt | 0 |")
	assert.Regexp(t, `max_length=[1-9][0-9]*`, cs)
	assert.Contains(t, cs, "- `scenario_id`: the query id in the library")
	assert.Contains(t, cs, "- `chosen`: one assistant turn naming the minimal sufficient skill or tool set")
	assert.NotContains(t, cs, "drift onset")
	assert.Contains(t, cs, fmt.Sprintf("**Constructed sides:** of %d pairs, %d have a rejected side and %d a chosen side written from the library", len(rows), countConstructedRejected(rows), countConstructedChosen(rows)))
	assert.Contains(t, cs, "--rollouts 8 --temperature 0.8")
	// lengths per chat template, recomputed from the rows
	assert.Contains(t, cs, "### Lengths per chat template")
	assert.Equal(t, 2, checkTemplateLengths(t, out), "dpo and kto")
	// Byte-identical on a second run.
	out2 := t.TempDir()
	code, _, stderr = runScenarios(t, "select-pairs", dir, "--out", out2)
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{"data/dpo-train.parquet", "data/kto-train.parquet", "jsonl/dpo.jsonl"} {
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

func countConstructedChosen(rows []dataset.DPORow) int {
	n := 0
	for _, r := range rows {
		if r.ChosenCheckpoint == leastpriv.Constructed {
			n++
		}
	}
	return n
}

func countConstructedRejected(rows []dataset.DPORow) int {
	n := 0
	for _, r := range rows {
		if r.RejectedCheckpoint == leastpriv.Constructed {
			n++
		}
	}
	return n
}
