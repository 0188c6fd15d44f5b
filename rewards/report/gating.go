package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/pareto"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Gating is the report's gating section: the exposure filters side by
// side, and the safety–success front traced over the risk penalty λ.
type Gating struct {
	Filters []FilterRow   `json:"filters,omitempty"`
	Lambda  []LambdaPoint `json:"lambda_front,omitempty"`
	// The fronts: success (TSR, higher is better) against the high-risk
	// surface (high-risk tools visible per step) and against DR (lower is
	// better), with their hypervolumes against RefSurface / (DR 1, TSR 0).
	FrontSurface       []string `json:"front_surface,omitempty"`
	HypervolumeSurface float64  `json:"hypervolume_surface"`
	RefSurface         float64  `json:"reference_surface"`
	FrontDR            []string `json:"front_dr,omitempty"`
	HypervolumeDR      float64  `json:"hypervolume_dr"`
	// Monotone says whether, as λ grows, the high-risk surface never rises
	// and success never rises (the trade-off the penalty should make), and
	// explains each step that breaks it.
	Monotone    bool     `json:"monotone"`
	Explanation []string `json:"explanation,omitempty"`
}

// FilterRow is one framework's headline and attack-surface figures.
type FilterRow struct {
	Label        string           `json:"label"`
	Framework    string           `json:"framework"`
	N            int              `json:"n"`
	TSR          metrics.Estimate `json:"tsr"`
	DR           metrics.Estimate `json:"dr"`
	DRAnnotated  metrics.Estimate `json:"dr_annotated"`
	HighRisk     metrics.Estimate `json:"high_risk_surface_mean"`
	HighRiskMax  metrics.Estimate `json:"high_risk_surface_max"`
	RiskWeighted metrics.Estimate `json:"risk_weighted_surface"`
	Unauthorized metrics.Estimate `json:"unauthorized_exposure"`
	Premature    metrics.Estimate `json:"premature_high_risk_rate"`
	Injection    metrics.Estimate `json:"injection_success_rate"`
	Injected     int              `json:"injected_trajectories"`
}

// LambdaPoint is one λ of a sweep.
type LambdaPoint struct {
	FilterRow
	Lambda         float64 `json:"lambda"`
	OnFrontSurface bool    `json:"on_front_surface"`
	OnFrontDR      bool    `json:"on_front_dr"`
}

// Row is a scored group's row.
func Row(g *metrics.Group) FilterRow {
	as := g.AttackSurface
	return FilterRow{Label: g.Label(), Framework: g.Key(metrics.ByFramework), N: g.N,
		TSR: metrics.Estimate{Value: g.TSR, CI: g.TSRCI}, DR: metrics.Estimate{Value: g.DR, CI: g.DRCI},
		DRAnnotated: metrics.Estimate{Value: g.DRAnnotated, CI: g.DRAnnotatedCI},
		HighRisk:    as.HighRiskSurfaceMean, HighRiskMax: as.HighRiskSurfaceMax, RiskWeighted: as.RiskWeightedSurface,
		Unauthorized: as.UnauthorizedExposure, Premature: as.PrematureHighRisk, Injection: as.InjectionSuccess, Injected: as.Injected}
}

// NewLambdaFront builds the λ front from one scored group per λ (same
// order as lambdas, increasing).
func NewLambdaFront(lambdas []float64, groups []*metrics.Group) (*Gating, error) {
	if len(lambdas) != len(groups) || len(lambdas) == 0 {
		return nil, fmt.Errorf("report: %d λ values for %d scored groups", len(lambdas), len(groups))
	}
	g := &Gating{Monotone: true}
	surf := make([][2]float64, len(groups))
	dr := make([][2]float64, len(groups))
	for i, gr := range groups {
		p := LambdaPoint{FilterRow: Row(gr), Lambda: lambdas[i]}
		p.Label = fmt.Sprintf("λ=%s", trimFloat(lambdas[i]))
		g.Lambda = append(g.Lambda, p)
		surf[i] = [2]float64{float64(p.HighRisk.Value), float64(p.TSR.Value)}
		dr[i] = [2]float64{float64(p.DR.Value), float64(p.TSR.Value)}
		g.RefSurface = math.Max(g.RefSurface, math.Ceil(float64(p.HighRisk.Value)))
	}
	g.RefSurface = math.Max(g.RefSurface, 1)
	onS, onD := pareto.Front(surf), pareto.Front(dr)
	var fs, fd [][2]float64
	for i := range g.Lambda {
		g.Lambda[i].OnFrontSurface, g.Lambda[i].OnFrontDR = onS[i], onD[i]
		if onS[i] {
			fs = append(fs, surf[i])
			g.FrontSurface = append(g.FrontSurface, g.Lambda[i].Label)
		}
		if onD[i] {
			fd = append(fd, dr[i])
			g.FrontDR = append(g.FrontDR, g.Lambda[i].Label)
		}
	}
	g.HypervolumeSurface = pareto.Hypervolume(fs, [2]float64{g.RefSurface, 0})
	g.HypervolumeDR = pareto.Hypervolume(fd, pareto.Reference)
	const eps = 1e-12
	for i := 1; i < len(g.Lambda); i++ {
		a, b := g.Lambda[i-1], g.Lambda[i]
		if float64(b.HighRisk.Value) > float64(a.HighRisk.Value)+eps {
			g.Monotone = false
			g.Explanation = append(g.Explanation, fmt.Sprintf("%s → %s: the high-risk surface rises (%.3f → %.3f): a longer path the larger λ prefers exposes more high-risk tools per step on some scenario", a.Label, b.Label, float64(a.HighRisk.Value), float64(b.HighRisk.Value)))
		}
		if float64(b.TSR.Value) > float64(a.TSR.Value)+eps {
			g.Monotone = false
			g.Explanation = append(g.Explanation, fmt.Sprintf("%s → %s: success rises (%.3f → %.3f): the path λ prefers reaches the goal where the compliant path's tools were hidden", a.Label, b.Label, float64(a.TSR.Value), float64(b.TSR.Value)))
		}
		if float64(b.HighRisk.Value) == float64(a.HighRisk.Value) && float64(b.TSR.Value) == float64(a.TSR.Value) {
			g.Explanation = append(g.Explanation, fmt.Sprintf("%s → %s: no change: no scenario's least-cost path changes between these penalties", a.Label, b.Label))
		}
	}
	return g, nil
}

func trimFloat(x float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", x), "0"), ".")
}

// SortFilters orders filter rows as the frameworks are listed in order.
func SortFilters(rows []FilterRow, order []string) {
	idx := map[string]int{}
	for i, f := range order {
		idx[f] = i
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		ia, oka := idx[a.Framework]
		ib, okb := idx[b.Framework]
		if oka != okb {
			return oka
		}
		if ia != ib {
			return ia < ib
		}
		return a.Label < b.Label
	})
}

// drawLambda plots success against the high-risk surface and against DR,
// one point per λ with 95% intervals, the fronts joined.
func (r *Report) drawLambda(dc draw.Canvas) error {
	half := (dc.Max.X - dc.Min.X) / 2
	panels := []struct {
		x      func(p LambdaPoint) metrics.Estimate
		on     func(p LambdaPoint) bool
		xlabel string
		xmax   float64
	}{
		{func(p LambdaPoint) metrics.Estimate { return p.HighRisk }, func(p LambdaPoint) bool { return p.OnFrontSurface }, "high-risk tools visible per step (lower is safer)", r.Gating.RefSurface},
		{func(p LambdaPoint) metrics.Estimate { return p.DR }, func(p LambdaPoint) bool { return p.OnFrontDR }, "DR (lower is better)", 1},
	}
	for k, pn := range panels {
		p := newPlot()
		p.Title.Text = "Success against " + strings.SplitN(pn.xlabel, " (", 2)[0] + " over λ"
		p.X.Label.Text = pn.xlabel
		p.Y.Label.Text = "TSR (higher is better)"
		p.X.Min, p.X.Max = 0, pn.xmax
		p.Y.Min, p.Y.Max = 0, 1
		p.Add(plotter.NewGrid())
		var line plotter.XYs
		for _, lp := range r.Gating.Lambda {
			if pn.on(lp) {
				line = append(line, plotter.XY{X: float64(pn.x(lp).Value), Y: float64(lp.TSR.Value)})
			}
		}
		sort.Slice(line, func(i, j int) bool { return line[i].X < line[j].X })
		if len(line) > 1 {
			l, err := plotter.NewLine(line)
			if err != nil {
				return err
			}
			l.Color = blue
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
		var pts plotter.XYs
		var errs plotter.XErrors
		var yerrs plotter.YErrors
		var names []string
		for _, lp := range r.Gating.Lambda {
			x, y := pn.x(lp), lp.TSR
			if !x.Value.Defined() || !y.Value.Defined() {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(x.Value), Y: float64(y.Value)})
			errs = append(errs, struct{ Low, High float64 }{ciLow(x), ciHigh(x)})
			yerrs = append(yerrs, struct{ Low, High float64 }{ciLow(y), ciHigh(y)})
			names = append(names, lp.Label)
		}
		if len(pts) > 0 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: blue, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
			p.Add(sc)
			xe := &plotter.XErrorBars{XYs: pts, XErrors: errs, LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1)}, CapWidth: vg.Points(5)}
			ye := &plotter.YErrorBars{XYs: pts, YErrors: yerrs, LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1)}, CapWidth: vg.Points(5)}
			p.Add(xe, ye)
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: names})
			if err == nil {
				for i := range lb.TextStyle {
					lb.TextStyle[i].Font.Size = vg.Points(9)
					lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(4)}
				}
				p.Add(lb)
			}
		}
		x0 := dc.Min.X + vg.Length(k)*half
		p.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x0, Y: dc.Min.Y}, Max: vg.Point{X: x0 + half, Y: dc.Max.Y}}})
	}
	return nil
}

// ciLow and ciHigh are an estimate's distances to its interval's ends (0
// when undefined).
func ciLow(e metrics.Estimate) float64 {
	if !e.CI[0].Defined() || !e.Value.Defined() {
		return 0
	}
	return float64(e.CI[0]) - float64(e.Value)
}

func ciHigh(e metrics.Estimate) float64 {
	if !e.CI[1].Defined() || !e.Value.Defined() {
		return 0
	}
	return float64(e.CI[1]) - float64(e.Value)
}

// GatingTable is the filters (or λ points) as a Markdown table.
func GatingTable(rows []FilterRow) string {
	var b strings.Builder
	b.WriteString("| group | n | TSR | DR | DR_annotated | high-risk surface / step | unauthorised exposure | premature high-risk | injection success |\n")
	b.WriteString("|---|---:|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Label), r.N,
			ci(r.TSR.Value, r.TSR.CI), ci(r.DR.Value, r.DR.CI), ci(r.DRAnnotated.Value, r.DRAnnotated.CI), ci(r.HighRisk.Value, r.HighRisk.CI),
			ci(r.Unauthorized.Value, r.Unauthorized.CI), ci(r.Premature.Value, r.Premature.CI), ci(r.Injection.Value, r.Injection.CI))
	}
	return b.String()
}

func (r *Report) gatingMarkdown() string {
	g := r.Gating
	if g == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Gating\n\n")
	if len(g.Filters) > 0 {
		b.WriteString("Exposure filters side by side (attack-surface metrics from the tools each step offered; authorization replayed under the provenance constraint).\n\n")
		b.WriteString(GatingTable(g.Filters))
	}
	if len(g.Lambda) > 0 {
		b.WriteString("\n### Safety–success front over the risk penalty λ\n\n![λ front](gating_front.png)\n\n")
		rows := make([]FilterRow, len(g.Lambda))
		for i, p := range g.Lambda {
			rows[i] = p.FilterRow
			rows[i].Label = p.Label
		}
		b.WriteString(GatingTable(rows))
		fmt.Fprintf(&b, "\nFront (TSR against high-risk surface): %s; hypervolume against (%.3g, 0): **%.4f**.\n", mdEscape(strings.Join(g.FrontSurface, ", ")), g.RefSurface, g.HypervolumeSurface)
		fmt.Fprintf(&b, "Front (TSR against DR): %s; hypervolume against (1, 0): **%.4f**.\n", mdEscape(strings.Join(g.FrontDR, ", ")), g.HypervolumeDR)
		fmt.Fprintf(&b, "Monotone in λ: %s.\n", yesNo(g.Monotone))
		for _, e := range g.Explanation {
			fmt.Fprintf(&b, "\n- %s", mdEscape(e))
		}
		if len(g.Explanation) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}
