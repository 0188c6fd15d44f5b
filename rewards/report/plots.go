package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/pareto"
	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// rendered is one figure in both formats.
type rendered struct{ svg, png []byte }

// PNG resolution.
const dpi = 150

// Okabe–Ito colours, distinguishable with colour-vision deficiencies.
var (
	blue      = color.NRGBA{0x00, 0x72, 0xB2, 0xff}
	orange    = color.NRGBA{0xE6, 0x9F, 0x00, 0xff}
	green     = color.NRGBA{0x00, 0x9E, 0x73, 0xff}
	vermilion = color.NRGBA{0xD5, 0x5E, 0x00, 0xff}
	purple    = color.NRGBA{0xCC, 0x79, 0xA7, 0xff}
	sky       = color.NRGBA{0x56, 0xB4, 0xE9, 0xff}
	yellow    = color.NRGBA{0xF0, 0xE4, 0x42, 0xff}
	grey      = color.NRGBA{0x88, 0x88, 0x88, 0xff}
	dark      = color.NRGBA{0x22, 0x22, 0x22, 0xff}
	palette   = []color.Color{blue, orange, green, vermilion, purple, sky, yellow, dark}
	typeColor = map[string]color.Color{"all": dark, "data": blue, "tool": orange, "scope": green, "time": purple}
)

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot is a plot with sans-serif text of readable sizes.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sans, 14)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 12)
		ax.Tick.Label.Font = font.From(sans, 10)
	}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	p.Title.Padding = vg.Points(8)
	return p
}

// IsSweep reports whether the report is a λ sweep's: it then plots what
// the sweep trades (exposure against success) instead of the DR–CSR plane.
func (r *Report) IsSweep() bool { return r.Gating != nil && len(r.Gating.Lambda) > 0 }

// anyDrift reports whether some checkpoint drifts in some domain: without,
// the drift-by-domain chart would be bars of height 0.
func (r *Report) anyDrift() bool {
	for _, dd := range r.DriftByDomain {
		for _, e := range dd.Domains {
			if e.Value.Defined() && e.Value > 0 {
				return true
			}
		}
	}
	return false
}

// anyPositions reports whether some checkpoint has a drifting call to place.
func (r *Report) anyPositions() bool {
	for _, pd := range r.Positions {
		if pd.Calls["all"] > 0 {
			return true
		}
	}
	return false
}

// plots renders the charts that have something to show: never an empty
// one (no drift, no drift chart; a sweep's DR–CSR plane is replaced by its
// exposure–success chart).
func (r *Report) plots() (map[string]rendered, error) {
	out := map[string]rendered{}
	add := func(name string, f func(draw.Canvas) error, w, h vg.Length) error {
		x, err := render(f, w, h)
		if err == nil {
			out[name] = x
		}
		return err
	}
	if !r.IsSweep() {
		if err := add("pareto", r.drawPareto, 10*vg.Inch, 6.5*vg.Inch); err != nil {
			return nil, err
		}
	}
	if r.anyDrift() {
		if err := add("drift_by_domain", r.drawDomains, 10*vg.Inch, 4.5*vg.Inch); err != nil {
			return nil, err
		}
	}
	if r.IsSweep() && len(r.lambdaPanels()) > 0 {
		if err := add("gating_front", r.drawLambda, vg.Length(4*len(r.lambdaPanels()))*vg.Inch, 5*vg.Inch); err != nil {
			return nil, err
		}
	}
	if r.anyPositions() {
		cols, rows := tiles(len(r.Positions))
		if err := add("drift_positions", r.drawPositions, vg.Length(cols)*3.6*vg.Inch, vg.Length(rows)*2.9*vg.Inch+0.3*vg.Inch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func tiles(n int) (cols, rows int) {
	cols = min(max(n, 1), 3)
	rows = (max(n, 1) + cols - 1) / cols
	return cols, rows
}

// render draws a figure on an SVG and a PNG canvas.
func render(drawFn func(draw.Canvas) error, w, h vg.Length) (rendered, error) {
	var out rendered
	sc := vgsvg.New(w, h)
	if err := drawFn(draw.New(sc)); err != nil {
		return out, err
	}
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return out, fmt.Errorf("report: svg: %w", err)
	}
	ic := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	if err := drawFn(draw.New(ic)); err != nil {
		return out, err
	}
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return out, fmt.Errorf("report: png: %w", err)
	}
	out.svg, out.png = sb.Bytes(), pb.Bytes()
	return out, nil
}

// moveColor colours an arrow by the move's class.
func moveColor(m *pareto.Move) color.Color {
	switch {
	case m.Collapse:
		return vermilion
	case m.Class == pareto.Improvement:
		return green
	case m.Class == pareto.Regression:
		return vermilion
	case m.Class == pareto.TradeOff:
		return orange
	}
	return grey
}

func pointColor(p *pareto.Point) color.Color {
	switch {
	case p.Collapse:
		return vermilion
	case p.OnFront:
		return blue
	}
	return grey
}

// axisRange pads [lo, hi] and snaps it to tenths within [0, 1].
func axisRange(lo, hi float64) (float64, float64) {
	lo = math.Max(0, math.Floor((lo-0.05)*10)/10)
	hi = math.Min(1, math.Ceil((hi+0.05)*10)/10)
	if hi-lo < 0.3 {
		hi = math.Min(1, lo+0.3)
		lo = math.Max(0, hi-0.3)
	}
	return lo, hi
}

func (r *Report) drawPareto(dc draw.Canvas) error {
	p := newPlot()
	p.Title.Text = "Checkpoints on the DR–CSR plane (95% intervals, scenarios as clusters)"
	p.X.Label.Text = "DR: share of trajectories that drift  (lower is better)"
	p.Y.Label.Text = "CSR: share that succeed without drifting  (higher is better)"
	xlo, xhi, ylo, yhi := 1.0, 0.0, 1.0, 0.0
	for _, pt := range r.Points {
		for _, v := range []float64{float64(pt.DR), float64(pt.DRCI[0]), float64(pt.DRCI[1])} {
			if !math.IsNaN(v) {
				xlo, xhi = math.Min(xlo, v), math.Max(xhi, v)
			}
		}
		for _, v := range []float64{float64(pt.CSR), float64(pt.CSRCI[0]), float64(pt.CSRCI[1])} {
			if !math.IsNaN(v) {
				ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
			}
		}
	}
	p.X.Min, p.X.Max = axisRange(0, xhi)
	p.Y.Min, p.Y.Max = axisRange(ylo, yhi)
	p.Add(plotter.NewGrid())

	var front []*pareto.Point
	for _, pt := range r.Points {
		if pt.OnFront {
			front = append(front, pt)
		}
	}
	p.Add(&frontPlotter{points: front})
	for _, m := range r.Moves {
		var a, b *pareto.Point
		for _, pt := range r.Points {
			if pt.Label == m.From {
				a = pt
			}
			if pt.Label == m.To {
				b = pt
			}
		}
		if a != nil && b != nil {
			p.Add(&arrow{from: a, to: b, color: moveColor(m), dashed: m.Collapse})
		}
	}
	p.Add(&whiskers{points: r.Points})
	p.Add(&dots{points: r.Points})
	p.Add(&labels{points: r.Points})

	p.X.Tick.Marker = tenths{}
	p.Y.Tick.Marker = tenths{}

	// The legend and a short key sit right of the plot, never over a point.
	legendW := 2.7 * vg.Inch
	p.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: dc.Min, Max: vg.Point{X: dc.Max.X - legendW, Y: dc.Max.Y}}})
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 10)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(5)
	l.Add("checkpoint on the front", glyphThumb{blue, draw.CircleGlyph{}})
	l.Add("dominated checkpoint", glyphThumb{grey, draw.CircleGlyph{}})
	l.Add("capability collapse", glyphThumb{vermilion, draw.CrossGlyph{}})
	l.Add("Pareto front", lineThumb{blue, true})
	l.Add(fmt.Sprintf("hypervolume: %s", ci(metrics.Num(r.Hypervolume), r.HypervolumeCI)), areaThumb{})
	l.Add("halo: P(on the front)", glyphThumb{halo(1), draw.CircleGlyph{}})
	l.Add("move: improvement", lineThumb{green, false})
	l.Add("move: trade-off", lineThumb{orange, false})
	l.Add("move: regression", lineThumb{vermilion, false})
	l.Add("move: collapse", lineThumb{vermilion, true})
	l.Add("move: no significant change", lineThumb{grey, false})
	area := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: dc.Max.X - legendW + vg.Points(12), Y: dc.Min.Y},
		Max: vg.Point{X: dc.Max.X - vg.Points(4), Y: dc.Max.Y - vg.Points(40)},
	}}
	l.Draw(area)
	key := []string{
		"Whiskers: 95% intervals, scenarios",
		"as clusters. Halo: the share of",
		"scenario resamples with the point",
		"on the front (also in its label).",
		"Arrows join consecutive steps;",
		"colour: verdict of the paired tests",
		"(Holm-corrected).",
		"Shaded: the area the front",
		"dominates up to (DR 1, CSR 0).",
	}
	sty := draw.TextStyle{Color: dark, Font: font.From(sans, 9), Handler: p.Title.TextStyle.Handler, YAlign: draw.YTop}
	y := area.Max.Y - l.Rectangle(area).Size().Y - vg.Points(18)
	for _, line := range key {
		dc.FillText(sty, vg.Point{X: area.Min.X, Y: y}, line)
		y -= vg.Points(12)
	}
	return nil
}

// tenths ticks an axis every 0.1 (labelled) and 0.05.
type tenths struct{}

func (tenths) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for i := int(math.Ceil(lo*20 - 1e-9)); float64(i) <= hi*20+1e-9; i++ {
		t := plot.Tick{Value: float64(i) / 20}
		if i%2 == 0 {
			t.Label = fmt.Sprintf("%.1f", t.Value)
		}
		out = append(out, t)
	}
	return out
}

type areaThumb struct{}

func (areaThumb) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(color.NRGBA{0x00, 0x72, 0xB2, 0x30}, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// frontPlotter shades the region the front dominates and draws its
// staircase boundary.
type frontPlotter struct{ points []*pareto.Point }

func (f *frontPlotter) Plot(c draw.Canvas, plt *plot.Plot) {
	if len(f.points) == 0 {
		return
	}
	trX, trY := plt.Transforms(&c)
	ps := append([]*pareto.Point(nil), f.points...)
	for i := 1; i < len(ps); i++ { // insertion sort by DR: a handful of points
		for j := i; j > 0 && ps[j].DR < ps[j-1].DR; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	var stair []vg.Point
	stair = append(stair, vg.Point{X: trX(float64(ps[0].DR)), Y: trY(plt.Y.Min)})
	for i, pt := range ps {
		stair = append(stair, vg.Point{X: trX(float64(pt.DR)), Y: trY(float64(pt.CSR))})
		next := plt.X.Max
		if i+1 < len(ps) {
			next = float64(ps[i+1].DR)
		}
		stair = append(stair, vg.Point{X: trX(next), Y: trY(float64(pt.CSR))})
	}
	poly := append(append([]vg.Point(nil), stair...), vg.Point{X: trX(plt.X.Max), Y: trY(plt.Y.Min)})
	c.FillPolygon(color.NRGBA{0x00, 0x72, 0xB2, 0x1c}, c.ClipPolygonXY(poly))
	ls := draw.LineStyle{Color: blue, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}
	c.StrokeLines(ls, c.ClipLinesXY(stair)...)
}

// arrow joins two checkpoints, shortened so that it does not cover them.
type arrow struct {
	from, to *pareto.Point
	color    color.Color
	dashed   bool
}

func (a *arrow) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	x0, y0 := trX(float64(a.from.DR)), trY(float64(a.from.CSR))
	x1, y1 := trX(float64(a.to.DR)), trY(float64(a.to.CSR))
	dx, dy := float64(x1-x0), float64(y1-y0)
	l := math.Hypot(dx, dy)
	gap := float64(vg.Points(8))
	if l < 2*gap+1 {
		return
	}
	ux, uy := dx/l, dy/l
	sx, sy := float64(x0)+ux*gap, float64(y0)+uy*gap
	ex, ey := float64(x1)-ux*gap, float64(y1)-uy*gap
	ls := draw.LineStyle{Color: a.color, Width: vg.Points(2)}
	if a.dashed {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	head, half := float64(vg.Points(10)), float64(vg.Points(4.5))
	bx, by := ex-ux*head, ey-uy*head
	c.StrokeLine2(ls, vg.Length(sx), vg.Length(sy), vg.Length(bx), vg.Length(by))
	tip := []vg.Point{
		{X: vg.Length(ex), Y: vg.Length(ey)},
		{X: vg.Length(bx - uy*half), Y: vg.Length(by + ux*half)},
		{X: vg.Length(bx + uy*half), Y: vg.Length(by - ux*half)},
	}
	c.FillPolygon(a.color, tip)
}

// whiskers draw each point's DR and CSR intervals with caps.
type whiskers struct{ points []*pareto.Point }

func (w *whiskers) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	cap := vg.Points(3)
	for _, p := range w.points {
		col := pointColor(p)
		ls := draw.LineStyle{Color: col, Width: vg.Points(1.2)}
		x, y := trX(float64(p.DR)), trY(float64(p.CSR))
		if p.DRCI[0].Defined() && p.DRCI[1].Defined() {
			lo, hi := trX(float64(p.DRCI[0])), trX(float64(p.DRCI[1]))
			c.StrokeLine2(ls, lo, y, hi, y)
			c.StrokeLine2(ls, lo, y-cap, lo, y+cap)
			c.StrokeLine2(ls, hi, y-cap, hi, y+cap)
		}
		if p.CSRCI[0].Defined() && p.CSRCI[1].Defined() {
			lo, hi := trY(float64(p.CSRCI[0])), trY(float64(p.CSRCI[1]))
			c.StrokeLine2(ls, x, lo, x, hi)
			c.StrokeLine2(ls, x-cap, lo, x+cap, lo)
			c.StrokeLine2(ls, x-cap, hi, x+cap, hi)
		}
	}
}

// dots draw the points: blue on the front, grey dominated, a vermilion
// cross for capability collapse.
type dots struct{ points []*pareto.Point }

func (d *dots) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, p := range d.points {
		pt := vg.Point{X: trX(float64(p.DR)), Y: trY(float64(p.CSR))}
		// The membership shade: a halo whose size grows with the share of
		// resamples that put the point on the front.
		if p.FrontProbability > 0 {
			c.DrawGlyph(draw.GlyphStyle{Color: halo(p.FrontProbability), Radius: vg.Points(7 + 9*p.FrontProbability), Shape: draw.CircleGlyph{}}, pt)
		}
		if p.Collapse {
			c.DrawGlyph(draw.GlyphStyle{Color: color.White, Radius: vg.Points(7), Shape: draw.CircleGlyph{}}, pt)
			c.DrawGlyph(draw.GlyphStyle{Color: vermilion, Radius: vg.Points(7), Shape: thickCross{}}, pt)
			continue
		}
		c.DrawGlyph(draw.GlyphStyle{Color: color.White, Radius: vg.Points(6.5), Shape: draw.CircleGlyph{}}, pt)
		c.DrawGlyph(draw.GlyphStyle{Color: pointColor(p), Radius: vg.Points(5), Shape: draw.CircleGlyph{}}, pt)
	}
}

// halo is the translucent blue of the front-membership shade.
func halo(p float64) color.Color {
	return color.NRGBA{0x00, 0x72, 0xB2, uint8(40 + 60*p)}
}

// thickCross is an X drawn with wide strokes.
type thickCross struct{}

func (thickCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	ls := draw.LineStyle{Color: sty.Color, Width: vg.Points(3)}
	r := sty.Radius * 0.75
	c.StrokeLine2(ls, pt.X-r, pt.Y-r, pt.X+r, pt.Y+r)
	c.StrokeLine2(ls, pt.X-r, pt.Y+r, pt.X+r, pt.Y-r)
}

// labels name each point with its checkpoint and step, on the side away
// from the plot's right edge.
type labels struct{ points []*pareto.Point }

func (l *labels) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, p := range l.points {
		text := fmt.Sprintf("%s (step %d, P(front) %.2f)", p.Label, p.Step, p.FrontProbability)
		if p.Collapse {
			text += " – collapse"
		}
		sty := draw.TextStyle{Color: dark, Font: font.From(sans, 10), Handler: plt.Title.TextStyle.Handler}
		if p.Collapse {
			sty.Color = vermilion
			sty.Font = font.From(font.Font{Typeface: "Liberation", Variant: "Sans", Weight: xfont.WeightBold}, 10)
		}
		x, y := trX(float64(p.DR)), trY(float64(p.CSR))
		w := sty.Width(text)
		sty.YAlign = draw.YBottom
		pos := vg.Point{X: x + vg.Points(8), Y: y + vg.Points(4)}
		if pos.X+w > c.Max.X {
			pos.X = x - vg.Points(8) - w
		}
		c.FillText(sty, pos, text)
	}
}

type glyphThumb struct {
	color color.Color
	shape draw.GlyphDrawer
}

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	pt := vg.Point{X: c.Center().X, Y: c.Center().Y}
	if _, ok := g.shape.(draw.CrossGlyph); ok {
		c.DrawGlyph(draw.GlyphStyle{Color: g.color, Radius: vg.Points(5), Shape: thickCross{}}, pt)
		return
	}
	c.DrawGlyph(draw.GlyphStyle{Color: g.color, Radius: vg.Points(5), Shape: g.shape}, pt)
}

type lineThumb struct {
	color  color.Color
	dashed bool
}

func (l lineThumb) Thumbnail(c *draw.Canvas) {
	ls := draw.LineStyle{Color: l.color, Width: vg.Points(2)}
	if l.dashed {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(2)}
	}
	y := c.Center().Y
	c.StrokeLine2(ls, c.Min.X, y, c.Max.X, y)
}

func (r *Report) drawDomains(dc draw.Canvas) error {
	p := newPlot()
	p.Title.Text = "Drift rate by domain and checkpoint"
	p.Y.Label.Text = "DR: share of trajectories that drift"
	p.X.Label.Text = "domain"
	p.NominalX(r.Domains...)
	p.Add(plotter.NewGrid())
	n := len(r.DriftByDomain)
	groupW := 0.8 * (dc.Max.X - dc.Min.X - vg.Inch) / vg.Length(max(len(r.Domains), 1))
	barW := groupW / vg.Length(max(n, 1))
	ymax := 0.0
	for i, dd := range r.DriftByDomain {
		vals := make(plotter.Values, len(r.Domains))
		for j, d := range r.Domains {
			if e, ok := dd.Domains[d]; ok && e.Value.Defined() {
				vals[j] = float64(e.Value)
			}
			ymax = math.Max(ymax, vals[j])
		}
		bars, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(n-1)/2) * barW
		p.Add(bars)
		p.Legend.Add(dd.Label, bars)
	}
	p.Y.Min = 0
	p.Y.Max = math.Min(1, math.Max(0.1, ymax)*1.3)
	p.Y.Tick.Marker = tenths{}
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(4)
	p.Draw(dc)
	return nil
}

func (r *Report) drawPositions(dc draw.Canvas) error {
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
	n := len(r.Positions)
	cols, rows := tiles(n)
	ymax := 0.5
	for _, pd := range r.Positions {
		for _, d := range pd.Density {
			for _, v := range d {
				ymax = math.Max(ymax, v)
			}
		}
	}
	ymax = math.Ceil(ymax*1.1*2) / 2

	// One legend for every panel, across the top.
	keyH := vg.Points(26)
	sty := draw.TextStyle{Color: dark, Font: font.From(sans, 10), Handler: plot.New().Title.TextStyle.Handler, YAlign: draw.YCenter}
	x, y := dc.Min.X+vg.Points(12), dc.Max.Y-keyH/2
	dc.FillText(sty, vg.Point{X: x, Y: y}, "Drift-position densities by drift type:")
	x += sty.Width("Drift-position densities by drift type:") + vg.Points(14)
	for _, t := range driftTypes() {
		ls := draw.LineStyle{Color: typeColor[t], Width: vg.Points(2)}
		name := t
		if t == "all" {
			ls.Width, ls.Dashes, name = vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(2)}, "all drifting calls"
		}
		dc.StrokeLine2(ls, x, y, x+vg.Points(22), y)
		x += vg.Points(26)
		dc.FillText(sty, vg.Point{X: x, Y: y}, name)
		x += sty.Width(name) + vg.Points(16)
	}

	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, pd := range r.Positions {
		p := newPlot()
		p.Title.TextStyle.Font = font.From(sans, 10)
		var counts []string
		for _, t := range driftTypes()[1:] {
			counts = append(counts, fmt.Sprintf("%s %d", t, pd.Calls[t]))
		}
		p.Title.Text = fmt.Sprintf("%s: %d drifting calls\n%s", pd.Label, pd.Calls["all"], strings.Join(counts, " · "))
		p.X.Label.Text = "position in the trajectory (0 first call, 1 last)"
		p.X.Label.TextStyle.Font = font.From(sans, 9)
		p.Y.Label.Text = "density"
		p.Y.Label.TextStyle.Font = font.From(sans, 9)
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, ymax
		p.Y.Tick.Marker = compactTicks{}
		p.Add(plotter.NewGrid())
		for _, t := range driftTypes() {
			d, ok := pd.Density[t]
			if !ok {
				continue
			}
			xy := make(plotter.XYs, len(pd.Grid))
			for j := range pd.Grid {
				xy[j].X, xy[j].Y = pd.Grid[j], d[j]
			}
			line, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			line.Color = typeColor[t]
			line.Width = vg.Points(1.8)
			if t == "all" {
				line.Width = vg.Points(1.2)
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(line)
		}
		if len(pd.Density) == 0 {
			p.Title.Text = pd.Label + ": no drift"
		}
		plots[i/cols][i%cols] = p
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14), PadTop: keyH, PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(10)}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	return nil
}

// compactTicks are the default ticks with labels written compactly (2.5,
// not 2.50).
type compactTicks struct{}

func (compactTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 4, 64)
		}
	}
	return ts
}
