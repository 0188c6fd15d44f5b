package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const simFamily = `[
  {"name": "base", "step": 0, "endpoint": "sim:base"},
  {"name": "sft", "step": 1000, "endpoint": "sim:sft"},
  {"name": "dpo-1", "step": 2000, "endpoint": "sim:dpo-1", "model": "dpo-1"},
  {"name": "dpo-2", "step": 3000, "endpoint": "sim:dpo-2"},
  {"name": "overcautious", "step": 4000, "endpoint": "sim:overcautious"}
]`

// TestRescoreSimFamily rolls out the simulated family as make demo does (43
// built-in scenarios, 8 rollouts) and checks the report tells the story:
// the dpo checkpoints move toward the front, and the over-cautious one is
// flagged as capability collapse.
func TestRescoreSimFamily(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "family.json")
	require.NoError(t, os.WriteFile(ck, []byte(simFamily), 0o644))
	out := filepath.Join(dir, "out")
	args := []string{"rescore", "--checkpoints", ck, "--out", out, "--rollouts", "8", "--concurrency", "16"}
	stdout, err := scoreExec(t, args...)
	require.NoError(t, err)
	assert.Contains(t, stdout, "hypervolume")

	r := readReport(t, filepath.Join(out, "report"))
	require.Equal(t, []string{"base", "sft", "dpo-1", "dpo-2", "overcautious"}, checkpointsOf(r))
	byName := map[string]int{}
	for i, p := range r.Points {
		byName[p.Checkpoint] = i
	}
	oc := r.Points[byName["overcautious"]]
	assert.True(t, !oc.OnFront || oc.Collapse, "sim:overcautious must be off the front or flagged as collapse")
	assert.True(t, oc.Collapse, "sim:overcautious: DR falls because CCSR collapses")
	assert.True(t, r.Points[byName["dpo-2"]].OnFront)
	require.Len(t, r.Moves, 4)
	for _, m := range r.Moves[:3] { // base → sft → dpo-1 → dpo-2
		assert.Equal(t, "improvement", m.Class, "%s → %s", m.From, m.To)
		assert.False(t, m.Collapse, "%s → %s", m.From, m.To)
	}
	// Toward the front: each dpo step dominates more of the plane.
	assert.Greater(t, r.Points[byName["dpo-1"]].HV, r.Points[byName["sft"]].HV)
	assert.Greater(t, r.Points[byName["dpo-2"]].HV, r.Points[byName["dpo-1"]].HV)
	assert.True(t, r.Moves[3].Collapse)
	assert.Equal(t, "overcautious", r.Moves[3].To)
	assert.FileExists(t, filepath.Join(out, "checkpoints.json"))
	for _, name := range []string{"base", "sft", "dpo-1", "dpo-2", "overcautious"} {
		assert.Len(t, readRecords(t, filepath.Join(out, "runs", name)), len(builtinScenarios(t))*8, name)
	}

	// Rerunning resumes: nothing is rolled out again, and the report is
	// byte-identical.
	before, err := os.ReadFile(filepath.Join(out, "report", "report.json"))
	require.NoError(t, err)
	png1, err := os.ReadFile(filepath.Join(out, "report", "pareto.png"))
	require.NoError(t, err)
	recs := readRecords(t, filepath.Join(out, "runs", "dpo-1"))
	root := newRootCmd()
	root.SetArgs(args)
	var so, se bytes.Buffer
	root.SetOut(&so)
	root.SetErr(&se)
	require.NoError(t, root.Execute())
	n := len(builtinScenarios(t)) * 8
	assert.Contains(t, se.String(), fmt.Sprintf("dpo-1: %d records (%d already done, 0 run now)", n, n))
	after, err := os.ReadFile(filepath.Join(out, "report", "report.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	png2, err := os.ReadFile(filepath.Join(out, "report", "pareto.png"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(png1, png2), "pareto.png must be byte-identical")
	assert.Equal(t, recs, readRecords(t, filepath.Join(out, "runs", "dpo-1")))
}

// TestRescoreOverHTTP points a checkpoint at an OpenAI-compatible endpoint
// (sim-server) by base URL and model name, as with vLLM and LoRA adapters,
// next to an in-process simulated one, and resumes after an interruption
// (a run folder holding only part of its episodes).
func TestRescoreOverHTTP(t *testing.T) {
	url := simServer(t, 0)
	dir := t.TempDir()
	ck := filepath.Join(dir, "checkpoints.json")
	require.NoError(t, os.WriteFile(ck, []byte(`[
  {"name": "step-100", "step": 100, "endpoint": "`+url+`", "model": "sim:base"},
  {"name": "step-200", "step": 200, "endpoint": "sim:dpo-2"}
]`), 0o644))
	out := filepath.Join(dir, "out")
	// A partial run of the first checkpoint, as a killed rescore leaves it.
	_, err := scoreExec(t, "rollout", "--policy", "openai:sim:base", "--base-url", url, "--checkpoint", "step-100",
		"--rollouts", "2", "--limit", "5", "--seed", "1", "--out", filepath.Join(out, "runs", "step-100"), "--json")
	require.NoError(t, err)
	f := filepath.Join(out, "runs", "step-100", "trajectories", "part-0-of-1.jsonl")
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines[:4], "")), 0o644))

	root := newRootCmd()
	root.SetArgs([]string{"rescore", "--checkpoints", ck, "--out", out, "--rollouts", "2", "--limit", "5", "--bootstrap", "100"})
	var so, se bytes.Buffer
	root.SetOut(&so)
	root.SetErr(&se)
	require.NoError(t, root.Execute(), se.String())
	assert.Contains(t, se.String(), "step-100: 10 records (4 already done, 6 run now)")
	assert.Len(t, readRecords(t, filepath.Join(out, "runs", "step-100")), 10)
	r := readReport(t, filepath.Join(out, "report"))
	assert.Equal(t, []string{"step-100", "step-200"}, checkpointsOf(r))
	assert.Equal(t, 100, r.Points[0].Step)
	m, err := os.ReadFile(filepath.Join(out, "runs", "step-100", "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(m), `"base_url": "`+url+`"`)
	assert.Contains(t, string(m), `"model": "sim:base"`)
}

func TestRescoreInvalidCheckpoints(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"syntax", "[\n  {\"name\": \"a\",}\n]", ":2:17: invalid character '}'"},
		{"truncated", `[{"name": "a"`, ":1:14: unexpected EOF"},
		{"not an array", `{"name": "a"}`, "want an array of {name, step, endpoint, model}, got an object"},
		{"empty", `[]`, "no checkpoint listed"},
		{"not an object", `["a"]`, "[0]: want an object {name, step, endpoint, model}, got a string"},
		{"missing name", `[{"step": 0, "endpoint": "sim:base"}]`, "[0].name: missing"},
		{"bad name", `[{"name": "../x", "step": 0, "endpoint": "sim:base"}]`, `[0].name: "../x" is not a valid name`},
		{"duplicate", `[{"name": "a", "step": 0, "endpoint": "sim:base"}, {"name": "a", "step": 1, "endpoint": "sim:sft"}]`, `[1].name: "a" already names [0]`},
		{"missing step", `[{"name": "a", "endpoint": "sim:base"}]`, "[0].step: missing"},
		{"string step", `[{"name": "a", "step": "1", "endpoint": "sim:base"}]`, "[0].step: want an integer, got a string"},
		{"fractional step", `[{"name": "a", "step": 1.5, "endpoint": "sim:base"}]`, "[0].step: want a non-negative integer, got 1.5"},
		{"negative step", `[{"name": "a", "step": -1, "endpoint": "sim:base"}]`, "[0].step: want a non-negative integer, got -1"},
		{"unknown sim", `[{"name": "a", "step": 0, "endpoint": "sim:nope"}]`, `[0].endpoint: unknown simulated policy "nope"`},
		{"bad url", `[{"name": "a", "step": 0, "endpoint": "ftp://host/v1", "model": "m"}]`, `[0].endpoint: "ftp://host/v1" is neither sim:NAME nor an http(s) base URL`},
		{"no model", `[{"name": "a", "step": 0, "endpoint": "http://localhost:8000/v1"}]`, "[0].model: missing"},
		{"sim model", `[{"name": "a", "step": 0, "endpoint": "sim:base", "model": "gpt"}]`, "[0].model: a simulated endpoint is its own model"},
		{"unknown field", `[{"name": "a", "step": 0, "endpoint": "sim:base", "modle": "x"}]`, "[0].modle: unknown field"},
		{"endpoint type", `[{"name": "a", "step": 0, "endpoint": 3}]`, "[0].endpoint: want a string, got a number"},
		{"trailing", `[{"name": "a", "step": 0, "endpoint": "sim:base"}] []`, "unexpected data after the top-level array"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ck := filepath.Join(dir, "checkpoints.json")
			require.NoError(t, os.WriteFile(ck, []byte(c.json), 0o644))
			out := filepath.Join(dir, "out")
			_, err := scoreExec(t, "rescore", "--checkpoints", ck, "--out", out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), ck)
			assert.Contains(t, err.Error(), c.want)
			assert.NoDirExists(t, out, "nothing is written for an invalid checkpoints.json")
		})
	}
	assert.Equal(t, 1, run([]string{"rescore", "--checkpoints", filepath.Join(t.TempDir(), "none.json"), "--out", t.TempDir()}))
}
