package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// TestPairsLengthBalance: the trajectory-pair card reports how often the
// rejected side is longer, and --balance-length bounds the ratio of the
// two sides' lengths in every row written.
func TestPairsLengthBalance(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--rollouts", "4", "--limit", "40", "--out", run)
	require.Equal(t, 0, code, stderr)
	all := filepath.Join(t.TempDir(), "all")
	code, _, stderr = runScenarios(t, "pairs", run, "--out", all, "--pair-types", "trajectory", "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	rows := readJSONL[dataset.DPORow](t, filepath.Join(all, "jsonl", "dpo.jsonl"))
	require.NotEmpty(t, rows)
	longer := 0
	for _, r := range rows {
		if r.RejectedTokensEst > r.ChosenTokensEst {
			longer++
		}
	}
	card, err := os.ReadFile(filepath.Join(all, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "the rejected side is longer in "+strconv.Itoa(longer)+" of "+strconv.Itoa(len(rows))+" pairs")

	bal := filepath.Join(t.TempDir(), "bal")
	code, _, stderr = runScenarios(t, "pairs", run, "--out", bal, "--pair-types", "trajectory", "--format", "jsonl", "--balance-length", "1.2")
	require.Equal(t, 0, code, stderr)
	kept := readJSONL[dataset.DPORow](t, filepath.Join(bal, "jsonl", "dpo.jsonl"))
	for _, r := range kept {
		long, short := max(r.ChosenTokensEst, r.RejectedTokensEst), min(r.ChosenTokensEst, r.RejectedTokensEst)
		assert.LessOrEqual(t, float64(long), 1.2*float64(short), r.PairID)
	}
	card, err = os.ReadFile(filepath.Join(bal, "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("`--balance-length 1.2` dropped ([0-9]+) pairs").FindStringSubmatch(string(card))
	require.NotNil(t, m, "the card counts the pairs dropped")
	assert.Positive(t, len(rows)-len(kept), "some pairs were unbalanced")

	code, _, stderr = runScenarios(t, "pairs", run, "--out", t.TempDir(), "--balance-length", "0.5")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--balance-length 0.5")
}
