package metrics

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// Bandwidth is Silverman's rule of thumb for weighted data on [0, 1]:
// 0.9 · min(sd, IQR/1.34) · N^(−1/5), N the total weight, with sd and the
// quartiles weighted (xs sorted ascending). Degenerate data (fewer than two
// points, or no spread) get 0.1; the result is at least 0.04, as positions
// are fractions with small denominators.
func Bandwidth(xs, ws []float64) float64 {
	n := floats.Sum(ws)
	if n < 2 || len(xs) == 0 {
		return 0.1
	}
	_, sd := stat.MeanStdDev(xs, ws)
	spread := sd
	q1 := stat.Quantile(0.25, stat.Empirical, xs, ws)
	q3 := stat.Quantile(0.75, stat.Empirical, xs, ws)
	if iqr := (q3 - q1) / 1.34; iqr > 0 && iqr < spread {
		spread = iqr
	}
	if !(spread > 0) {
		return 0.1
	}
	return math.Max(0.9*spread*math.Pow(n, -0.2), 0.04)
}

// KDE is a Gaussian kernel density of weighted points on [0, 1], evaluated
// on grid, with reflection at both ends so that no mass leaks outside the
// interval: f(x) = Σ w_i [φ((x−x_i)/h) + φ((x+x_i)/h) + φ((x−2+x_i)/h)] / (h Σ w_i).
func KDE(xs, ws []float64, h float64, grid []float64) []float64 {
	out := make([]float64, len(grid))
	n := floats.Sum(ws)
	if n == 0 || h <= 0 {
		return out
	}
	phi := func(u float64) float64 { return math.Exp(-u*u/2) / math.Sqrt(2*math.Pi) }
	for g, x := range grid {
		var d float64
		for i, xi := range xs {
			d += ws[i] * (phi((x-xi)/h) + phi((x+xi)/h) + phi((x-2+xi)/h))
		}
		out[g] = d / (n * h)
	}
	return out
}
