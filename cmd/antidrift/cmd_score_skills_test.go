package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/antidrift/antidrift/rewards/skills"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScoreSelectRuns(t *testing.T) {
	sel := t.TempDir()
	require.Equal(t, 0, run([]string{"select", "--task", "skill", "--library", "builtin:finance", "--policy", "sim:sft", "--out", sel, "--json"}))
	roll := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--out", roll, "--json"}))

	code, stdout, stderr := runScenarios(t, "score", sel, "--json")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Groups []json.RawMessage `json:"groups"`
		Skills skills.Result     `json:"skills"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.Empty(t, res.Groups)
	require.NotEmpty(t, res.Skills.Rows)
	assert.Equal(t, "sim:sft", res.Skills.Rows[0].Checkpoint)
	assert.Equal(t, 240, res.Skills.Rows[0].N)

	// Mixed: the trajectory metrics and the skills section side by side.
	code, stdout, stderr = runScenarios(t, "score", roll, sel)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "least-privilege skill selection")
	assert.Contains(t, stdout, "lexical_ambiguous")
	assert.Contains(t, stdout, "sim:base")
}

func TestRescoreWithSelectTasks(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "checkpoints.json")
	require.NoError(t, os.WriteFile(ck, []byte(`[{"name": "base", "step": 0, "endpoint": "sim:base"}, {"name": "dpo-2", "step": 2, "endpoint": "sim:dpo-2"}]`), 0o644))
	out := filepath.Join(dir, "out")
	code, _, stderr := runScenarios(t, "rescore", "--checkpoints", ck, "--out", out, "--rollouts", "1", "--limit", "3",
		"--select-task", "skill", "--library", "builtin:filesystem", "--bootstrap", "100")
	require.Equal(t, 0, code, stderr)
	html, err := os.ReadFile(filepath.Join(out, "report", "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), "Least-privilege skill selection")
	assert.Contains(t, string(html), "<svg")
	var rep struct {
		Skills *skills.Result `json:"skills"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report", "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.NotNil(t, rep.Skills)
	fr := map[string]float64{}
	for _, r := range rep.Skills.Rows {
		if r.Domain == skills.All && r.Setting == skills.All {
			fr[r.Checkpoint] = float64(r.FR)
		}
	}
	assert.Less(t, fr["dpo-2"], fr["base"], "the trained checkpoint fails less")
}
