package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/pareto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// family is the pareto package's fixture: four checkpoints on two
// scenarios, each scenario with the same outcomes (exact intervals).
var family = []struct {
	name string
	step int
}{{"base", 0}, {"dpo", 1}, {"worse", 2}, {"cautious", 3}}

func build(t *testing.T) *Report {
	t.Helper()
	var dirs []string
	for _, c := range family {
		dirs = append(dirs, filepath.Join("..", "pareto", "testdata", "runs", c.name))
	}
	runs, err := metrics.ReadRuns(dirs)
	require.NoError(t, err)
	b := metrics.Bootstrap{Seed: 1, Replicates: 200}
	res, err := metrics.Score(runs, metrics.Options{Bootstrap: b}, []string{"../metrics/testdata/scenarios"})
	require.NoError(t, err)
	var ins []pareto.Input
	for _, g := range res.Groups {
		for _, c := range family {
			if g.Key(metrics.ByCheckpoint) == c.name {
				ins = append(ins, pareto.FromGroup(g, c.step))
			}
		}
	}
	an, err := pareto.Analyze(ins, b)
	require.NoError(t, err)
	rep, err := New("Fixture report", []string{"base", "dpo", "worse", "cautious"}, "from the test", res, an)
	require.NoError(t, err)
	return rep
}

func TestReportFiles(t *testing.T) {
	rep := build(t)
	dir := t.TempDir()
	require.NoError(t, rep.Write(dir))
	// The fixture drifts: every chart but the sweep's is drawn.
	assert.Equal(t, Files[:len(Files)-2], rep.Files)
	for _, f := range rep.Files {
		info, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}

	// report.json: the points, front, hypervolume and moves.
	var js map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	points := js["points"].([]any)
	require.Len(t, points, 4)
	last := points[3].(map[string]any)
	for _, k := range []string{"checkpoint", "step", "dr", "dr_annotated", "csr", "tsr", "ccsr", "dr_ci", "dr_annotated_ci", "csr_ci", "tsr_ci", "ccsr_ci", "on_front", "collapse"} {
		assert.Contains(t, last, k)
	}
	assert.Equal(t, "cautious", last["checkpoint"])
	assert.Equal(t, false, last["collapse"], "two scenarios cannot make a collapse significant")
	assert.InDelta(t, 0.625, js["hypervolume"], 1e-12)
	assert.Len(t, js["hypervolume_ci"], 2)
	assert.Equal(t, 1.0, last["front_probability"])
	assert.Equal(t, 12.0, js["comparisons"])
	assert.Equal(t, "Holm", js["correction"])
	assert.Len(t, js["moves"], 3)

	// The PNGs decode at 150 dpi; the SVGs are well-formed XML.
	for name, w := range map[string]int{"pareto": 1500, "drift_by_domain": 1500, "drift_positions": 1620} {
		f, err := os.Open(filepath.Join(dir, name+".png"))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		assert.Equal(t, w, img.Bounds().Dx(), name)
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		require.NoError(t, err)
		dec := xml.NewDecoder(bytes.NewReader(svg))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, name+".svg")
		}
	}

	// report.html is self-contained: images inline, nothing fetched.
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(html), `src="data:image/png;base64,`))
	assert.NotContains(t, string(html), "http://")
	assert.NotContains(t, string(html), "https://")
	assert.NotContains(t, string(html), "ZgotmplZ")
	assert.Contains(t, string(html), "<th>DR_annotated [95% CI]</th>")
	assert.Contains(t, string(html), "<th>P(front)</th>")
	assert.Contains(t, string(html), "12 comparisons")
	dd := js["drift_by_domain"].([]any)[0].(map[string]any)
	assert.Contains(t, dd, "dr_annotated")

	// report.md against its golden file.
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	golden := filepath.Join("testdata", "report.md.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, md, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(md), "report.md differs from %s (rerun with -update if the change is intended)", golden)
}

func TestReportIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ra := build(t)
	require.NoError(t, ra.Write(a))
	require.NoError(t, build(t).Write(b))
	for _, f := range ra.Files {
		x, err := os.ReadFile(filepath.Join(a, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, f))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(x, y), "%s differs between two writes of the same report", f)
	}
}

func TestAxisRangeAndTicks(t *testing.T) {
	lo, hi := axisRange(0.31, 0.42)
	assert.InDelta(t, 0.2, lo, 1e-12)
	assert.InDelta(t, 0.5, hi, 1e-12)
	lo, hi = axisRange(0, 0.98)
	assert.Equal(t, 0.0, lo)
	assert.Equal(t, 1.0, hi)
	var labels []string
	for _, tk := range (tenths{}).Ticks(0.2, 0.5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"0.2", "0.3", "0.4", "0.5"}, labels)
}

// TestCollapseIsStatedWithItsProbability: a collapse flag reads with its
// corrected test and the share of resamples in which DR and CCSR fall.
func TestCollapseIsStatedWithItsProbability(t *testing.T) {
	rep := build(t)
	m := rep.Moves[2]
	m.Collapse, rep.Points[3].Collapse = true, true
	md := rep.markdown()
	assert.Contains(t, md, "**Capability collapse at cautious**")
	assert.Contains(t, md, "DR and CCSR both fall in 100% of resamples")
	assert.Contains(t, md, "Holm p")
	assert.Contains(t, md, "cautious (P 1.00)")
}
