package pareto

import (
	"fmt"
	"sort"
	"testing"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// tenEach is a checkpoint whose scenario i has 10 rollouts, all successes,
// drift[i] of them drifting.
func tenEach(name string, step int, drift []int) Input {
	in := Input{Checkpoint: name, Framework: "normal", Step: step}
	var d int
	for i, x := range drift {
		in.Counts = append(in.Counts, metrics.ScenarioCounts{ID: fmt.Sprintf("s%d", i), N: 10, Success: 10, Drift: x, Clean: 10 - x})
		d += x
	}
	n := 10 * len(drift)
	in.N, in.Scenarios = n, len(drift)
	in.DR, in.CSR, in.TSR, in.CCSR = metrics.Num(float64(d)/float64(n)), metrics.Num(float64(n-d)/float64(n)), 1, 1
	return in
}

// The Holm correction against a hand-computed table. a → b: ΔDR = 0.1
// with per-scenario influences differing by (0, −1, 0, 1)/40, so
// t = 0.1 / sqrt(4/3 · 2/1600) = 2.4495 on 3 df, p = 0.091721 (the t CDF
// in closed form); ΔCSR = −ΔDR, the same p; ΔTSR and ΔCCSR do not move
// (p = 1). b → c: nothing moves (p = 1 four times). Eight comparisons:
//
//	rank  p         × (m − rank + 1)  running max  adjusted
//	1     0.091721  8                 0.733769     0.733769
//	2     0.091721  7                 0.642048     0.733769
//	3–8   1         6 … 1             1            1
func TestHolmAcrossMovesHand(t *testing.T) {
	a := tenEach("a", 0, []int{0, 0, 4, 2})
	b := tenEach("b", 1, []int{1, 0, 5, 4})
	c := tenEach("c", 2, []int{1, 0, 5, 4})
	rep, err := Analyze([]Input{a, b, c}, metrics.Bootstrap{Seed: 1, Replicates: 100})
	require.NoError(t, err)
	assert.Equal(t, 8, rep.Comparisons)
	assert.Equal(t, "Holm", rep.Correction)
	want := [][4]struct{ p, adj float64 }{
		{{0.09172111331157184, 0.7337689064925747}, {0.09172111331157184, 0.7337689064925747}, {1, 1}, {1, 1}},
		{{1, 1}, {1, 1}, {1, 1}, {1, 1}},
	}
	require.Len(t, rep.Moves, 2)
	for i, m := range rep.Moves {
		require.Len(t, m.Tests, 4)
		for j, tt := range m.Tests {
			assert.Equal(t, Tested[j], tt.Metric)
			assert.InDelta(t, want[i][j].p, float64(tt.P), 1e-9, "move %d %s raw", i, tt.Metric)
			assert.InDelta(t, want[i][j].adj, float64(tt.PAdjusted), 1e-9, "move %d %s adjusted", i, tt.Metric)
			assert.False(t, tt.Significant)
		}
		assert.Equal(t, NoChange, m.Class)
	}
	// Uncorrected, a → b's ΔDR would not be significant either (0.092 >
	// 0.05); the summary names the correction and the adjusted p.
	assert.Contains(t, rep.Moves[0].Summary, "not significant, Holm p 0.734")
}

// TestFrontUncertaintyRecomputed recomputes the hypervolume interval and
// the front probabilities from the same seed with code of its own: the
// draw (the "front" stream of the seed, one scenario index per scenario of
// the union), then per checkpoint DR and CSR on the drawn scenarios, the
// front by brute force and the hypervolume by summing strips.
func TestFrontUncertaintyRecomputed(t *testing.T) {
	ins := []Input{
		tenEach("a", 0, []int{5, 4, 6, 5, 3, 7, 5, 4}),
		tenEach("b", 1, []int{3, 2, 5, 2, 1, 4, 3, 2}),
		tenEach("c", 2, []int{1, 0, 2, 3, 0, 1, 2, 1}),
	}
	// c does less: fewer successes, so CSR trades against DR.
	for i := range ins[2].Counts {
		cc := &ins[2].Counts[i]
		cc.Success, cc.Clean = 6, 6-cc.Drift+(i%3)
		if cc.Clean < 0 {
			cc.Clean = 0
		}
	}
	bs := metrics.Bootstrap{Seed: 7, Replicates: 400}
	rep, err := Analyze(ins, bs)
	require.NoError(t, err)

	r := bs.Rand("front")
	ids := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}
	on := map[string]int{}
	var hvs []float64
	for range 400 {
		draw := make([]string, len(ids))
		for j := range draw {
			draw[j] = ids[r.IntN(len(ids))]
		}
		type pt struct {
			name    string
			dr, csr float64
		}
		var pts []pt
		for _, in := range ins {
			byID := map[string]metrics.ScenarioCounts{}
			for _, c := range in.Counts {
				byID[c.ID] = c
			}
			var n, d, cl float64
			for _, id := range draw {
				n += float64(byID[id].N)
				d += float64(byID[id].Drift)
				cl += float64(byID[id].Clean)
			}
			pts = append(pts, pt{in.Checkpoint, d / n, cl / n})
		}
		var front []pt
		for _, p := range pts {
			dominated := false
			for _, q := range pts {
				if q.dr <= p.dr && q.csr >= p.csr && (q.dr < p.dr || q.csr > p.csr) {
					dominated = true
				}
			}
			if !dominated {
				on[p.name]++
				front = append(front, p)
			}
		}
		// Strips between consecutive DRs of the front, each as high as
		// the best CSR at or left of it.
		sort.Slice(front, func(i, j int) bool { return front[i].dr < front[j].dr })
		hv := 0.0
		for i, p := range front {
			right := 1.0
			if i+1 < len(front) {
				right = front[i+1].dr
			}
			best := 0.0
			for _, q := range front[:i+1] {
				best = max(best, q.csr)
			}
			hv += (right - p.dr) * best
		}
		hvs = append(hvs, hv)
	}
	for _, p := range rep.Points {
		assert.InDelta(t, float64(on[p.Checkpoint])/400, p.FrontProbability, 1e-12, p.Checkpoint)
	}
	// Efron's bias correction, by hand: z0 from the share below the
	// estimate (ties half), quantiles Φ(2·z0 ± z) of the expanded level.
	sort.Float64s(hvs)
	below := 0.0
	for _, h := range hvs {
		if h < rep.Hypervolume {
			below++
		} else if h == rep.Hypervolume {
			below += 0.5
		}
	}
	nrm := distuv.UnitNormal
	z0 := nrm.Quantile(below / 400)
	z := nrm.Quantile(1 - metrics.ExpandedAlpha(0.05, len(ids))/2)
	want := metrics.CI{
		metrics.Num(stat.Quantile(nrm.CDF(2*z0-z), stat.Empirical, hvs, nil)),
		metrics.Num(stat.Quantile(nrm.CDF(2*z0+z), stat.Empirical, hvs, nil)),
	}
	assert.InDelta(t, float64(want[0]), float64(rep.HypervolumeCI[0]), 1e-12)
	assert.InDelta(t, float64(want[1]), float64(rep.HypervolumeCI[1]), 1e-12)
	assert.LessOrEqual(t, float64(rep.HypervolumeCI[0]), rep.Hypervolume)
	assert.GreaterOrEqual(t, float64(rep.HypervolumeCI[1]), rep.Hypervolume)
	// Some membership is uncertain in this family, or the test shows nothing.
	uncertain := false
	for _, p := range rep.Points {
		uncertain = uncertain || (p.FrontProbability > 0 && p.FrontProbability < 1)
	}
	assert.True(t, uncertain, "%v", rep.Points)
}
