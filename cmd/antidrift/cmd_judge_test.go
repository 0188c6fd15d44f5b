package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// smallRun rolls a simulated policy out into a new folder.
func smallRun(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"rollout", "--policy", "sim:base", "--rollouts", "3", "--limit", "4", "--out", dir, "--json"}, extra...)
	code, _, stderr := runScenarios(t, args...)
	require.Equal(t, 0, code, stderr)
	return dir
}

func records(t *testing.T, dir string) []trajectory.Record {
	t.Helper()
	var out []trajectory.Record
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		out = append(out, *it.At())
	}
	require.NoError(t, it.Err())
	return out
}

func TestJudgeRuleReproducesTheRecordLabels(t *testing.T) {
	for _, fw := range []string{"normal", "react", "plan-exec", "gated"} {
		t.Run(fw, func(t *testing.T) {
			dir := smallRun(t, "--framework", fw)
			code, stdout, stderr := runScenarios(t, "judge", dir, "--judge", "rule", "--json")
			require.Equal(t, 0, code, stderr)
			var sum judgeSummary
			require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
			assert.Equal(t, "rule", sum.Labeling)
			assert.Equal(t, 12, sum.Records)

			ls, err := labels.Read(dir, "rule")
			require.NoError(t, err)
			recs := records(t, dir)
			require.Len(t, ls, len(recs))
			for i, r := range recs {
				assert.Equal(t, labels.Label{TrajID: r.TrajID, ScenarioID: r.ScenarioID, Success: r.Success, Judge: r.Judge, RecordStart: r.Timings.Start}, ls[i])
			}
			m, err := labels.ReadManifest(dir, "rule")
			require.NoError(t, err)
			assert.Equal(t, "rule", m.Kind)
			assert.Equal(t, 12, m.Records)

			code, stdout, stderr = runScenarios(t, "judge-agreement", dir, "--json")
			require.Equal(t, 0, code, stderr)
			var rep map[string]any
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
			assert.Equal(t, "record", rep["a"])
			assert.Equal(t, "rule", rep["b"])
			assert.Equal(t, 12.0, rep["n"])
			assert.Equal(t, 1.0, rep["agreement"])
		})
	}
}

func TestJudgeNeverOverwritesSilently(t *testing.T) {
	dir := smallRun(t)
	code, _, stderr := runScenarios(t, "judge", dir, "--judge", "rule")
	require.Equal(t, 0, code, stderr)
	before, err := os.ReadFile(labels.Path(dir, "rule"))
	require.NoError(t, err)

	code, _, stderr = runScenarios(t, "judge", dir, "--judge", "rule")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `labeling "rule" already exists`)
	after, err := os.ReadFile(labels.Path(dir, "rule"))
	require.NoError(t, err)
	assert.Equal(t, before, after)

	code, stdout, stderr := runScenarios(t, "judge", dir, "--judge", "rule", "--force")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "replaced")
	backups, _ := filepath.Glob(filepath.Join(dir, labels.Dir, "rule.replaced-*.jsonl"))
	require.Len(t, backups, 1)
	b, err := os.ReadFile(backups[0])
	require.NoError(t, err)
	assert.Equal(t, before, b, "the backup is the old labeling")

	// Another name sits beside it.
	code, _, stderr = runScenarios(t, "judge", dir, "--judge", "rule", "--name", "rule-again")
	require.Equal(t, 0, code, stderr)
	names, err := labels.List(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"rule", "rule-again"}, names)
	// With two labelings, judge-agreement wants --b.
	code, _, stderr = runScenarios(t, "judge-agreement", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "choose one with --b")
	code, stdout, stderr = runScenarios(t, "judge-agreement", dir, "--a", "rule", "--b", "rule-again")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `agreement\s+1\.000`, stdout)
}

func TestJudgeBadInput(t *testing.T) {
	dir := smallRun(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"judge", t.TempDir(), "--judge", "rule"}, "not a run folder"},
		{[]string{"judge", dir, "--judge", "llm"}, `invalid --judge "llm"`},
		{[]string{"judge", dir, "--judge", "openai:m"}, "needs --base-url"},
		{[]string{"judge", dir, "--judge", "rule", "--name", "record"}, "reserved"},
		{[]string{"judge", dir, "--judge", "rule", "--scenarios", "../../rollout/scenario/testdata/valid/followup.json"}, "are not in"},
		{[]string{"judge-agreement", dir}, "no labeling to compare"},
		{[]string{"judge-agreement", dir, "--b", "nope"}, `no labeling "nope"`},
	} {
		code, _, stderr := runScenarios(t, tt.args...)
		assert.Equal(t, 1, code, "%v", tt.args)
		assert.Contains(t, stderr, tt.want, "%v", tt.args)
	}
	_, err := os.Stat(filepath.Join(dir, labels.Dir))
	assert.True(t, os.IsNotExist(err), "failed commands write no labeling")

	// Scenarios that changed since the run are refused unless given explicitly.
	m, err := store.ReadManifest(dir)
	require.NoError(t, err)
	m.Plan.ScenarioHash = "0000"
	require.NoError(t, store.WriteManifest(dir, m))
	code, _, stderr := runScenarios(t, "judge", dir, "--judge", "rule")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "changed since the run")
	code, _, stderr = runScenarios(t, "judge", dir, "--judge", "rule", "--scenarios", "builtin")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "warning: the scenarios given differ")
}

// llmJudgeServer answers like a judge model: a verdict on whether the
// simulated agent said it was done, with quirks by scenario: scenario
// needsFix answers in prose first (fixed by the corrective retry), scenario
// hopeless never gives a verdict.
func llmJudgeServer(t *testing.T, key, needsFix, hopeless string) *fakeserver.Server {
	return fakeserver.Start(t, fakeserver.Options{APIKey: key, Handler: func(r *fakeserver.Request) fakeserver.Reply {
		prompt := r.Messages[1].Content
		last := r.Messages[len(r.Messages)-1].Content
		switch {
		case strings.Contains(prompt, hopeless):
			return fakeserver.Text("I would need to see more before I can say.")
		case strings.Contains(prompt, needsFix) && !strings.Contains(last, "could not be read as a verdict"):
			return fakeserver.Text("Looks fine to me overall.")
		case strings.Contains(prompt, "] Done."):
			return fakeserver.Text("```json\n{\"success\": true, \"score\": 0.9, \"reason\": \"The agent finished.\"}\n```")
		default:
			return fakeserver.Text(`Verdict: {"success": false, "score": 0.1, "reason": "Unfinished."} That is all.`)
		}
	}})
}

func TestJudgeLLMAgainstFakeServer(t *testing.T) {
	const key = "sk-judge-3b1f9e7d5c"
	t.Setenv("ANTIDRIFT_JUDGE_KEY", key)
	dir := smallRun(t)
	recs := records(t, dir)
	ss := builtinScenarios(t)
	instr := map[string]string{}
	for _, s := range ss {
		instr[s.ID] = s.Instruction
	}
	ids := map[string]bool{}
	for _, r := range recs {
		ids[r.ScenarioID] = true
	}
	sorted := sortedKeys(ids)
	require.Len(t, sorted, 4)
	needsFix, hopeless := sorted[1], sorted[3]
	srv := llmJudgeServer(t, key, instr[needsFix], instr[hopeless])

	args := []string{"judge", dir, "--judge", "openai:judge-m", "--skip-endpoint-check", "--base-url", srv.URL(), "--api-key-env", "ANTIDRIFT_JUDGE_KEY", "--concurrency", "4", "--max-retries", "0"}
	code, stdout, stderr := runScenarios(t, append(args, "--json")...)
	require.Equal(t, 0, code, "unparseable verdicts are data, not an endpoint failure: %s", stderr)
	var sum judgeSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, "openai-judge-m", sum.Labeling)
	assert.Equal(t, "llm:judge-m", sum.Kind)
	assert.Equal(t, len(recs), sum.Records)
	assert.Equal(t, 3, sum.Unparseable, "the hopeless scenario's three rollouts")
	assert.Zero(t, sum.EndpointErr)
	assert.Positive(t, sum.Corrections)
	assert.Empty(t, srv.Violations())

	ls, err := labels.Read(dir, "openai-judge-m")
	require.NoError(t, err)
	require.Len(t, ls, len(recs))
	for i, l := range ls {
		r := recs[i]
		require.Equal(t, r.TrajID, l.TrajID)
		assert.Equal(t, "llm:judge-m", l.Judge.Kind)
		last := ""
		for _, m := range r.Messages {
			if m.Role == trajectory.RoleAssistant && m.Content != "" {
				last = m.Content
			}
		}
		switch {
		case r.ScenarioID == hopeless:
			assert.False(t, l.Success, "an unparseable verdict is never a success")
			assert.Contains(t, l.Error, "unparseable verdict")
			assert.Zero(t, l.Judge.Score)
		default:
			assert.Empty(t, l.Error)
			assert.Equal(t, strings.Contains(last, "] Done."), l.Success, "%s: %s", r.ScenarioID, last)
		}
	}

	// The judge never saw a drift step. A count constraint makes the same
	// call clean the first time and drifting the second, so only drifting
	// calls no record also makes cleanly are looked for.
	callLine := func(tc trajectory.ToolCall) string {
		line, _ := json.Marshal("-> calls " + tc.Function.Name + "(" + string(tc.Function.Parsed) + ")")
		return strings.Trim(string(line), `"`)
	}
	clean := map[string]bool{}
	for _, r := range recs {
		for _, m := range r.Messages {
			for _, tc := range m.ToolCalls {
				if !judgeDrifting(r, tc.ID) {
					clean[callLine(tc)] = true
				}
			}
		}
	}
	for _, req := range srv.Requests() {
		assert.Equal(t, 0.0, *req.Temperature)
		body := string(req.Raw)
		for _, r := range recs {
			for _, m := range r.Messages {
				for _, tc := range m.ToolCalls {
					if judgeDrifting(r, tc.ID) && !clean[callLine(tc)] {
						assert.NotContains(t, body, callLine(tc), "a drifting call reached the judge")
					}
				}
			}
		}
	}

	// Second pass: every verdict comes from the cache; only the prompts
	// that gave no verdict are asked again.
	n := srv.Count()
	code, stdout, stderr = runScenarios(t, append(args, "--json", "--force")...)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	for _, req := range srv.Requests()[n:] {
		assert.Contains(t, req.Messages[1].Content, instr[hopeless], "a request for a cached verdict")
	}
	assert.Equal(t, int64(len(recs)-3), sum.CacheHits)
	ls2, err := labels.Read(dir, "openai-judge-m")
	require.NoError(t, err)
	assert.Equal(t, ls, ls2)

	// The key is nowhere: not in the run folder (labelings, cache), not in the output.
	assert.NotContains(t, stdout+stderr, key)
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NotContains(t, string(b), key, path)
		}
		return nil
	}))
	m, err := labels.ReadManifest(dir, "openai-judge-m")
	require.NoError(t, err)
	assert.Equal(t, "ANTIDRIFT_JUDGE_KEY", m.APIKeyEnv)
	assert.Equal(t, srv.URL(), m.BaseURL)
	assert.Equal(t, 3, m.Errors)
	entries, _ := filepath.Glob(filepath.Join(dir, ".judge-cache", "*", "*.json"))
	assert.NotEmpty(t, entries)

	// Agreement between the records' rule labels and the LLM labeling.
	code, stdout, stderr = runScenarios(t, "judge-agreement", dir, "--b", "openai:judge-m", "--json")
	require.Equal(t, 0, code, stderr)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, "openai-judge-m", rep["b"])
	assert.Equal(t, float64(len(recs)-3), rep["n"])
	assert.Equal(t, 3.0, rep["errors_b"])
	code, stdout, _ = runScenarios(t, "judge-agreement", dir)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "kappa")
	assert.Contains(t, stdout, "a success")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func judgeDrifting(r trajectory.Record, id string) bool {
	for _, st := range r.Steps {
		for _, c := range st.Calls {
			if c.ID == id && c.Drift {
				return true
			}
		}
	}
	return false
}

func TestJudgeLLMCustomCacheAndFatalErrors(t *testing.T) {
	dir := smallRun(t)
	srv := llmJudgeServer(t, "sk-right", "no-such-text", "no-such-text-either")

	// A wrong key stops the command: nothing written, the key not shown.
	t.Setenv("ANTIDRIFT_JUDGE_KEY", "sk-wrong-77aa11")
	code, stdout, stderr := runScenarios(t, "judge", dir, "--judge", "openai:judge-m", "--skip-endpoint-check", "--base-url", srv.URL(), "--api-key-env", "ANTIDRIFT_JUDGE_KEY")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "authentication failed")
	assert.NotContains(t, stdout+stderr, "sk-wrong-77aa11")
	assert.False(t, labels.Exists(dir, "openai-judge-m"))

	// A cache folder of one's own, shared between runs.
	t.Setenv("ANTIDRIFT_JUDGE_KEY", "sk-right")
	cache := filepath.Join(t.TempDir(), "shared-cache")
	code, _, stderr = runScenarios(t, "judge", dir, "--judge", "openai:judge-m", "--skip-endpoint-check", "--base-url", srv.URL(), "--api-key-env", "ANTIDRIFT_JUDGE_KEY", "--cache", cache, "--name", "mine")
	require.Equal(t, 0, code, stderr)
	assert.True(t, labels.Exists(dir, "mine"))
	entries, _ := filepath.Glob(filepath.Join(dir, ".judge-cache", "*", "*.json"))
	assert.Empty(t, entries, "the default cache was not used")
	entries, _ = filepath.Glob(filepath.Join(cache, "*", "*.json"))
	assert.NotEmpty(t, entries)

	// An endpoint that fails (500, retries off) leaves errors in the labels and exits 2.
	down := fakeserver.Start(t, fakeserver.Options{Fallback: &fakeserver.Reply{Status: 500, ErrMessage: "boom"}})
	code, _, stderr = runScenarios(t, "judge", dir, "--judge", "openai:judge-m", "--skip-endpoint-check", "--base-url", down.URL(), "--max-retries", "0", "--no-cache", "--name", "down")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "rerun with --force")
	ls, err := labels.Read(dir, "down")
	require.NoError(t, err)
	for _, l := range ls {
		assert.False(t, l.Success)
		assert.NotEmpty(t, l.Error)
	}
}

func TestJudgeAgreementKappaFromTheCommand(t *testing.T) {
	// Two hand-made labelings with the textbook table: both success 20,
	// a only 5, b only 10, neither 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
	dir := t.TempDir()
	var a, b []labels.Label
	add := func(n int, sa, sb bool) {
		for i := 0; i < n; i++ {
			id := string(rune('a'+len(a)/26)) + string(rune('a'+len(a)%26))
			a = append(a, labels.Label{TrajID: id, ScenarioID: "s", Success: sa, Judge: trajectory.Judgement{Kind: "ka"}})
			b = append(b, labels.Label{TrajID: id, ScenarioID: "s", Success: sb, Judge: trajectory.Judgement{Kind: "kb", Reason: "because"}})
		}
	}
	add(20, true, true)
	add(5, true, false)
	add(10, false, true)
	add(15, false, false)
	_, err := labels.Write(dir, labels.Manifest{Name: "ja"}, a, false)
	require.NoError(t, err)
	_, err = labels.Write(dir, labels.Manifest{Name: "jb"}, b, false)
	require.NoError(t, err)

	code, stdout, stderr := runScenarios(t, "judge-agreement", dir, "--a", "ja", "--b", "jb", "--json")
	require.Equal(t, 0, code, stderr)
	var rep struct {
		N         int                   `json:"n"`
		Table     [2][2]int             `json:"table"`
		Agreement float64               `json:"agreement"`
		Expected  float64               `json:"expected_agreement"`
		Kappa     *float64              `json:"kappa"`
		KindA     string                `json:"kind_a"`
		Disagreed []labels.Disagreement `json:"disagreements"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, 50, rep.N)
	assert.Equal(t, [2][2]int{{15, 10}, {5, 20}}, rep.Table)
	assert.InDelta(t, 0.7, rep.Agreement, 1e-12)
	assert.InDelta(t, 0.5, rep.Expected, 1e-12)
	require.NotNil(t, rep.Kappa)
	assert.InDelta(t, 0.4, *rep.Kappa, 1e-12)
	assert.Equal(t, "ka", rep.KindA)
	assert.Len(t, rep.Disagreed, 15)

	code, stdout, _ = runScenarios(t, "judge-agreement", dir, "--a", "ja", "--b", "jb", "--show", "3")
	require.Equal(t, 0, code)
	for _, want := range []string{`\nn\s+50\n`, `agreement\s+0\.700`, `kappa\s+0\.400`, `by chance\s+0\.500`, `disagreements \(15, first 3; all with --json\)`} {
		assert.Regexp(t, want, stdout)
	}
	assert.Regexp(t, `a success\s+20\s+5`, stdout)
	assert.Regexp(t, `a failure\s+10\s+15`, stdout)

	// Identical constant labelings: agreement 1, kappa undefined.
	_, err = labels.Write(dir, labels.Manifest{Name: "jc"}, a[:20], false)
	require.NoError(t, err)
	code, stdout, _ = runScenarios(t, "judge-agreement", dir, "--a", "jc", "--b", "ja", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `"kappa": null`)
	code, stdout, _ = runScenarios(t, "judge-agreement", dir, "--a", "jc", "--b", "ja")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "undefined (both labelings give every trajectory the same label)")
}

// A labeling belongs to the run and the records it judged: copied into
// another run, or read after the records were rolled out again, it is
// refused by judge-agreement and by every overlay (score
// --labeling).
func TestLabelingCarriesRunIdentity(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for i, dir := range []string{a, b} {
		code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--seed", fmt.Sprint(i+1), "--out", dir)
		require.Equal(t, 0, code, stderr)
	}
	code, _, stderr := runScenarios(t, "judge", a, "--judge", "rule")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, "judge-agreement", a)
	require.Equal(t, 0, code, stderr)

	require.NoError(t, os.CopyFS(filepath.Join(b, labels.Dir), os.DirFS(filepath.Join(a, labels.Dir))))
	code, _, stderr = runScenarios(t, "judge-agreement", b)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "was made on run")
	assert.Contains(t, stderr, "copied from another run?")

	// The records rolled out again under the same ids (the trajectory
	// files removed, the same command rerun): the verdicts are not theirs.
	require.NoError(t, os.RemoveAll(filepath.Join(a, "trajectories")))
	code, _, stderr = runScenarios(t, "rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--seed", "1", "--out", a)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, "judge-agreement", a)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "judged an earlier version")
	code, _, stderr = runScenarios(t, "score", a, "--labeling", "rule")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "judged an earlier version")
}
