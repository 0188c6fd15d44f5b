package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type exportJSON struct {
	Table struct {
		Rows    int64 `json:"rows"`
		Lengths *struct {
			Total [4]int64 `json:"total_p50_p90_p99_max"`
		} `json:"lengths"`
		MaxTokens int64  `json:"max_tokens"`
		Dropped   int64  `json:"dropped_over_max_tokens"`
		Tokenizer string `json:"tokenizer"`
	} `json:"table"`
}

func exportKTO(t *testing.T, run string, args ...string) (exportJSON, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runScenarios(t, append([]string{"export", run, "--table", "kto", "--out", out, "--json"}, args...)...)
	require.Equal(t, 0, code, stderr)
	var res exportJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	return res, out
}

func TestMaxTokensAndTokenizerFlags(t *testing.T) {
	run := simRunDir(t, "sim:base", "8")
	all, _ := exportKTO(t, run)
	require.NotNil(t, all.Table.Lengths)
	p50 := all.Table.Lengths.Total[0]

	cut, out := exportKTO(t, run, "--max-tokens", strconv.FormatInt(p50, 10))
	assert.Positive(t, cut.Table.Dropped)
	assert.Equal(t, all.Table.Rows, cut.Table.Rows+cut.Table.Dropped)
	assert.LessOrEqual(t, cut.Table.Lengths.Total[3], p50)
	card, err := os.ReadFile(filepath.Join(out, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "`--max-tokens "+strconv.FormatInt(p50, 10)+"`: "+strconv.FormatInt(cut.Table.Dropped, 10)+" rows of kto longer than")
	man, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(man), `"max_tokens": "`+strconv.FormatInt(p50, 10)+`"`)

	// Exact counts from a tokenizer.json: a WordLevel vocabulary that maps
	// most words to [UNK], one token each. Counting through a tokenizer
	// costs about a third of a CPU-second per episode (export/hftok: 10 s
	// on the 30 episodes above), so the flag's path runs on two episodes
	// of their own, beside their estimate.
	few := filepath.Join(t.TempDir(), "few")
	code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "2", "--seed", "5", "--out", few, "--json")
	require.Equal(t, 0, code, stderr)
	fewAll, _ := exportKTO(t, few)
	tok := filepath.Join("..", "..", "export", "hftok", "testdata", "wordlevel.tokenizer.json")
	exact, out := exportKTO(t, few, "--tokenizer", tok)
	assert.Equal(t, "wordlevel.tokenizer.json", exact.Table.Tokenizer)
	assert.Positive(t, exact.Table.Rows)
	assert.Equal(t, fewAll.Table.Rows, exact.Table.Rows)
	assert.NotEqual(t, fewAll.Table.Lengths.Total, exact.Table.Lengths.Total, "counts differ from the estimate")
	card, err = os.ReadFile(filepath.Join(out, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "Exact token counts by the tokenizer `wordlevel.tokenizer.json`")
	assert.NotContains(t, string(card), "testdata", "the tokenizer is named by file name, never by path")

	// Trajectories are bounded by the whole conversation.
	out = filepath.Join(t.TempDir(), "traj")
	var stdout string
	code, stdout, stderr = runScenarios(t, "export", run, "--table", "trajectories", "--out", out, "--max-tokens", "1")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "--max-tokens 1: dropped 30 rows longer than that (estimated), kept 0")

	// Rewards and pairs take the flags too.
	out = filepath.Join(t.TempDir(), "rw")
	code, stdout, stderr = runScenarios(t, "rewards", run, "--out", out, "--max-tokens", "1", "--json")
	require.Equal(t, 0, code, stderr)
	var rw struct {
		Dropped int64 `json:"dropped_over_max_tokens"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rw), stdout)
	code, stdout, stderr = runScenarios(t, "rewards", run, "--out", filepath.Join(t.TempDir(), "rw-all"), "--json")
	require.Equal(t, 0, code, stderr)
	var rwAll struct {
		Summary struct {
			Rows int64 `json:"rows"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rwAll), stdout)
	assert.Positive(t, rw.Dropped)
	assert.Equal(t, rwAll.Summary.Rows, rw.Dropped, "every row (one per assistant turn) dropped")

	code, _, stderr = runScenarios(t, "export", run, "--table", "kto", "--out", filepath.Join(t.TempDir(), "x"), "--tokenizer", "/nonexistent/tokenizer.json")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "/nonexistent/tokenizer.json")
	code, _, stderr = runScenarios(t, "pairs", run, "--out", filepath.Join(t.TempDir(), "y"), "--max-tokens", "-3")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "--max-tokens -3")
}
