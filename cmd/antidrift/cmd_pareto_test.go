package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pareto package's fixture: base, dpo, worse, cautious (see
// rewards/pareto/pareto_test.go), on the metrics package's test scenarios.
const (
	paretoFixtures  = "../../rewards/pareto/testdata/runs"
	metricScenarios = "../../rewards/metrics/testdata/scenarios"
)

type reportJSON struct {
	StepSource string `json:"step_source"`
	Points     []struct {
		Checkpoint string   `json:"checkpoint"`
		Step       int      `json:"step"`
		DR         *float64 `json:"dr"`
		CSR        *float64 `json:"csr"`
		CCSR       *float64 `json:"ccsr"`
		OnFront    bool     `json:"on_front"`
		Collapse   bool     `json:"collapse"`
		HV         float64  `json:"hypervolume"`
		FrontP     float64  `json:"front_probability"`
	} `json:"points"`
	Front         []string   `json:"front"`
	Hypervolume   float64    `json:"hypervolume"`
	HypervolumeCI []*float64 `json:"hypervolume_ci"`
	Comparisons   int        `json:"comparisons"`
	Correction    string     `json:"correction"`
	Moves         []struct {
		From     string `json:"from"`
		To       string `json:"to"`
		Class    string `json:"class"`
		Collapse bool   `json:"collapse"`
	} `json:"moves"`
}

func readReport(t *testing.T, dir string) reportJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	var r reportJSON
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}

func checkpointsOf(r reportJSON) []string {
	var out []string
	for _, p := range r.Points {
		out = append(out, p.Checkpoint)
	}
	return out
}

func TestParetoCommand(t *testing.T) {
	runs := []string{filepath.Join(paretoFixtures, "base"), filepath.Join(paretoFixtures, "dpo"), filepath.Join(paretoFixtures, "worse"), filepath.Join(paretoFixtures, "cautious")}
	out := t.TempDir()
	stdout, err := scoreExec(t, append([]string{"pareto", "--out", out, "--scenarios", metricScenarios, "--bootstrap", "100"}, runs...)...)
	require.NoError(t, err)
	assert.Contains(t, stdout, "hypervolume 0.625 [")
	assert.Contains(t, stdout, "front: cautious (P 1.00), dpo (P 1.00)")
	assert.Contains(t, stdout, "moves: 12 comparisons, Holm-corrected")
	// Two scenarios: no change is significant once its interval is read.
	assert.Contains(t, stdout, "worse → cautious: no significant change")
	for _, f := range []string{"report.json", "report.md", "report.html", "pareto.svg", "pareto.png", "drift_by_domain.png", "drift_positions.svg"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	r := readReport(t, out)
	assert.Equal(t, []string{"base", "dpo", "worse", "cautious"}, checkpointsOf(r))
	assert.Contains(t, r.StepSource, "order of the run folders")
	assert.Equal(t, []string{"cautious", "dpo"}, r.Front)
	assert.InDelta(t, 0.625, r.Hypervolume, 1e-12)
	require.Len(t, r.Moves, 3)
	assert.Equal(t, []string{"no significant change", "no significant change", "no significant change"}, []string{r.Moves[0].Class, r.Moves[1].Class, r.Moves[2].Class})
	assert.False(t, r.Points[3].Collapse)
	assert.Equal(t, 12, r.Comparisons)
	assert.Equal(t, "Holm", r.Correction)
	assert.Equal(t, 1.0, r.Points[3].FrontP)
	require.Len(t, r.HypervolumeCI, 2)
	assert.NotNil(t, r.HypervolumeCI[0])

	// The order given decides the steps when nothing else does.
	out2 := t.TempDir()
	_, err = scoreExec(t, "pareto", "--out", out2, "--scenarios", metricScenarios, "--bootstrap", "100", runs[3], runs[2], runs[1], runs[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"cautious", "worse", "dpo", "base"}, checkpointsOf(readReport(t, out2)))

	// checkpoints.json gives the steps, matched by name.
	ck := filepath.Join(t.TempDir(), "checkpoints.json")
	require.NoError(t, os.WriteFile(ck, []byte(`[
  {"name": "base", "step": 100, "endpoint": "sim:base"},
  {"name": "dpo", "step": 300, "endpoint": "sim:dpo-1"},
  {"name": "worse", "step": 200, "endpoint": "sim:sft"},
  {"name": "cautious", "step": 400, "endpoint": "sim:overcautious"}
]`), 0o644))
	out3 := t.TempDir()
	_, err = scoreExec(t, append([]string{"pareto", "--out", out3, "--scenarios", metricScenarios, "--bootstrap", "100", "--checkpoints", ck}, runs...)...)
	require.NoError(t, err)
	r3 := readReport(t, out3)
	assert.Equal(t, []string{"base", "worse", "dpo", "cautious"}, checkpointsOf(r3))
	assert.Equal(t, 300, r3.Points[2].Step)
	// Named relative to the report folder, as the runs are.
	rel, err := filepath.Rel(out3, ck)
	require.NoError(t, err)
	assert.Equal(t, "from "+rel, r3.StepSource)
	assert.False(t, filepath.IsAbs(rel))

	// Steps recorded in every manifest win over the order given.
	var copies []string
	for i, r := range runs {
		dst := filepath.Join(t.TempDir(), filepath.Base(r))
		require.NoError(t, os.CopyFS(dst, os.DirFS(r)))
		mpath := filepath.Join(dst, "manifest.json")
		b, err := os.ReadFile(mpath)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		m["step"] = 10 * (len(runs) - i)
		b, err = json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(mpath, b, 0o644))
		copies = append(copies, dst)
	}
	out4 := t.TempDir()
	_, err = scoreExec(t, append([]string{"pareto", "--out", out4, "--scenarios", metricScenarios, "--bootstrap", "100"}, copies...)...)
	require.NoError(t, err)
	r4 := readReport(t, out4)
	assert.Equal(t, []string{"cautious", "worse", "dpo", "base"}, checkpointsOf(r4))
	assert.Equal(t, "from the run manifests", r4.StepSource)

	// A checkpoint missing from --checkpoints is an error naming the file.
	require.NoError(t, os.WriteFile(ck, []byte(`[{"name": "base", "step": 1, "endpoint": "sim:base"}]`), 0o644))
	_, err = scoreExec(t, append([]string{"pareto", "--out", t.TempDir(), "--scenarios", metricScenarios, "--checkpoints", ck}, runs...)...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `checkpoint "cautious" of the runs is not in `+ck)
}
