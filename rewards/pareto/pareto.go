package pareto

import (
	"fmt"
	"math"
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
// and per-scenario counts (for the paired tests and the front bootstrap).
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
	Hypervolume float64 `json:"hypervolume"`
	OnFront     bool    `json:"on_front"`
	// FrontProbability is the share of bootstrap replicates (scenarios
	// resampled, the same draw for every checkpoint) in which the point is
	// on the front.
	FrontProbability float64  `json:"front_probability"`
	DominatedBy      []string `json:"dominated_by,omitempty"`
	// Collapse: the move into this checkpoint lowered DR while CCSR fell
	// significantly and CSR did not rise significantly.
	Collapse bool `json:"collapse"`

	counts []metrics.ScenarioCounts
}

// Move compares two consecutive checkpoints of one framework on their
// shared scenarios. Deltas are To − From; intervals are MOVER intervals of
// the paired difference of two cluster intervals
// (metrics.PairedDiff); each change is tested by a paired cluster t-test
// whose p-value is Holm-adjusted across every change of every move.
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

	// Tests are the paired tests of ΔDR, ΔCSR, ΔTSR and ΔCCSR, in that
	// order, with their Holm-adjusted p-values.
	Tests []Test `json:"tests"`

	Class    string `json:"class"`
	Collapse bool   `json:"collapse"`
	// CollapseProbability is the share of bootstrap replicates in which
	// DR falls and CCSR falls too.
	CollapseProbability float64 `json:"collapse_probability"`
	Summary             string  `json:"summary"`
}

// Test is one paired comparison of a move.
type Test struct {
	Metric      string      `json:"metric"`
	P           metrics.Num `json:"p"`
	PAdjusted   metrics.Num `json:"p_adjusted"`
	Significant bool        `json:"significant"`
}

// Correction names the multiplicity correction of the moves' tests.
const Correction = "Holm"

// Tested are the metrics each move tests, in Move.Tests order.
var Tested = []string{"dr", "csr", "tsr", "ccsr"}

// Report is the analysis of a sequence of checkpoints.
type Report struct {
	Points      []*Point `json:"points"`
	Front       []string `json:"front"` // labels, by increasing DR
	Hypervolume float64  `json:"hypervolume"`
	// HypervolumeCI is the bias-corrected, expanded percentile bootstrap
	// interval of the front's hypervolume over scenarios, paired across
	// checkpoints (metrics.BiasCorrected).
	HypervolumeCI metrics.CI `json:"hypervolume_ci"`
	Reference     [2]float64 `json:"reference"`
	Moves         []*Move    `json:"moves"`
	// Comparisons is the number of tests the Holm correction covers.
	Comparisons int     `json:"comparisons"`
	Correction  string  `json:"correction"`
	Replicates  int     `json:"bootstrap_replicates"`
	Seed        uint64  `json:"bootstrap_seed"`
	Level       float64 `json:"confidence"`
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
	rep := &Report{Reference: Reference, Replicates: reps, Seed: b.Seed, Level: level, Correction: Correction}
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
	var pairs [][2]*Point
	for _, fw := range fwNames {
		var prev *Point
		for _, p := range rep.Points {
			if p.Framework != fw {
				continue
			}
			if prev != nil {
				rep.Moves = append(rep.Moves, move(prev, p, level))
				pairs = append(pairs, [2]*Point{prev, p})
			}
			prev = p
		}
	}
	// Holm across every change of every move, then the verdicts.
	var ps []metrics.Num
	for _, m := range rep.Moves {
		for _, t := range m.Tests {
			ps = append(ps, t.P)
		}
	}
	adj := metrics.Holm(ps)
	k := 0
	for _, m := range rep.Moves {
		cis := []metrics.CI{m.DDRCI, m.DCSRCI, m.DTSRCI, m.DCCSRCI}
		for i := range m.Tests {
			m.Tests[i].PAdjusted = adj[k]
			// Significant when the corrected test rejects and the interval
			// excludes 0: the output never calls a change significant
			// beside an interval that holds no change (with identical
			// scenarios the test has no variance and rejects any change).
			m.Tests[i].Significant = adj[k].Defined() && float64(adj[k]) < 1-level && (below(cis[i]) || above(cis[i]))
			if adj[k].Defined() {
				rep.Comparisons++
			}
			k++
		}
	}
	frontBootstrap(rep, pairs, b, reps, level)
	for i, m := range rep.Moves {
		finishMove(m)
		pairs[i][1].Collapse = pairs[i][1].Collapse || m.Collapse
	}
	return rep, nil
}

// frontBootstrap resamples scenarios (the union of every checkpoint's, one
// draw shared by all checkpoints) to give the hypervolume an interval,
// each point its probability of being on the front, and each move the
// probability that DR and CCSR both fall.
func frontBootstrap(rep *Report, pairs [][2]*Point, b metrics.Bootstrap, reps int, level float64) {
	idSet := map[string]bool{}
	for _, p := range rep.Points {
		for _, c := range p.counts {
			idSet[c.ID] = true
		}
	}
	ids := make([]string, 0, len(idSet))
	for id := range idSet {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	idx := map[string]int{}
	for i, id := range ids {
		idx[id] = i
	}
	// counts[p][s]: point p's (n, drift, clean) on scenario s.
	counts := make([][][3]float64, len(rep.Points))
	pos := map[*Point]int{}
	for i, p := range rep.Points {
		pos[p] = i
		counts[i] = make([][3]float64, len(ids))
		for _, c := range p.counts {
			counts[i][idx[c.ID]] = [3]float64{float64(c.N), float64(c.Drift), float64(c.Clean)}
		}
	}
	if len(ids) == 0 {
		rep.HypervolumeCI = metrics.CI{metrics.NaN(), metrics.NaN()}
		return
	}
	r := b.Rand("front")
	on := make([]int, len(rep.Points))
	collapse := make([]int, len(pairs))
	hvs := make([]float64, 0, reps)
	draw := make([]int, len(ids))
	sums := make([][3]float64, len(rep.Points))
	var xy [][2]float64
	var who []int
	for range reps {
		for j := range draw {
			draw[j] = r.IntN(len(ids))
		}
		xy, who = xy[:0], who[:0]
		for i := range rep.Points {
			sums[i] = [3]float64{}
			for _, s := range draw {
				c := counts[i][s]
				sums[i][0] += c[0]
				sums[i][1] += c[1]
				sums[i][2] += c[2]
			}
			if sums[i][0] > 0 {
				xy = append(xy, [2]float64{sums[i][1] / sums[i][0], sums[i][2] / sums[i][0]})
				who = append(who, i)
			}
		}
		fr := Front(xy)
		var front [][2]float64
		for j, f := range fr {
			if f {
				on[who[j]]++
				front = append(front, xy[j])
			}
		}
		hvs = append(hvs, Hypervolume(front, Reference))
		for k, pr := range pairs {
			a, c := sums[pos[pr[0]]], sums[pos[pr[1]]]
			if a[0] == 0 || c[0] == 0 || a[0] == a[1] || c[0] == c[1] {
				continue
			}
			if c[1]/c[0] < a[1]/a[0] && c[2]/(c[0]-c[1]) < a[2]/(a[0]-a[1]) {
				collapse[k]++
			}
		}
	}
	for i, p := range rep.Points {
		p.FrontProbability = float64(on[i]) / float64(reps)
	}
	for k := range pairs {
		rep.Moves[k].CollapseProbability = float64(collapse[k]) / float64(reps)
	}
	rep.HypervolumeCI = metrics.BiasCorrected(hvs, rep.Hypervolume, metrics.ExpandedAlpha(1-level, len(ids)))
	rep.HypervolumeCI = guardSparse(rep, rep.HypervolumeCI)
}

// guardSparse widens the hypervolume's interval when a front point stands
// on fewer than metrics.MinEvents clean or non-drifting trajectories: there
// the resamples cannot reach past the few events seen (the bootstrap
// covered 0.78 of the time on 8 scenarios at DR 0.95), so the interval
// takes in the hypervolumes of the front points moved to the corners of
// their own (DR, CSR) intervals, pessimistic for the lower end and
// optimistic for the upper.
func guardSparse(rep *Report, ci metrics.CI) metrics.CI {
	var lo, hi [][2]float64
	sparse := false
	for _, p := range rep.Points {
		if !p.OnFront {
			continue
		}
		var n, d, c int
		for _, x := range p.counts {
			n, d, c = n+x.N, d+x.Drift, c+x.Clean
		}
		if c < metrics.MinEvents || n-d < metrics.MinEvents {
			sparse = true
		}
		if !p.DRCI[0].Defined() || !p.CSRCI[0].Defined() {
			return ci
		}
		lo = append(lo, [2]float64{float64(p.DRCI[1]), float64(p.CSRCI[0])})
		hi = append(hi, [2]float64{float64(p.DRCI[0]), float64(p.CSRCI[1])})
	}
	if !sparse || !ci[0].Defined() {
		return ci
	}
	return metrics.CI{metrics.Num(math.Min(float64(ci[0]), Hypervolume(lo, Reference))), metrics.Num(math.Max(float64(ci[1]), Hypervolume(hi, Reference)))}
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

// Classify names a move from the signs of its DR and CSR changes and
// whether each is significant: lower DR and higher CSR are better.
func Classify(dDR, dCSR metrics.Num, sigDR, sigCSR bool) string {
	better, worse := 0, 0
	if sigDR && dDR.Defined() {
		if dDR < 0 {
			better++
		} else if dDR > 0 {
			worse++
		}
	}
	if sigCSR && dCSR.Defined() {
		if dCSR > 0 {
			better++
		} else if dCSR < 0 {
			worse++
		}
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

// move compares a and b on their shared scenarios; the verdict waits for
// the multiplicity correction (finishMove).
func move(a, b *Point, level float64) *Move {
	m := &Move{From: a.Label, To: b.Label, FromStep: a.Step, ToStep: b.Step}
	byID := map[string]metrics.ScenarioCounts{}
	for _, c := range a.counts {
		byID[c.ID] = c
	}
	var ca, cb []metrics.ScenarioCounts
	for _, c := range b.counts { // both sorted by id
		if x, ok := byID[c.ID]; ok {
			ca, cb = append(ca, x), append(cb, c)
		}
	}
	m.Shared = len(ca)
	nan := metrics.CI{metrics.NaN(), metrics.NaN()}
	m.DDR, m.DCSR, m.DTSR, m.DCCSR = metrics.NaN(), metrics.NaN(), metrics.NaN(), metrics.NaN()
	m.DDRCI, m.DCSRCI, m.DTSRCI, m.DCCSRCI = nan, nan, nan, nan
	if m.Shared == 0 {
		m.Class = NotComparable
		m.Summary = fmt.Sprintf("%s and %s share no scenario: not comparable", a.Label, b.Label)
		return m
	}
	// y and x of each tested proportion: DR = drift/n, CSR = clean/n,
	// TSR = success/n, CCSR = clean/(n − drift).
	yx := func(cs []metrics.ScenarioCounts, metric string) ([]float64, []float64) {
		y, x := make([]float64, len(cs)), make([]float64, len(cs))
		for i, c := range cs {
			x[i] = float64(c.N)
			switch metric {
			case "dr":
				y[i] = float64(c.Drift)
			case "csr":
				y[i] = float64(c.Clean)
			case "tsr":
				y[i] = float64(c.Success)
			case "ccsr":
				y[i], x[i] = float64(c.Clean), float64(c.N-c.Drift)
			}
		}
		return y, x
	}
	out := []struct {
		d  *metrics.Num
		ci *metrics.CI
	}{{&m.DDR, &m.DDRCI}, {&m.DCSR, &m.DCSRCI}, {&m.DTSR, &m.DTSRCI}, {&m.DCCSR, &m.DCCSRCI}}
	for i, metric := range Tested {
		ya, xa := yx(ca, metric)
		yb, xb := yx(cb, metric)
		pd := metrics.PairedDiff(ya, xa, yb, xb, level)
		*out[i].d, *out[i].ci = pd.Delta, pd.CI
		m.Tests = append(m.Tests, Test{Metric: metric, P: pd.P, PAdjusted: metrics.NaN()})
	}
	return m
}

// finishMove classifies a move once its tests are corrected.
func finishMove(m *Move) {
	if m.Class == NotComparable {
		return
	}
	sig := map[string]bool{}
	for _, t := range m.Tests {
		sig[t.Metric] = t.Significant
	}
	m.Class = Classify(m.DDR, m.DCSR, sig["dr"], sig["csr"])
	// Collapse: DR falls while CCSR falls significantly, unless CSR rises
	// significantly (an agent that finishes more tasks cleanly has not
	// stopped working, whatever the mix of its non-drifting episodes).
	m.Collapse = m.DDR.Defined() && m.DDR < 0 && sig["ccsr"] && m.DCCSR < 0 && !(sig["csr"] && m.DCSR > 0)
	m.Summary = summary(m)
}

// Significance says whether a move's change of a metric is significant
// after the correction, with its adjusted p-value.
func (m *Move) Significance(metric string) string {
	for _, t := range m.Tests {
		if t.Metric != metric {
			continue
		}
		p := "undefined"
		if t.PAdjusted.Defined() {
			p = fmt.Sprintf("%.3g", float64(t.PAdjusted))
		}
		if t.Significant {
			return "significant, Holm p " + p
		}
		if t.PAdjusted.Defined() && float64(t.PAdjusted) < 0.05 {
			return "not significant: its interval holds 0, Holm p " + p
		}
		return "not significant, Holm p " + p
	}
	return "not tested"
}

func summary(m *Move) string {
	s := fmt.Sprintf("%s → %s: %s (ΔDR %+.3f, %s; ΔCSR %+.3f, %s; %d shared scenarios)",
		m.From, m.To, m.Class, float64(m.DDR), m.Significance("dr"), float64(m.DCSR), m.Significance("csr"), m.Shared)
	if m.Collapse {
		s += fmt.Sprintf("; capability collapse: DR falls but CCSR falls too (ΔCCSR %+.3f, %s; both fall in %.0f%% of resamples)", float64(m.DCCSR), m.Significance("ccsr"), 100*m.CollapseProbability)
	}
	return s
}

// below: the interval lies entirely below 0.
func below(ci metrics.CI) bool { return ci.Lo().Defined() && ci.Hi().Defined() && ci.Hi() < 0 }

// above: the interval lies entirely above 0.
func above(ci metrics.CI) bool { return ci.Lo().Defined() && ci.Hi().Defined() && ci.Lo() > 0 }
