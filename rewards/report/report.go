package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/pareto"
	"github.com/antidrift/antidrift/rewards/skills"
	"github.com/antidrift/antidrift/rollout/scenario"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// Report is report.json.
type Report struct {
	Title       string          `json:"title"`
	Runs        []string        `json:"runs"`
	StepSource  string          `json:"step_source"`
	K           int             `json:"k"`
	Points      []*pareto.Point `json:"points"`
	Front       []string        `json:"front"`
	Hypervolume float64         `json:"hypervolume"`
	// HypervolumeCI: paired scenario bootstrap (pareto.Report).
	HypervolumeCI metrics.CI     `json:"hypervolume_ci"`
	Reference     [2]float64     `json:"reference"`
	Moves         []*pareto.Move `json:"moves"`
	// Comparisons is the number of paired tests the correction covers.
	Comparisons int           `json:"comparisons"`
	Correction  string        `json:"correction"`
	Bootstrap   BootstrapInfo `json:"bootstrap"`
	Domains     []string      `json:"domains"`
	// DriftByDomain holds, per checkpoint (in point order), DR and
	// DR_annotated per domain.
	DriftByDomain []DomainDrift `json:"drift_by_domain"`
	// Positions holds, per checkpoint, the drift-position densities.
	Positions []PositionDensity `json:"drift_positions"`
	Files     []string          `json:"files"`
	// Skills holds the least-privilege selection metrics, when the report
	// covers select runs (rescore --select-task).
	Skills *skills.Result `json:"skills,omitempty"`
	// Gating is the gating section (filters side by side, the λ front),
	// when the report was given one (gating.go).
	Gating *Gating `json:"gating,omitempty"`
	// Partial lists the input runs that lack planned episodes ("DIR: 5 of
	// 20 planned episodes (15 missing)"), when the report was made from
	// them on purpose; empty for complete runs.
	Partial []string `json:"partial,omitempty"`

	lambdaLayout []PanelLabels // the λ chart's last label layout
}

// BootstrapInfo says how the intervals were made.
type BootstrapInfo struct {
	Replicates int     `json:"replicates"`
	Seed       uint64  `json:"seed"`
	Level      float64 `json:"level"`
	Unit       string  `json:"unit"`
}

// DomainDrift is one checkpoint's DR and DR_annotated per domain.
type DomainDrift struct {
	Label     string                      `json:"label"`
	Domains   map[string]metrics.Estimate `json:"dr"`
	Annotated map[string]metrics.Estimate `json:"dr_annotated"`
}

// PositionDensity is one checkpoint's drift-position densities by drift
// type ("all" and each type with drifting calls).
type PositionDensity struct {
	Label   string               `json:"label"`
	Calls   map[string]int       `json:"calls"`
	Grid    []float64            `json:"grid"`
	Density map[string][]float64 `json:"density"`
}

// Files a report may hold: the tables, then each chart as SVG and PNG.
// Write writes the charts that have something to show and lists what it
// wrote in Report.Files.
var Files = []string{
	"report.json", "report.md", "report.html",
	"pareto.svg", "pareto.png",
	"drift_by_domain.svg", "drift_by_domain.png",
	"drift_positions.svg", "drift_positions.png",
	"gating_front.svg", "gating_front.png",
}

// New assembles the report of an analysis; groups are the scored groups of
// the points (by checkpoint and framework), matched to points by label.
func New(title string, runs []string, stepSource string, res *metrics.Result, an *pareto.Report) (*Report, error) {
	r := &Report{
		Title: title, Runs: runs, StepSource: stepSource, K: res.K,
		Points: an.Points, Front: an.Front, Hypervolume: an.Hypervolume, HypervolumeCI: an.HypervolumeCI, Reference: an.Reference, Moves: an.Moves,
		Comparisons: an.Comparisons, Correction: an.Correction,
		Bootstrap: BootstrapInfo{Replicates: an.Replicates, Seed: an.Seed, Level: an.Level, Unit: "scenario (all its rollouts resampled together)"},
	}
	byKey := map[[2]string]*metrics.Group{}
	for _, g := range res.Groups {
		byKey[[2]string{g.Key(metrics.ByCheckpoint), g.Key(metrics.ByFramework)}] = g
	}
	domains := map[string]bool{}
	for _, p := range an.Points {
		g := byKey[[2]string{p.Checkpoint, p.Framework}]
		if g == nil {
			return nil, fmt.Errorf("report: no scores for checkpoint %s (%s)", p.Checkpoint, p.Framework)
		}
		dd := DomainDrift{Label: p.Label, Domains: map[string]metrics.Estimate{}, Annotated: map[string]metrics.Estimate{}}
		for d, b := range g.Domains {
			dd.Domains[d] = b.DR
			dd.Annotated[d] = b.DRAnnotated
			domains[d] = true
		}
		r.DriftByDomain = append(r.DriftByDomain, dd)
		pd := PositionDensity{Label: p.Label, Calls: g.Positions.Calls, Grid: g.Positions.Grid, Density: g.Positions.Density}
		r.Positions = append(r.Positions, pd)
	}
	for d := range domains {
		r.Domains = append(r.Domains, d)
	}
	sort.Strings(r.Domains)
	return r, nil
}

// Write writes every file of the report into dir (created if needed). Each
// file is written to a temporary name and renamed, so a report is never
// left half-written.
//
// The folder is written as a whole: the files go to a staging folder beside
// it, which then takes the folder's place in one rename (an atomic exchange
// where the system has one), so that a report that fails half-way (disk
// full, a signal) leaves the previous report untouched and never a mix.
func (r *Report) Write(dir string) error {
	return writeWhole(dir, r.writeFiles)
}

func (r *Report) writeFiles(dir string) error {
	plots, err := r.plots()
	if err != nil {
		return err
	}
	r.Files = nil
	for _, f := range Files {
		name := strings.TrimSuffix(strings.TrimSuffix(f, ".svg"), ".png")
		if _, ok := plots[name]; ok || strings.HasPrefix(f, "report.") {
			r.Files = append(r.Files, f)
		}
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	html, err := r.html(plots)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"report.json": append(js, '\n'),
		"report.md":   []byte(r.markdown()),
		"report.html": html,
	}
	for name, p := range plots {
		files[name+".svg"] = p.svg
		files[name+".png"] = p.png
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeAtomic(filepath.Join(dir, n), files[n]); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := tempgate.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// ci formats a value with its interval: "0.483 [0.401, 0.566]".
func ci(v metrics.Num, c metrics.CI) string {
	if !v.Defined() {
		return "undefined"
	}
	s := fmt.Sprintf("%.3f", float64(v))
	if c[0].Defined() && c[1].Defined() {
		s += fmt.Sprintf(" [%.3f, %.3f]", float64(c[0]), float64(c[1]))
	}
	return s
}

// dci formats a signed change with its interval.
func dci(v metrics.Num, c metrics.CI) string {
	if !v.Defined() {
		return "undefined"
	}
	s := fmt.Sprintf("%+.3f", float64(v))
	if c[0].Defined() && c[1].Defined() {
		s += fmt.Sprintf(" [%+.3f, %+.3f]", float64(c[0]), float64(c[1]))
	}
	return s
}

// driftTypes is "all" then the drift types, the order of density curves.
func driftTypes() []string {
	out := []string{"all"}
	for _, t := range scenario.DriftTypes {
		out = append(out, string(t))
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// FrontText lists the front with each point's probability of being on it:
// "cautious (P 0.98), dpo (P 0.87)".
func (r *Report) FrontText() string {
	var parts []string
	for _, l := range r.Front {
		for _, p := range r.Points {
			if p.Label == l {
				parts = append(parts, fmt.Sprintf("%s (P %.2f)", l, p.FrontProbability))
			}
		}
	}
	return strings.Join(parts, ", ")
}
