package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards/report"
)

func sweep(t *testing.T, out string, extra ...string) string {
	t.Helper()
	args := append([]string{"sweep", "--policy", "sim:gullible", "--scenarios", "builtin:gating", "--rollouts", "2",
		"--risk-lambda", "0,1,4", "--bootstrap", "100", "--out", out}, extra...)
	code, stdout, stderr := runScenarios(t, args...)
	require.Equal(t, 0, code, stderr)
	return stdout
}

// TestSweepFrontIsMonotoneOrExplainedAndDeterministic: the λ front over
// the gating suite, its intervals, and byte-identical reports for one seed.
func TestSweepFrontIsMonotoneOrExplainedAndDeterministic(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	out := sweep(t, a)
	assert.Contains(t, out, "monotone in λ")
	sweep(t, b)
	for _, f := range append(append([]string(nil), report.Files...), "gating_front.svg", "gating_front.png") {
		x, err := os.ReadFile(filepath.Join(a, "report", f))
		require.NoError(t, err, f)
		y, err := os.ReadFile(filepath.Join(b, "report", f))
		require.NoError(t, err, f)
		assert.Equal(t, x, y, "%s differs between two sweeps with one seed", f)
	}
	raw, err := os.ReadFile(filepath.Join(a, "report", "report.json"))
	require.NoError(t, err)
	var rep report.Report
	require.NoError(t, json.Unmarshal(raw, &rep))
	g := rep.Gating
	require.NotNil(t, g)
	require.Len(t, g.Lambda, 3)
	// Either the front is monotone (more penalty: no more high-risk
	// surface, no more success) or every break is explained.
	assert.True(t, g.Monotone || len(g.Explanation) > 0)
	for i, p := range g.Lambda {
		assert.True(t, p.TSR.CI[0].Defined() && p.TSR.CI[1].Defined(), "λ %g: TSR interval", p.Lambda)
		assert.LessOrEqual(t, float64(p.TSR.CI[0]), float64(p.TSR.Value))
		assert.True(t, p.HighRisk.CI[0].Defined(), "λ %g: surface interval", p.Lambda)
		assert.Zero(t, float64(p.Unauthorized.Value), "gated never exposes an unauthorised risky tool")
		if i > 0 {
			assert.LessOrEqual(t, float64(p.HighRisk.Value), float64(g.Lambda[i-1].HighRisk.Value)+1e-12)
		}
	}
	// λ = 4 prefers the payments tasks' medium-risk draft route, which
	// hides pay_invoice: less high-risk surface, less success.
	assert.Less(t, float64(g.Lambda[2].HighRisk.Value), float64(g.Lambda[0].HighRisk.Value))
	assert.Less(t, float64(g.Lambda[2].TSR.Value), float64(g.Lambda[0].TSR.Value))
	assert.Positive(t, g.HypervolumeSurface)
	assert.Positive(t, g.HypervolumeDR)

	// Rerunning resumes: nothing new is rolled out and the report is the same.
	sweep(t, a)
	y, err := os.ReadFile(filepath.Join(a, "report", "report.json"))
	require.NoError(t, err)
	assert.Equal(t, raw, y)
}

func TestSweepRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--risk-lambda", "0,-1"},
		{"--risk-lambda", "1,1"},
		{"--framework", "normal"},
		{"--risk-weights", "high=x"},
	} {
		code, _, stderr := runScenarios(t, append([]string{"sweep", "--policy", "sim:gullible", "--scenarios", "builtin:gating", "--out", dir}, args...)...)
		assert.NotEqual(t, 0, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
}
