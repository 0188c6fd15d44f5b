package metrics

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Bootstrap is an expanded percentile bootstrap over scenarios (Hesterberg
// 2015: the tails are moved out so that, with m scenarios, the interval is
// as wide as a t interval on m − 1 degrees of freedom): each replicate draws
// as many scenarios as there are, with replacement, and keeps every rollout
// of a drawn scenario (a scenario's row holds the sums over its rollouts).
// The draws are a function of Seed, a stream name and the number of rows
// only, so results are reproducible, a group's intervals do not depend on
// which other groups exist or what they are called, and groups on the same
// scenarios share their resamples.
type Bootstrap struct {
	Replicates int     // number of replicates; 0 means DefaultReplicates
	Seed       uint64  // seed of the draws
	Level      float64 // confidence level; 0 means 0.95
}

// DefaultReplicates is the number of bootstrap replicates unless set.
const DefaultReplicates = 1000

func (b Bootstrap) replicates() int {
	if b.Replicates <= 0 {
		return DefaultReplicates
	}
	return b.Replicates
}

func (b Bootstrap) level() float64 {
	if b.Level <= 0 || b.Level >= 1 {
		return 0.95
	}
	return b.Level
}

// Rand returns the generator of a stream: PCG seeded with Seed and a hash
// of the stream name.
func (b Bootstrap) Rand(stream string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return rand.New(rand.NewPCG(b.Seed, h.Sum64()))
}

// CIs resamples rows (one per scenario, all the same length) and returns,
// for each statistic, the percentile interval of its value on the summed
// rows of the replicates. Replicates where a statistic is undefined (NaN)
// are left out of its interval; an interval with no defined replicate is
// undefined. With no rows every interval is undefined.
func (b Bootstrap) CIs(rows [][]float64, stream string, stats []func(sum []float64) float64) []CI {
	out := make([]CI, len(stats))
	for i := range out {
		out[i] = CI{NaN(), NaN()}
	}
	if len(rows) == 0 || len(stats) == 0 {
		return out
	}
	width := len(rows[0])
	reps := b.replicates()
	vals := make([][]float64, len(stats))
	for i := range vals {
		vals[i] = make([]float64, 0, reps)
	}
	r := b.Rand(stream)
	sum := make([]float64, width)
	for range reps {
		clear(sum)
		for range rows {
			row := rows[r.IntN(len(rows))]
			for j, v := range row {
				sum[j] += v
			}
		}
		for i, f := range stats {
			if v := f(sum); !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals[i] = append(vals[i], v)
			}
		}
	}
	// Expanded percentile: with few scenarios the plain percentile interval
	// is too narrow (ExpandedAlpha).
	alpha := ExpandedAlpha(1-b.level(), len(rows))
	for i, v := range vals {
		out[i] = Percentile(v, alpha)
	}
	return out
}

// Percentile returns the (alpha/2, 1-alpha/2) empirical quantiles of the
// values (sorted in place), or an undefined interval when there are none.
func Percentile(vals []float64, alpha float64) CI {
	if len(vals) == 0 {
		return CI{NaN(), NaN()}
	}
	sort.Float64s(vals)
	return CI{
		Num(stat.Quantile(alpha/2, stat.Empirical, vals, nil)),
		Num(stat.Quantile(1-alpha/2, stat.Empirical, vals, nil)),
	}
}

// Sum adds rows element-wise.
func Sum(rows [][]float64) []float64 {
	if len(rows) == 0 {
		return nil
	}
	sum := make([]float64, len(rows[0]))
	for _, row := range rows {
		for j, v := range row {
			sum[j] += v
		}
	}
	return sum
}

// BiasCorrected is Efron's bias-corrected percentile interval: with z0 =
// Φ⁻¹(share of replicates below the estimate, ties counted half), the
// interval runs between the replicates' quantiles Φ(2·z0 ± z_{1−α/2}). The
// front's hypervolume is a maximum over checkpoints, biased upward in
// resamples; the correction re-centres the interval on the estimate. The
// values are sorted in place.
func BiasCorrected(vals []float64, estimate, alpha float64) CI {
	if len(vals) == 0 {
		return CI{NaN(), NaN()}
	}
	sort.Float64s(vals)
	below := 0.0
	for _, v := range vals {
		switch {
		case v < estimate:
			below++
		case v == estimate:
			below += 0.5
		}
	}
	share := below / float64(len(vals))
	share = math.Min(math.Max(share, 0.5/float64(len(vals))), 1-0.5/float64(len(vals)))
	z0 := distuv.UnitNormal.Quantile(share)
	z := distuv.UnitNormal.Quantile(1 - alpha/2)
	lo, hi := distuv.UnitNormal.CDF(2*z0-z), distuv.UnitNormal.CDF(2*z0+z)
	return CI{
		Num(stat.Quantile(lo, stat.Empirical, vals, nil)),
		Num(stat.Quantile(hi, stat.Empirical, vals, nil)),
	}
}
