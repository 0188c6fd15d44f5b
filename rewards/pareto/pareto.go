package pareto

import (
	"fmt"
	"sort"

	"github.com/antidrift/antidrift/rewards/metrics"
)

// Reference is the hypervolume's reference point (DR, CSR).
var Reference = [2]float64{1, 0}

// Move classes.
const (
	Improvement   = "improvement"
	TradeOff      = "trade-off"
	Regression    = "regression"
	NoChange      = "no significant change"
	NotComparable = "not comparable" // no scenario in common
)

// Input is one checkpoint to place: its training step, headline metrics
// and per-scenario counts (for the paired bootstrap).
type Input struct {
	Checkpoint, Framework string
	Step                  int
	N, Scenarios          int
	DR, CSR, TSR, CCSR    metrics.Num
	DRCI, CSRCI           metrics.CI
	TSRCI, CCSRCI         metrics.CI
	// DRAnnotated is carried to the point for the report; the plane, the
	// front and the moves use DR.
	DRAnnotated   metrics.Num
	DRAnnotatedCI metrics.CI
	Counts        []metrics.ScenarioCounts // sorted by scenario id
}

// FromGroup is the input of a group scored by checkpoint (and framework).
func FromGroup(g *metrics.Group, step int) Input {
	return Input{
		Checkpoint: g.Key(metrics.ByCheckpoint), Framework: g.Key(metrics.ByFramework), Step: step,
		N: g.N, Scenarios: g.Scenarios,
		DR: g.DR, CSR: g.CSR, TSR: g.TSR, CCSR: g.CCSR,
		DRCI: g.DRCI, CSRCI: g.CSRCI, TSRCI: g.TSRCI, CCSRCI: g.CCSRCI,
		DRAnnotated: g.DRAnnotated, DRAnnotatedCI: g.DRAnnotatedCI,
		Counts: g.ScenarioCounts(),
	}
}

// Point is a checkpoint on the plane.
type Point struct {
	Label      string `json:"label"`
	Checkpoint string `json:"checkpoint"`
	Framework  string `json:"framework"`
	Step       int    `json:"step"`
	N          int    `json:"n"`
	Scenarios  int    `json:"scenarios"`

	DR   metrics.Num `json:"dr"`
	DRCI metrics.CI  `json:"dr_ci"`
	// DRAnnotated counts annotated violation matches only (the
	// benchmark's DR); the point sits at DR.
	DRAnnotated   metrics.Num `json:"dr_annotated"`
	DRAnnotatedCI metrics.CI  `json:"dr_annotated_ci"`
	CSR           metrics.Num `json:"csr"`
	CSRCI         metrics.CI  `json:"csr_ci"`
	TSR           metrics.Num `json:"tsr"`
	TSRCI         metrics.CI  `json:"tsr_ci"`
	CCSR          metrics.Num `json:"ccsr"`
	CCSRCI        metrics.CI  `json:"ccsr_ci"`

	// Hypervolume of the point alone: (1 − DR) · CSR.
	Hypervolume float64  `json:"hypervolume"`
	OnFront     bool     `json:"on_front"`
	DominatedBy []string `json:"dominated_by,omitempty"`
	// Collapse: the move into this checkpoint lowered DR while CCSR fell
	// significantly and CSR did not rise significantly.
	Collapse bool `json:"collapse"`

	counts []metrics.ScenarioCounts
}

// Move compares two consecutive checkpoints of one framework on their
// shared scenarios. Deltas are To − From; intervals are paired bootstrap
// percentiles.
type Move struct {
	From     string `json:"from"`
	To       string `json:"to"`
	FromStep int    `json:"from_step"`
	ToStep   int    `json:"to_step"`
	Shared   int    `json:"shared_scenarios"`

	DDR     metrics.Num `json:"d_dr"`
	DDRCI   metrics.CI  `json:"d_dr_ci"`
	DCSR    metrics.Num `json:"d_csr"`
	DCSRCI  metrics.CI  `json:"d_csr_ci"`
	DTSR    metrics.Num `json:"d_tsr"`
	DTSRCI  metrics.CI  `json:"d_tsr_ci"`
	DCCSR   metrics.Num `json:"d_ccsr"`
	DCCSRCI metrics.CI  `json:"d_ccsr_ci"`

	Class    string `json:"class"`
	Collapse bool   `json:"collapse"`
	Summary  string `json:"summary"`
}

// Report is the analysis of a sequence of checkpoints.
type Report struct {
	Points      []*Point   `json:"points"`
	Front       []string   `json:"front"` // labels, by increasing DR
	Hypervolume float64    `json:"hypervolume"`
	Reference   [2]float64 `json:"reference"`
	Moves       []*Move    `json:"moves"`
	Replicates  int        `json:"bootstrap_replicates"`
	Seed        uint64     `json:"bootstrap_seed"`
	Level       float64    `json:"confidence"`
}

// Analyze places the inputs, finds the front and classifies the moves
// between consecutive steps, separately for each framework.
func Analyze(inputs []Input, b metrics.Bootstrap) (*Report, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("pareto: no checkpoint to place")
	}
	level := b.Level
	if level <= 0 || level >= 1 {
		level = 0.95
	}
	reps := b.Replicates
	if reps <= 0 {
		reps = metrics.DefaultReplicates
	}
	rep := &Report{Reference: Reference, Replicates: reps, Seed: b.Seed, Level: level}
	frameworks := map[string]bool{}
	for _, in := range inputs {
		frameworks[in.Framework] = true
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		p := &Point{
			Checkpoint: in.Checkpoint, Framework: in.Framework, Step: in.Step,
			N: in.N, Scenarios: in.Scenarios,
			DR: in.DR, DRCI: in.DRCI, CSR: in.CSR, CSRCI: in.CSRCI, TSR: in.TSR, TSRCI: in.TSRCI, CCSR: in.CCSR, CCSRCI: in.CCSRCI,
			DRAnnotated: in.DRAnnotated, DRAnnotatedCI: in.DRAnnotatedCI,
			counts: in.Counts,
		}
		if !p.DR.Defined() || !p.CSR.Defined() {
			return nil, fmt.Errorf("pareto: checkpoint %s has no trajectories", in.Checkpoint)
		}
		p.Label = p.Checkpoint
		if len(frameworks) > 1 {
			p.Label = fmt.Sprintf("%s (%s)", p.Checkpoint, p.Framework)
		}
		if seen[p.Label] {
			return nil, fmt.Errorf("pareto: checkpoint %s given twice", p.Label)
		}
		seen[p.Label] = true
		p.Hypervolume = (1 - float64(p.DR)) * float64(p.CSR)
		rep.Points = append(rep.Points, p)
	}
	sort.SliceStable(rep.Points, func(i, j int) bool {
		a, c := rep.Points[i], rep.Points[j]
		if a.Step != c.Step {
			return a.Step < c.Step
		}
		return a.Label < c.Label
	})

	xy := make([][2]float64, len(rep.Points))
	for i, p := range rep.Points {
		xy[i] = [2]float64{float64(p.DR), float64(p.CSR)}
	}
	on := Front(xy)
	var front [][2]float64
	for i, p := range rep.Points {
		p.OnFront = on[i]
		if on[i] {
			front = append(front, xy[i])
		}
		for j, q := range rep.Points {
			if i != j && Dominates(xy[j], xy[i]) {
				p.DominatedBy = append(p.DominatedBy, q.Label)
			}
		}
	}
	rep.Hypervolume = Hypervolume(front, Reference)
	var fl []*Point
	for _, p := range rep.Points {
		if p.OnFront {
			fl = append(fl, p)
		}
	}
	sort.SliceStable(fl, func(i, j int) bool { return fl[i].DR < fl[j].DR })
	for _, p := range fl {
		rep.Front = append(rep.Front, p.Label)
	}

	fwNames := make([]string, 0, len(frameworks))
	for fw := range frameworks {
		fwNames = append(fwNames, fw)
	}
	sort.Strings(fwNames)
	for _, fw := range fwNames {
		var prev *Point
		for _, p := range rep.Points {
			if p.Framework != fw {
				continue
			}
			if prev != nil {
				m := move(prev, p, b)
				p.Collapse = p.Collapse || m.Collapse
				rep.Moves = append(rep.Moves, m)
			}
			prev = p
		}
	}
	return rep, nil
}

// Dominates reports whether a = (DR, CSR) dominates b: no worse in both,
// strictly better in one.
func Dominates(a, b [2]float64) bool {
	return a[0] <= b[0] && a[1] >= b[1] && (a[0] < b[0] || a[1] > b[1])
}

// Front marks the points that no other point dominates.
func Front(points [][2]float64) []bool {
	on := make([]bool, len(points))
	for i := range points {
		on[i] = true
		for j := range points {
			if i != j && Dominates(points[j], points[i]) {
				on[i] = false
				break
			}
		}
	}
	return on
}

// Hypervolume is the area dominated by the points and bounded by the
// reference point ref = (DR, CSR): the union of the rectangles
// [DR_i, ref_DR] × [ref_CSR, CSR_i].
func Hypervolume(points [][2]float64, ref [2]float64) float64 {
	var ps [][2]float64
	for _, p := range points {
		if p[0] < ref[0] && p[1] > ref[1] {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i][0] != ps[j][0] {
			return ps[i][0] < ps[j][0]
		}
		return ps[i][1] > ps[j][1]
	})
	// Sweep from the lowest DR: each strip [DR_i, DR_next) is covered up to
	// the best CSR seen so far.
	var hv, best float64
	best = ref[1]
	for i, p := range ps {
		if p[1] > best {
			best = p[1]
		}
		next := ref[0]
		if i+1 < len(ps) {
			next = ps[i+1][0]
		}
		hv += (next - p[0]) * (best - ref[1])
	}
	return hv
}

// Classify names a move from the intervals of its DR and CSR changes: an
// interval that excludes 0 is a significant change; lower DR and higher
// CSR are better.
func Classify(dDR, dCSR metrics.CI) string {
	better, worse := 0, 0
	switch {
	case below(dDR):
		better++
	case above(dDR):
		worse++
	}
	switch {
	case above(dCSR):
		better++
	case below(dCSR):
		worse++
	}
	switch {
	case better > 0 && worse > 0:
		return TradeOff
	case better > 0:
		return Improvement
	case worse > 0:
		return Regression
	}
	return NoChange
}

// below: the interval lies entirely below 0.
func below(ci metrics.CI) bool { return ci.Lo().Defined() && ci.Hi().Defined() && ci.Hi() < 0 }

// above: the interval lies entirely above 0.
func above(ci metrics.CI) bool { return ci.Lo().Defined() && ci.Hi().Defined() && ci.Lo() > 0 }

func move(a, b *Point, bs metrics.Bootstrap) *Move {
	m := &Move{From: a.Label, To: b.Label, FromStep: a.Step, ToStep: b.Step}
	ca, cb := a.counts, b.counts
	byID := map[string]metrics.ScenarioCounts{}
	for _, c := range ca {
		byID[c.ID] = c
	}
	var rows [][]float64
	for _, c := range cb { // both sorted by id
		if x, ok := byID[c.ID]; ok {
			rows = append(rows, append(metrics.CountsRow(x), metrics.CountsRow(c)...))
		}
	}
	m.Shared = len(rows)
	nan := metrics.CI{metrics.NaN(), metrics.NaN()}
	if len(rows) == 0 {
		m.DDR, m.DCSR, m.DTSR, m.DCCSR = metrics.NaN(), metrics.NaN(), metrics.NaN(), metrics.NaN()
		m.DDRCI, m.DCSRCI, m.DTSRCI, m.DCCSRCI = nan, nan, nan, nan
		m.Class = NotComparable
		m.Summary = fmt.Sprintf("%s and %s share no scenario: not comparable", a.Label, b.Label)
		return m
	}
	w := metrics.CountsWidth
	delta := func(f func([]float64, int) float64) func([]float64) float64 {
		return func(s []float64) float64 { return f(s, w) - f(s, 0) }
	}
	stats := []func([]float64) float64{delta(metrics.CountsDR), delta(metrics.CountsCSR), delta(metrics.CountsTSR), delta(metrics.CountsCCSR)}
	total := metrics.Sum(rows)
	m.DDR, m.DCSR, m.DTSR, m.DCCSR = metrics.Num(stats[0](total)), metrics.Num(stats[1](total)), metrics.Num(stats[2](total)), metrics.Num(stats[3](total))
	cis := bs.CIs(rows, "paired", stats)
	m.DDRCI, m.DCSRCI, m.DTSRCI, m.DCCSRCI = cis[0], cis[1], cis[2], cis[3]
	m.Class = Classify(m.DDRCI, m.DCSRCI)
	// Collapse: DR falls while CCSR falls significantly, unless CSR rises
	// significantly (an agent that finishes more tasks cleanly has not
	// stopped working, whatever the mix of its non-drifting episodes).
	m.Collapse = m.DDR.Defined() && m.DDR < 0 && below(m.DCCSRCI) && !above(m.DCSRCI)
	m.Summary = summary(m)
	return m
}

func summary(m *Move) string {
	sig := func(ci metrics.CI) string {
		if below(ci) || above(ci) {
			return "significant"
		}
		return "not significant"
	}
	s := fmt.Sprintf("%s → %s: %s (ΔDR %+.3f, %s; ΔCSR %+.3f, %s; %d shared scenarios)",
		m.From, m.To, m.Class, float64(m.DDR), sig(m.DDRCI), float64(m.DCSR), sig(m.DCSRCI), m.Shared)
	if m.Collapse {
		s += fmt.Sprintf("; capability collapse: DR falls but CCSR falls too (ΔCCSR %+.3f, significant)", float64(m.DCCSR))
	}
	return s
}
