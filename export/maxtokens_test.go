package export

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// countBytes is a TokenCounter that counts one token per byte of JSON, so
// that tests know the exact figures.
type countBytes struct{}

func (countBytes) Name() string { return "bytes.json" }
func (countBytes) Messages(ms []json.RawMessage) (int64, error) {
	var n int64
	for _, m := range ms {
		n += int64(len(m))
	}
	return n, nil
}
func (c countBytes) Prompt(ms, tools []json.RawMessage) (int64, error) {
	a, _ := c.Messages(ms)
	b, _ := c.Messages(tools)
	return a + b, nil
}

func TestMaxTokensDropsLongRows(t *testing.T) {
	rows := rewardRows(10)
	long := make([]json.RawMessage, 40)
	for i := range long {
		long[i] = msg(`{"role":"assistant","content":"` + strings.Repeat("word ", 40) + `"}`)
	}
	rows[3].Completion, rows[7].Completion = long, long
	for i := range rows {
		rows[i].PromptTokensEst = dataset.EstimatePromptTokens(rows[i].Prompt, rows[i].Tools)
		rows[i].CompletionTokensEst = dataset.EstimateTokens(rows[i].Completion)
	}
	limit := rows[0].PromptTokensEst + rows[0].CompletionTokensEst // every short row is this long
	require.Greater(t, rows[3].PromptTokensEst+rows[3].CompletionTokensEst, limit)

	dir := t.TempDir()
	w, err := Create[dataset.RewardRow](dir, "rewards", []string{FormatJSONL}, Options{MaxTokens: limit})
	require.NoError(t, err)
	for i := range rows {
		require.NoError(t, w.Write(&rows[i]))
	}
	require.NoError(t, w.Close())
	assert.Equal(t, int64(8), w.Rows())
	assert.Equal(t, int64(2), w.Dropped())
	ct := w.CardTable("rewards")
	assert.Equal(t, int64(2), ct.DroppedOverMax)
	assert.Equal(t, limit, ct.MaxTokens)
	assert.Equal(t, limit, ct.Lengths.Total[3], "the card's lengths are of the rows kept")
	b, err := os.ReadFile(filepath.Join(dir, "rewards.jsonl"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"traj_id":"t3"`)
	assert.NotContains(t, string(b), `"traj_id":"t7"`)
	assert.Contains(t, string(b), `"traj_id":"t8"`)

	require.NoError(t, WriteCard(dir, Card{Title: "t", Tables: []CardTable{ct}}))
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "2 rows of rewards longer than")
}

func TestTokenCounterReplacesEstimates(t *testing.T) {
	rows := dpoRows(6)
	for i := range rows {
		rows[i].PromptTokensEst, rows[i].ChosenTokensEst, rows[i].RejectedTokensEst = 1, 1, 1
	}
	dir := t.TempDir()
	w, err := Create[dataset.DPORow](dir, "dpo", []string{FormatJSONL}, Options{Tokens: countBytes{}, Margin: true})
	require.NoError(t, err)
	for i := range rows {
		require.NoError(t, w.Write(&rows[i]))
	}
	require.NoError(t, w.Close())
	assert.Equal(t, int64(1), rows[0].PromptTokensEst, "the caller's row is left as it was")
	f, err := os.Open(filepath.Join(dir, "dpo.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	dec := json.NewDecoder(f)
	for i := range rows {
		var got dataset.DPORow
		require.NoError(t, dec.Decode(&got))
		wantP, _ := countBytes{}.Prompt(rows[i].Prompt, rows[i].Tools)
		wantC, _ := countBytes{}.Messages(rows[i].Chosen)
		assert.Equal(t, wantP, got.PromptTokensEst, "row %d", i)
		assert.Equal(t, wantC, got.ChosenTokensEst, "row %d", i)
	}
	ct := w.CardTable("dpo")
	assert.Equal(t, "bytes.json", ct.Tokenizer)
	require.NoError(t, WriteCard(dir, Card{Title: "t", Tables: []CardTable{ct}}))
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "Exact token counts by the tokenizer `bytes.json`")
}

// lengthCounts gives the nearest-rank percentiles of the lengths sorted,
// as a sorted copy of every row's length would.
func TestLengthCountsPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for _, n := range []int{1, 2, 3, 7, 99, 100, 101, 1000, 12345} {
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = rng.Int64N(int64(1 + n/3)) // repeats
		}
		s := slices.Clone(vs)
		slices.Sort(s)
		rank := func(p float64) int64 { return s[max(0, min(int(p*float64(n)+0.999999)-1, n-1))] }
		want := [4]int64{rank(0.5), rank(0.9), rank(0.99), s[n-1]}
		if got := percentiles(vs); got != want {
			t.Errorf("%d lengths: %v, want %v", n, got, want)
		}
	}
}
