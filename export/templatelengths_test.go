package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/rollout/dataset"
)

var wsRun = regexp.MustCompile(`[ \t\r\n]+`)

// textEstimate is the card's estimate over rendered text, recomputed: each
// whitespace run one byte, 3.5 bytes a token.
func textEstimate(s string) int64 {
	return int64(math.Ceil(float64(len(wsRun.ReplaceAllString(s, " "))) / 3.5))
}

// nearestRank is p-th percentile by nearest rank.
func nearestRank(vs []int64, p float64) int64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}

func messagesOf(t *testing.T, raws []json.RawMessage) []jinja.Value {
	t.Helper()
	out := make([]jinja.Value, len(raws))
	for i, r := range raws {
		v, err := chattemplate.Decode(r)
		require.NoError(t, err)
		out[i] = v
	}
	return out
}

// TestTemplateLengthsEqualARecomputation writes more rows than the sample
// holds and checks every per-template figure of the card against the rows
// read back from the JSONL file: the stride, the rows measured, the
// percentiles of the rendered prompt and prompt + longest completion, and
// the rows within max_length, as numbers and as the card prints them;
// with the waiting rows under any byte budget (none: each row rendered as
// it comes; a few rows' worth: the likeliest to stay rendered early), and
// each sampled row rendered once at most.
func TestTemplateLengthsEqualARecomputation(t *testing.T) {
	tmpls := []*chattemplate.Template{chattemplate.All[0], chattemplate.All[2]} // Qwen2.5, Llama-3.1
	defer func(b, c int64) { pendingBudget, meterChunkBytes = b, c }(pendingBudget, meterChunkBytes)
	chunk := meterChunkBytes
	for _, c := range []struct {
		n             int
		budget, chunk int64
	}{
		{40, pendingBudget, chunk}, {2*TemplateSample + 300, pendingBudget, chunk}, {2*TemplateSample + 300, 0, chunk},
		{8*TemplateSample + 50, pendingBudget, chunk}, {8*TemplateSample + 50, 40 << 10, chunk},
		{2*TemplateSample + 300, pendingBudget, 8 << 10}, // the rows left at the end decoded a few at a time
	} {
		n := c.n
		pendingBudget, meterChunkBytes = c.budget, c.chunk
		t.Run(fmt.Sprintf("%d/budget=%d/chunk=%d", n, c.budget, c.chunk), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create[dataset.DPORow](dir, TableDPO, []string{FormatJSONL}, Options{Templates: tmpls})
			require.NoError(t, err)
			rows := dpoRows(n)
			for i := range rows {
				if i%7 == 3 { // long rows, so that max_length leaves some out under one template
					rows[i].Chosen = append(rows[i].Chosen, msg(fmt.Sprintf(`{"role":"assistant","content":%q}`, strings.Repeat("word ", 400+i))))
				}
				require.NoError(t, w.Write(&rows[i]))
			}
			require.NoError(t, w.Close())
			ct := w.CardTable("dpo")
			require.Len(t, ct.TemplateLengths, len(tmpls))
			rendered := w.meter.rendered.Load()
			switch {
			case c.budget == 0: // every row sampled at the time, once
				assert.Equal(t, int64(2*TemplateSample-1+(n-2*TemplateSample)/2), rendered) // row 511 doubles the stride and leaves
			case c.budget >= 1<<20: // these rows all wait: only the final sample renders
				assert.Equal(t, ct.TemplateLengths[0].Rows, rendered)
			default:
				assert.Greater(t, rendered, ct.TemplateLengths[0].Rows)
			}

			// the rows as the file holds them
			f, err := os.Open(filepath.Join(dir, "dpo.jsonl"))
			require.NoError(t, err)
			defer f.Close()
			var back []dataset.DPORow
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				var r dataset.DPORow
				require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
				back = append(back, r)
			}
			require.Len(t, back, n)

			stride := int64(1)
			for int64(n) >= (2*TemplateSample-1)*stride+1 {
				stride *= 2
			}
			if n > 2*TemplateSample {
				assert.Greater(t, stride, int64(1), "a large table is sampled")
			}
			for k, tm := range tmpls {
				got := ct.TemplateLengths[k]
				var prompt, total []int64
				var raised, whole int64
				for i := int64(0); i < int64(n); i += stride {
					r := back[i]
					tools := jinja.None()
					if len(r.Tools) > 0 {
						tools = jinja.NewList(messagesOf(t, r.Tools))
					}
					p := messagesOf(t, r.Prompt)
					ps, err := tm.Render(p, tools, true)
					if err != nil {
						raised++
						continue
					}
					pl, tl := textEstimate(ps), textEstimate(ps)
					bad := false
					for _, c := range [][]json.RawMessage{r.Chosen, r.Rejected} {
						fs, err := tm.Render(append(append([]jinja.Value{}, p...), messagesOf(t, c)...), tools, false)
						if err != nil {
							bad = true
							break
						}
						tl = max(tl, textEstimate(fs))
					}
					if bad {
						raised++
						continue
					}
					prompt, total = append(prompt, pl), append(total, tl)
					if tl <= ct.Lengths.MaxLength {
						whole++
					}
				}
				want := TemplateLength{Template: tm.Name, Stride: stride, Rows: int64(len(prompt)) + raised, Raised: raised, Whole: whole,
					Prompt: [4]int64{nearestRank(prompt, .5), nearestRank(prompt, .9), nearestRank(prompt, .99), slices.Max(prompt)},
					Total:  [4]int64{nearestRank(total, .5), nearestRank(total, .9), nearestRank(total, .99), slices.Max(total)}}
				assert.Equal(t, want, got, tm.Name)
				if n <= 2*TemplateSample {
					assert.Equal(t, int64(n), got.Rows, "a small table is measured whole")
				}
			}
			assert.NotEqual(t, ct.TemplateLengths[0].Total, ct.TemplateLengths[1].Total, "the templates' overheads differ")

			// the card prints the same figures
			require.NoError(t, WriteCard(dir, Card{Tables: []CardTable{ct}}))
			card, err := os.ReadFile(filepath.Join(dir, "README.md"))
			require.NoError(t, err)
			for _, tl := range ct.TemplateLengths {
				assert.Contains(t, string(card), fmt.Sprintf("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d (%.1f%%) | %d |", tl.Template, tl.Rows,
					tl.Prompt[0], tl.Prompt[2], tl.Prompt[3], tl.Total[0], tl.Total[1], tl.Total[2], tl.Total[3], tl.Whole, 100*float64(tl.Whole)/float64(tl.Rows-tl.Raised), tl.Raised))
			}
			if stride > 1 {
				assert.Contains(t, string(card), fmt.Sprintf("a deterministic sample of %d of the %d rows: those whose 0-based index in file order (as in the JSONL file) is a multiple of %d", ct.TemplateLengths[0].Rows, n, stride))
			} else {
				assert.Contains(t, string(card), fmt.Sprintf("over every row (%d)", n))
			}
		})
	}
}

// TestTemplateLengthsNone: without templates the card has no per-template
// figure and says to give a tokenizer.
func TestTemplateLengthsNone(t *testing.T) {
	dir := t.TempDir()
	w, err := Create[dataset.DPORow](dir, TableDPO, []string{FormatJSONL}, Options{})
	require.NoError(t, err)
	for _, r := range dpoRows(5) {
		require.NoError(t, w.Write(&r))
	}
	require.NoError(t, w.Close())
	ct := w.CardTable("dpo")
	assert.Empty(t, ct.TemplateLengths)
	require.NoError(t, WriteCard(dir, Card{Tables: []CardTable{ct}}))
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(card), "Lengths per chat template")
	assert.Contains(t, string(card), "give `--tokenizer`")
}

func TestEstimateTextTokens(t *testing.T) {
	for _, s := range []string{"", "a", "abcd", "{\n    \"a\": 1\n}", "x  \n\t y", "<|eot_id|>\n\n"} {
		assert.Equal(t, textEstimate(s), dataset.EstimateTextTokens(s), "%q", s)
	}
}

// TestRewardsCardDescribesItsRecipe: the rewards card's length paragraph
// names the GRPO recipe's one limit with the figure the recipe sets, and
// no max_length, which that recipe does not have.
func TestRewardsCardDescribesItsRecipe(t *testing.T) {
	dir := t.TempDir()
	w, err := Create[dataset.RewardRow](dir, TableRewards, []string{FormatParquet, FormatJSONL}, Options{Templates: chattemplate.For(dataset.CompatNone)})
	require.NoError(t, err)
	for _, r := range rewardRows(30) {
		require.NoError(t, w.Write(&r))
	}
	require.NoError(t, w.Close())
	ct := w.CardTable("rewards")
	require.NotNil(t, ct.Lengths)
	require.NoError(t, WriteCard(dir, Card{Tables: []CardTable{ct}}))
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	card := string(b)
	limit := max(256, (ct.Lengths.Total[2]-ct.Lengths.Prompt[2]+63)/64*64)
	assert.Contains(t, card, fmt.Sprintf("The GRPO recipe below sets `max_completion_length=%d`: the p99 of the whole sequence less the p99 of the prompt (%d − %d)", limit, ct.Lengths.Total[2], ct.Lengths.Prompt[2]))
	assert.Contains(t, card, fmt.Sprintf("GRPOConfig(output_dir=\"grpo-out\", max_completion_length=%d)", limit))
	assert.NotContains(t, card, "max_length")
	assert.NotContains(t, card, "DPOTrainer")
	assert.NotContains(t, card, "RewardTrainer(")
	for _, tl := range ct.TemplateLengths {
		assert.Zero(t, tl.Whole, "no whole figure without a max_length")
	}
}

// TestGRPORecipeStripsEveryTemplatesBOS: GRPOTrainer tokenizes the
// recipe's prompt text again with special tokens, so the recipe drops a
// leading bos_token. Every template that writes one writes it first
// (where `text.startswith(bos)` finds it), exactly once, for the rows of
// its own layout; the recipe holds the strip.
func TestGRPORecipeStripsEveryTemplatesBOS(t *testing.T) {
	prompt := []json.RawMessage{msg(`{"role":"system","content":"Be careful."}`), msg(`{"role":"user","content":"Draft a note."}`)}
	withBOS := 0
	for _, tm := range chattemplate.All {
		bos, ok := tm.Vars["bos_token"]
		if !ok {
			continue
		}
		withBOS++
		msgs := prompt
		if tm.Family == dataset.CompatMistral || tm.Family == dataset.CompatGemma {
			// these layouts have no system message: it is merged into the first user turn
			msgs = []json.RawMessage{msg(`{"role":"user","content":"Be careful.\n\nDraft a note."}`)}
		}
		text, err := tm.Render(messagesOf(t, msgs), jinja.None(), true)
		require.NoError(t, err, tm.Name)
		b := bos.AsString()
		assert.True(t, strings.HasPrefix(text, b), "%s: the rendered prompt starts with its BOS %q", tm.Name, b)
		assert.Equal(t, 1, strings.Count(text, b), "%s: one BOS in the template's text", tm.Name)
	}
	assert.GreaterOrEqual(t, withBOS, 6, "Llama-3.x, Mistral, Gemma and DeepSeek write a BOS")

	dir := t.TempDir()
	w, err := Create[dataset.RewardRow](dir, TableRewards, []string{FormatParquet}, Options{})
	require.NoError(t, err)
	for _, r := range rewardRows(3) {
		require.NoError(t, w.Write(&r))
	}
	require.NoError(t, w.Close())
	require.NoError(t, WriteCard(dir, Card{Tables: []CardTable{w.CardTable("rewards")}}))
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), `return {"prompt": text[len(bos):] if bos and text.startswith(bos) else text}`)
}

// byteCounter counts one token per byte, messages and text alike.
type byteCounter struct{}

func (byteCounter) Name() string { return "bytes.json" }
func (byteCounter) Messages(msgs []json.RawMessage) (int64, error) {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return int64(n), nil
}
func (c byteCounter) Prompt(msgs, tools []json.RawMessage) (int64, error) {
	a, _ := c.Messages(msgs)
	b, _ := c.Messages(tools)
	return a + b, nil
}
func (byteCounter) Text(s string) (int64, error) { return int64(len(s)), nil }

// TestTemplateLengthsWithATokenizer: with --tokenizer the rendered text is
// counted by it, and the card says so.
func TestTemplateLengthsWithATokenizer(t *testing.T) {
	dir := t.TempDir()
	tm := chattemplate.All[0]
	w, err := Create[dataset.KTORow](dir, TableKTO, []string{FormatJSONL}, Options{Templates: []*chattemplate.Template{tm}, Tokens: byteCounter{}})
	require.NoError(t, err)
	var want []int64
	for i, d := range dpoRows(9) {
		r := dataset.KTORow{Prompt: d.Prompt, Completion: d.Chosen, Tools: d.Tools, Label: i%2 == 0, Split: d.Split, SchemaVersion: dataset.SchemaVersion}
		require.NoError(t, w.Write(&r))
		tools := jinja.None()
		if len(r.Tools) > 0 {
			tools = jinja.NewList(messagesOf(t, r.Tools))
		}
		full, err := tm.Render(messagesOf(t, append(append([]json.RawMessage{}, r.Prompt...), r.Completion...)), tools, false)
		require.NoError(t, err)
		want = append(want, int64(len(full)))
	}
	require.NoError(t, w.Close())
	ct := w.CardTable("kto")
	require.Len(t, ct.TemplateLengths, 1)
	assert.Equal(t, slices.Max(want), ct.TemplateLengths[0].Total[3], "the longest rendering, counted in bytes")
	require.NoError(t, WriteCard(dir, Card{Tables: []CardTable{ct}}))
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "measured by the tokenizer `bytes.json` over the rendered text")
}

// TestTemplateLengthsAbortRendersNothingMore: an aborted writer drops the
// sampled rows still waiting instead of rendering them.
func TestTemplateLengthsAbortRendersNothingMore(t *testing.T) {
	w, err := Create[dataset.DPORow](t.TempDir(), TableDPO, []string{FormatJSONL}, Options{Templates: chattemplate.All[:1]})
	require.NoError(t, err)
	rows := dpoRows(300)
	for i := range rows {
		require.NoError(t, w.Write(&rows[i]))
	}
	w.Abort()
	<-w.meter.done
	assert.Zero(t, w.meter.rendered.Load(), "the 300 rows all waited (under the byte budget) and were dropped")
	assert.Error(t, w.Close())
}
