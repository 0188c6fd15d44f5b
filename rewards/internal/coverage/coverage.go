// Package coverage measures, by simulation with a known truth, how often
// the intervals antidrift prints cover the true value: clustered Bernoulli
// runs (scenarios as clusters, rollouts as trials, each scenario's rate
// drawn from a Beta distribution around the true rate with a fixed
// intra-cluster correlation), scored by the same functions as score and
// pareto.
//
// Owns: the coverage simulation only; imports rewards/metrics and
// rewards/pareto, nothing that reads runs.
package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/pareto"
	"gonum.org/v1/gonum/stat/distuv"
)

// Interval types, one per way antidrift makes an interval.
const (
	// Proportion: TSR, DR, DR_annotated, CSR and every per-breakdown rate
	// (metrics.PropCI, cluster Wilson).
	Proportion = "proportion (TSR, DR, CSR, breakdowns)"
	// CCSR: clean / non-drifting trajectories (metrics.PropCI).
	CCSR = "CCSR (clean / non-drifting)"
	// Difference: a move's change between checkpoints (metrics.PairedDiff).
	Difference = "paired difference (moves)"
	// PerStep: a count per step, not a proportion (metrics.RateCI, as the
	// attack-surface rates).
	PerStep = "rate per step (exposure surfaces)"
	// PassK: pass^k, a mean over scenarios of C(c, k)/C(n, k) (PropCI of
	// a quasi-binomial proportion of scenarios).
	PassK = "pass^4 of 8 rollouts"
	// PR: persistence DR@any / DR (metrics.RatioCI).
	PR = "persistence PR = DR@any / DR"
	// Hypervolume: the front's hypervolume (pareto, paired bootstrap).
	Hypervolume = "hypervolume (bootstrap)"
)

// Types lists the interval types in table order.
var Types = []string{Proportion, CCSR, Difference, PerStep, PassK, PR, Hypervolume}

// Config sizes a simulation.
type Config struct {
	Rates    []float64 // true rates
	Clusters []int     // scenarios per simulated run
	Rollouts int       // rollouts per scenario
	ICC      float64   // intra-cluster correlation of the Beta draws
	Reps     int       // simulated runs per cell
	// Replicates of the bootstrap intervals.
	Replicates int
	Seed       uint64
	Level      float64
}

// Full is the simulation docs/scoring.md reports (make coverage).
var Full = Config{
	Rates: []float64{0.02, 0.05, 0.2, 0.5, 0.7, 0.95}, Clusters: []int{8, 16, 117},
	Rollouts: 8, ICC: 0.2, Reps: 1000, Replicates: 400, Seed: 1, Level: 0.95,
}

// Cell is one (type, rate, clusters) coverage.
type Cell struct {
	Type     string
	Rate     float64
	Clusters int
	Covered  int
	// Reps counts the simulated runs in which the metric is defined (PR is
	// not without drift): coverage is over those.
	Reps int
}

// Coverage is the share of runs whose interval covered the truth.
func (c Cell) Coverage() float64 { return float64(c.Covered) / float64(c.Reps) }

// Run simulates every cell; cells come in Types × Rates × Clusters order.
func Run(cfg Config) []Cell {
	var out []Cell
	for _, typ := range Types {
		for ri, rate := range cfg.Rates {
			for ci, m := range cfg.Clusters {
				r := rand.New(rand.NewPCG(cfg.Seed, uint64(1000*ri+ci+1)<<8|uint64(typeIndex(typ))))
				c := Cell{Type: typ, Rate: rate, Clusters: m}
				for rep := range cfg.Reps {
					cov, defined := covers(typ, rate, m, cfg, r, uint64(rep))
					if defined {
						c.Reps++
					}
					if cov {
						c.Covered++
					}
				}
				out = append(out, c)
			}
		}
	}
	return out
}

func typeIndex(t string) int {
	for i, x := range Types {
		if x == t {
			return i
		}
	}
	return -1
}

// beta draws a scenario's rate: mean p, intra-cluster correlation icc.
func beta(r *rand.Rand, p, icc float64) float64 {
	k := (1 - icc) / icc
	return distuv.Beta{Alpha: p * k, Beta: (1 - p) * k, Src: r}.Rand()
}

func binom(r *rand.Rand, n int, p float64) float64 {
	s := 0
	for range n {
		if r.Float64() < p {
			s++
		}
	}
	return float64(s)
}

func in(ci metrics.CI, v float64) bool {
	return ci[0].Defined() && ci[1].Defined() && float64(ci[0]) <= v+1e-12 && v <= float64(ci[1])+1e-12
}

// shift moves a rate on the logit scale: the second checkpoint of a paired
// comparison keeps each scenario's difficulty.
func shift(p, d float64) float64 {
	if p <= 0 || p >= 1 {
		return p
	}
	l := math.Log(p/(1-p)) + d
	return 1 / (1 + math.Exp(-l))
}

// moveShift is the logit shift of the second checkpoint in Difference.
const moveShift = 0.4

// trueDiff is E[shift(P, d)] − E[P] for P ~ Beta(p, icc), by quadrature on
// the Beta density (the truth of the Difference cells).
func trueDiff(p, icc, d float64) float64 {
	k := (1 - icc) / icc
	b := distuv.Beta{Alpha: p * k, Beta: (1 - p) * k}
	// Integrate over the Beta quantiles: E[f(P)] = ∫₀¹ f(Q(u)) du.
	const n = 20000
	s := 0.0
	for i := range n {
		u := (float64(i) + 0.5) / n
		q := b.Quantile(u)
		s += shift(q, d) - q
	}
	return s / n
}

var diffTruth = map[[2]float64]float64{}

// betaMean is E[f(P)] for P ~ Beta(p, icc), by quadrature on the quantiles.
func betaMean(p, icc float64, f func(q float64) float64) float64 {
	k := (1 - icc) / icc
	b := distuv.Beta{Alpha: p * k, Beta: (1 - p) * k}
	const n = 20000
	s := 0.0
	for i := range n {
		s += f(b.Quantile((float64(i) + 0.5) / n))
	}
	return s / n
}

var momentTruth = map[[3]float64]float64{}

// truthOf caches a quadrature truth.
func truthOf(kind, p, icc float64, f func(q float64) float64) float64 {
	key := [3]float64{kind, p, icc}
	if v, ok := momentTruth[key]; ok {
		return v
	}
	v := betaMean(p, icc, f)
	momentTruth[key] = v
	return v
}

// covers simulates one run and says whether the interval covered the truth
// and whether the metric was defined at all.
func covers(typ string, p float64, m int, cfg Config, r *rand.Rand, rep uint64) (bool, bool) {
	k := cfg.Rollouts
	bs := metrics.Bootstrap{Replicates: cfg.Replicates, Seed: cfg.Seed + rep, Level: cfg.Level}
	switch typ {
	case Proportion:
		y, x := make([]float64, m), make([]float64, m)
		for i := range m {
			y[i], x[i] = binom(r, k, beta(r, p, cfg.ICC)), float64(k)
		}
		return in(metrics.ClusterCI(y, x, cfg.Level), p), true
	case CCSR:
		// Success at rate p, drift at 0.2, independent: CCSR = p.
		y, x := make([]float64, m), make([]float64, m)
		for i := range m {
			ps, pd := beta(r, p, cfg.ICC), beta(r, 0.2, cfg.ICC)
			for range k {
				drift := r.Float64() < pd
				succ := r.Float64() < ps
				if !drift {
					x[i]++
					if succ {
						y[i]++
					}
				}
			}
		}
		return in(metrics.ClusterCI(y, x, cfg.Level), p), true
	case Difference:
		key := [2]float64{p, cfg.ICC}
		truth, ok := diffTruth[key]
		if !ok {
			truth = trueDiff(p, cfg.ICC, moveShift)
			diffTruth[key] = truth
		}
		ya, yb, x := make([]float64, m), make([]float64, m), make([]float64, m)
		for i := range m {
			q := beta(r, p, cfg.ICC)
			ya[i], yb[i], x[i] = binom(r, k, q), binom(r, k, shift(q, moveShift)), float64(k)
		}
		return in(metrics.PairedDiff(ya, x, yb, x, cfg.Level).CI, truth), true
	case PerStep:
		// 1–5 steps per trajectory, each a Bernoulli trial (a risky tool
		// visible) at the scenario's rate: truth p per step.
		y, x := make([]float64, m), make([]float64, m)
		for i := range m {
			q := beta(r, p, cfg.ICC)
			for range k {
				steps := 1 + r.IntN(5)
				y[i] += binom(r, steps, q)
				x[i] += float64(steps)
			}
		}
		return in(metrics.RateCI(y, x, cfg.Level), p), true
	case PassK:
		// Clean at rate p: pass^4 of a scenario is C(c, 4)/C(8, 4), whose
		// mean is E[q⁴].
		truth := truthOf(1, p, cfg.ICC, func(q float64) float64 { return q * q * q * q })
		y, x := make([]float64, m), make([]float64, m)
		for i := range m {
			c := int(binom(r, k, beta(r, p, cfg.ICC)))
			y[i], x[i] = metrics.PassK(c, k, 4), 1
		}
		return in(metrics.ClusterCI(y, x, cfg.Level), truth), true
	case PR:
		// Drift at rate p: DR@any = 1 − E[(1 − q)^k], PR = DR@any / p.
		any := truthOf(2, p, cfg.ICC, func(q float64) float64 { return 1 - math.Pow(1-q, float64(k)) })
		yd, xd, ya, xa := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
		var d, n, a float64
		for i := range m {
			yd[i], xd[i] = binom(r, k, beta(r, p, cfg.ICC)), float64(k)
			if yd[i] > 0 {
				ya[i] = 1
			}
			xa[i] = 1
			d, n, a = d+yd[i], n+xd[i], a+ya[i]
		}
		ci := metrics.RatioCI(a/float64(m), d/n, metrics.ClusterCI(ya, xa, cfg.Level), metrics.ClusterCI(yd, xd, cfg.Level))
		if d == 0 {
			return false, false // PR is undefined without drift: nothing printed
		}
		return in(ci, any/p), true
	case Hypervolume:
		// One checkpoint drifting at rate p, succeeding at 0.7, drift and
		// success independent: the front is the point, its hypervolume
		// (1 − DR)·CSR with truth (1 − p)·0.7·(1 − p).
		var cs []metrics.ScenarioCounts
		var n, d, cl int
		for i := range m {
			pd, ps := beta(r, p, cfg.ICC), beta(r, 0.7, cfg.ICC)
			c := metrics.ScenarioCounts{ID: fmt.Sprintf("s%03d", i), N: k}
			for range k {
				drift, succ := r.Float64() < pd, r.Float64() < ps
				if drift {
					c.Drift++
				}
				if succ {
					c.Success++
				}
				if succ && !drift {
					c.Clean++
				}
			}
			n, d, cl = n+c.N, d+c.Drift, cl+c.Clean
			cs = append(cs, c)
		}
		// The point's own intervals, as metrics gives them to pareto.
		yd, yc, x := make([]float64, m), make([]float64, m), make([]float64, m)
		for i, c := range cs {
			yd[i], yc[i], x[i] = float64(c.Drift), float64(c.Clean), float64(c.N)
		}
		in0 := pareto.Input{Checkpoint: "sim", Framework: "normal", N: n, Scenarios: m,
			DR: metrics.Num(float64(d) / float64(n)), CSR: metrics.Num(float64(cl) / float64(n)), Counts: cs,
			DRCI: metrics.ClusterCI(yd, x, cfg.Level), CSRCI: metrics.ClusterCI(yc, x, cfg.Level)}
		rp, err := pareto.Analyze([]pareto.Input{in0}, bs)
		if err != nil {
			return false, true
		}
		return in(rp.HypervolumeCI, (1-p)*0.7*(1-p)), true
	}
	return false, true
}

// Table is the cells as a Markdown table: one row per type and rate, one
// column per cluster count.
func Table(cells []Cell, cfg Config) string {
	var b strings.Builder
	b.WriteString("| interval | rate |")
	for _, m := range cfg.Clusters {
		fmt.Fprintf(&b, " %d scenarios |", m)
	}
	b.WriteString("\n|---|---:|")
	b.WriteString(strings.Repeat("---:|", len(cfg.Clusters)))
	b.WriteString("\n")
	for i := 0; i < len(cells); i += len(cfg.Clusters) {
		fmt.Fprintf(&b, "| %s | %g |", cells[i].Type, cells[i].Rate)
		for _, c := range cells[i : i+len(cfg.Clusters)] {
			if c.Reps < cfg.Reps {
				fmt.Fprintf(&b, " %.3f (%d defined) |", c.Coverage(), c.Reps)
				continue
			}
			fmt.Fprintf(&b, " %.3f |", c.Coverage())
		}
		b.WriteString("\n")
	}
	return b.String()
}
