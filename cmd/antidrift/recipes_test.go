package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedTableRuns are the runs of the table tests (tableRuns), rolled out
// once per test binary: the tests only read them, and each rollout loads
// and validates the whole built-in suite.
var sharedTableRuns struct {
	once sync.Once
	root string
	runs []string
	err  error
}

// tableRuns returns a fresh folder for a table test's output and the runs
// of two simulated checkpoints (sim:base and sim:dpo-1, 3 rollouts of every
// built-in scenario, under runs/base and runs/dpo-1 of a folder of their
// own), which tests must not write into.
func tableRuns(t *testing.T) (string, []string) {
	t.Helper()
	r := &sharedTableRuns
	r.once.Do(func() {
		if r.root, r.err = os.MkdirTemp("", "antidrift-table-runs-"); r.err != nil {
			return
		}
		for _, p := range []string{"base", "dpo-1"} {
			run := filepath.Join(r.root, "runs", p)
			args := []string{"rollout", "--policy", "sim:" + p, "--rollouts", "3", "--out", run}
			if _, r.err = execRoot(args...); r.err != nil {
				return
			}
			r.runs = append(r.runs, run)
		}
	})
	require.NoError(t, r.err, "the shared table runs")
	return t.TempDir(), slices.Clone(r.runs)
}

// removeTableRuns removes the shared table runs after the tests (TestMain).
func removeTableRuns() {
	if sharedTableRuns.root != "" {
		os.RemoveAll(sharedTableRuns.root)
	}
}

func jstr(t *testing.T, v json.RawMessage) string {
	t.Helper()
	var s string
	require.NoError(t, json.Unmarshal(v, &s))
	return s
}

func num(t *testing.T, v json.RawMessage) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal(v, &n))
	return n
}

func messages(t *testing.T, v json.RawMessage) []map[string]any {
	t.Helper()
	var ms []map[string]any
	require.NoError(t, json.Unmarshal(v, &ms))
	return ms
}

// TestCardRecipesMatchTheFiles: every card's recipes take their lengths
// and weights from the file they sit beside, keep the tool schemas, and
// use the trainers' current argument names.
func TestCardRecipesMatchTheFiles(t *testing.T) {
	dir, runs := tableRuns(t)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "pairs"), "--margin", "--format", "parquet,jsonl,llamafactory"}, runs...)...)
	runCmd(t, append([]string{"rewards", "--out", filepath.Join(dir, "rewards"), "--format", "parquet,jsonl"}, runs...)...)
	runCmd(t, append([]string{"export", "--table", "kto", "--out", filepath.Join(dir, "kto"), "--format", "parquet,jsonl"}, runs...)...)
	runCmd(t, append([]string{"export", "--table", "trajectories", "--out", filepath.Join(dir, "trajectories"), "--format", "parquet,jsonl"}, runs...)...)

	maxLen := regexp.MustCompile(`max_length=(\d+)[,)]`)
	cols := regexp.MustCompile(`(?:cols|keep) = \[([^\]]*)\]`)
	p99 := func(vs []int64) int64 {
		s := slices.Clone(vs)
		slices.Sort(s)
		return s[int(math.Ceil(0.99*float64(len(s))))-1]
	}
	for folder, table := range map[string]string{"pairs": "dpo", "rewards": "rewards", "kto": "kto", "trajectories": "trajectories"} {
		card, err := os.ReadFile(filepath.Join(dir, folder, "README.md"))
		require.NoError(t, err)
		c := string(card)
		rows := jsonlRows(t, filepath.Join(dir, folder, "jsonl", table+".jsonl"))
		require.NotEmpty(t, rows)
		assert.NotContains(t, c, "max_prompt_length", "%s: TRL 1.x configs take max_length only", folder)
		for _, m := range cols.FindAllStringSubmatch(c, -1) {
			assert.Contains(t, m[1], `"tools"`, "%s: a recipe drops the tools column: %s", folder, m[0])
		}
		var totals []int64
		for _, r := range rows {
			switch table {
			case "dpo":
				totals = append(totals, num(t, r["prompt_tokens_est"])+max(num(t, r["chosen_tokens_est"]), num(t, r["rejected_tokens_est"])))
			case "kto", "rewards":
				totals = append(totals, num(t, r["prompt_tokens_est"])+num(t, r["completion_tokens_est"]))
			}
		}
		if len(totals) > 0 && table != "rewards" { // GRPO bounds the sampled completion only
			ms := maxLen.FindAllStringSubmatch(c, -1)
			require.NotEmpty(t, ms, folder)
			for _, m := range ms {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				assert.GreaterOrEqual(t, n, p99(totals), "%s: max_length keeps 99%% of rows whole", folder)
				assert.Less(t, n, p99(totals)+64, "%s: max_length is the p99 rounded up to 64", folder)
			}
		}
		switch table {
		case "dpo":
			assert.Contains(t, c, `rm_cols = cols + ["margin"]`)
			assert.Contains(t, c, "--data.prompt_key prompt --data.chosen_key chosen --data.rejected_key rejected")
			assert.Regexp(t, `--data.max_len \d+`, c)
			assert.Contains(t, c, "--model.margin_loss_enable")
			assert.Contains(t, c, "export with --tools-in-system", "OpenRLHF passes no tools: the card says how to keep them")
			checkLlamaFactory(t, filepath.Join(dir, folder), rows)
		case "kto":
			d, u := 0, 0
			for _, r := range rows {
				if jstr(t, r["split"]) != "train" {
					continue
				}
				var label bool
				require.NoError(t, json.Unmarshal(r["label"], &label))
				if label {
					d++
				} else {
					u++
				}
			}
			m := regexp.MustCompile(`desirable_weight=([0-9.]+), undesirable_weight=1.0`).FindStringSubmatch(c)
			require.NotNil(t, m, "the KTO recipe sets desirable_weight")
			w, _ := strconv.ParseFloat(m[1], 64)
			// KTOTrainer's check, as it rounds it
			lo, hi := math.Round(float64(u)/float64(d)*100)/100, math.Round(float64(u)/float64(d)*1.33*100)/100
			assert.True(t, lo <= w && w <= hi, "desirable_weight %.2f in TRL's range [%.2f, %.2f] for %d desirable, %d undesirable train rows", w, lo, hi, d, u)
			assert.Contains(t, c, strconv.Itoa(d)+" desirable (label true)")
		case "rewards":
			assert.Contains(t, c, `tools=r["tools"] or None`, "GRPO prompts are rendered with their tools")
			assert.Contains(t, c, "def boundary_reward(completions, tools, boundary_tools")
			assert.Regexp(t, `max_completion_length=\d+`, c)
			for i, r := range rows {
				var b []string
				require.NoError(t, json.Unmarshal(r["boundary_tools"], &b))
				assert.NotEmpty(t, b, "rewards row %d: boundary_tools", i)
			}
		case "trajectories":
			assert.Contains(t, c, "assistant_only_loss=True")
		}
	}
}

// checkLlamaFactory: the llamafactory files hold every one-turn pair of
// their split in LLaMA-Factory's alternation, and dataset_info.json names
// them.
func checkLlamaFactory(t *testing.T, dir string, rows []map[string]json.RawMessage) {
	t.Helper()
	var info map[string]struct {
		File       string            `json:"file_name"`
		Formatting string            `json:"formatting"`
		Ranking    bool              `json:"ranking"`
		Columns    map[string]string `json:"columns"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "llamafactory", "dataset_info.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &info))
	require.Len(t, info, 3)
	perSplit := map[string]int{}
	for _, r := range rows {
		if len(messages(t, r["chosen"])) == 1 && len(messages(t, r["rejected"])) == 1 {
			perSplit[jstr(t, r["split"])]++
		}
	}
	for name, e := range info {
		assert.Equal(t, "sharegpt", e.Formatting, name)
		assert.True(t, e.Ranking, name)
		assert.Equal(t, "tools", e.Columns["tools"], name)
		var lf []struct {
			Conversations []struct{ From, Value string } `json:"conversations"`
			Chosen        struct{ From, Value string }   `json:"chosen"`
			Rejected      struct{ From, Value string }   `json:"rejected"`
			Tools         string                         `json:"tools"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "llamafactory", e.File))
		require.NoError(t, err, name)
		require.NoError(t, json.Unmarshal(b, &lf), name)
		split := strings.TrimSuffix(strings.TrimPrefix(e.File, "dpo-"), ".json")
		assert.Len(t, lf, perSplit[split], "%s: every one-turn pair of the split", name)
		for i, r := range lf {
			require.Equal(t, 1, len(r.Conversations)%2, "%s row %d: odd turns", name, i)
			for k, m := range r.Conversations {
				want := []string{"human", "observation"}
				if k%2 == 1 {
					want = []string{"gpt", "function_call"}
				}
				assert.Contains(t, want, m.From, "%s row %d turn %d", name, i, k)
				if m.From == "function_call" {
					assert.True(t, json.Valid([]byte(m.Value)), "%s row %d turn %d: the call is JSON", name, i, k)
				}
			}
			assert.Contains(t, []string{"gpt", "function_call"}, r.Chosen.From)
			assert.Contains(t, []string{"gpt", "function_call"}, r.Rejected.From)
			assert.True(t, json.Valid([]byte(r.Tools)), "%s row %d: tools", name, i)
		}
	}
}

// TestCompletionLayouts: by default every multi-turn completion holds only
// model-written turns; --completion rest keeps the tool results; the card
// and manifest say which.
func TestCompletionLayouts(t *testing.T) {
	dir, runs := tableRuns(t)
	react := filepath.Join(dir, "runs", "react")
	runCmd(t, "rollout", "--policy", "sim:base", "--framework", "react", "--rollouts", "2", "--limit", "10", "--out", react)
	runs = append(runs, react)
	type export struct{ folder, table, col, dflt string }
	// The defaults (issue 28): one model turn per KTO and rewards row, and
	// trajectory pairs with their tool results; model-turns on request.
	for _, layout := range []string{"", "model-turns", "rest"} {
		var flags []string
		if layout != "" {
			flags = []string{"--completion", layout}
		}
		name := layout
		if name == "" {
			name = "default"
		}
		out := func(n string) string { return filepath.Join(dir, n+"-"+name) }
		runCmd(t, append(append([]string{"pairs", "--out", out("pairs"), "--format", "jsonl", "--pair-types", "trajectory"}, flags...), runs...)...)
		runCmd(t, append(append([]string{"rewards", "--out", out("rewards"), "--format", "jsonl"}, flags...), runs...)...)
		runCmd(t, append(append([]string{"export", "--table", "kto", "--out", out("kto"), "--format", "jsonl"}, flags...), runs...)...)
		for _, e := range []export{{"pairs", "dpo", "chosen", "rest"}, {"pairs", "dpo", "rejected", "rest"}, {"rewards", "rewards", "completion", "turn"}, {"kto", "kto", "completion", "turn"}} {
			want := layout
			if want == "" {
				want = e.dflt
			}
			others := 0
			for i, r := range jsonlRows(t, filepath.Join(out(e.folder), "jsonl", e.table+".jsonl")) {
				ms := messages(t, r[e.col])
				require.NotEmpty(t, ms, "%s row %d", e.folder, i)
				assistants := 0
				for _, m := range ms {
					if m["role"] != "assistant" {
						others++
					} else {
						assistants++
					}
				}
				if want == "turn" {
					assert.Equal(t, 1, assistants, "%s %s row %d: one model turn per row", e.folder, e.col, i)
				}
			}
			switch want {
			case "rest":
				assert.Positive(t, others, "%s %s: rest keeps the tool results", e.folder, e.col)
			default:
				assert.Zero(t, others, "%s %s (%s): only model-written turns", e.folder, e.col, want)
			}
			man, err := os.ReadFile(filepath.Join(out(e.folder), "manifest.json"))
			require.NoError(t, err)
			assert.Contains(t, string(man), `"completion": "`+want+`"`, e.folder)
			card, err := os.ReadFile(filepath.Join(out(e.folder), "README.md"))
			require.NoError(t, err)
			assert.Contains(t, string(card), "**Layout of this file:**", e.folder)
			assert.Contains(t, string(card), "`--completion "+want+"`", e.folder)
			if want == "model-turns" {
				assert.Contains(t, string(card), "**Warning:** `--completion model-turns`", e.folder)
			}
		}
	}
	code, _, stderr := runScenarios(t, "export", runs[0], "--table", "kto", "--out", filepath.Join(dir, "bad"), "--completion", "tools")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `completion "tools": want turn, rest or model-turns`)
}

// TestToolsInSystem: with --tools-in-system every native row's system
// message lists the schemas its tools column would have held, byte for
// byte, and the tools column is empty.
func TestToolsInSystem(t *testing.T) {
	dir, runs := tableRuns(t)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "plain"), "--format", "jsonl"}, runs...)...)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "tis"), "--format", "parquet,jsonl", "--tools-in-system"}, runs...)...)
	plain := map[string][]json.RawMessage{}
	for _, r := range jsonlRows(t, filepath.Join(dir, "plain", "jsonl", "dpo.jsonl")) {
		var tools []json.RawMessage
		require.NoError(t, json.Unmarshal(r["tools"], &tools))
		plain[jstr(t, r["pair_id"])] = tools
	}
	rows := jsonlRows(t, filepath.Join(dir, "tis", "jsonl", "dpo.jsonl"))
	require.Len(t, rows, len(plain))
	for i, r := range rows {
		var tools []json.RawMessage
		require.NoError(t, json.Unmarshal(r["tools"], &tools))
		assert.Empty(t, tools, "row %d", i)
		sys := messages(t, r["prompt"])[0]
		require.Equal(t, "system", sys["role"], "row %d", i)
		want := plain[jstr(t, r["pair_id"])]
		require.NotEmpty(t, want)
		for _, tl := range want {
			assert.Contains(t, sys["content"], string(tl), "row %d: the schema as sent", i)
		}
	}
	card, err := os.ReadFile(filepath.Join(dir, "tis", "README.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(card), "export with --tools-in-system")
	assert.Contains(t, string(card), `cols = ["prompt", "chosen", "rejected"]  # the tool schemas are in each row's system message`)
	man, err := os.ReadFile(filepath.Join(dir, "tis", "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(man), `"tools_in_system"`)
}
