package coverage

import (
	"flag"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var full = flag.Bool("full", false, "run the full coverage simulation (make coverage) and print its table")

// TestCoverage checks that every interval type covers the truth at least
// 93% of the time at the 95% level. The small version (make test) runs
// 200 simulated runs per cell at every rate and cluster count, with fewer
// bootstrap replicates; -full runs Full and prints the table of
// docs/scoring.md.
func TestCoverage(t *testing.T) {
	cfg := Full
	if !*full {
		cfg.Reps, cfg.Replicates = 200, 200
		if testing.Short() {
			cfg.Clusters = []int{8, 16}
		}
	}
	cells := Run(cfg)
	if *full {
		t.Logf("coverage at %.0f%% (%d runs per cell, %d rollouts per scenario, ICC %.2f, %d bootstrap replicates, seed %d):\n\n%s",
			100*cfg.Level, cfg.Reps, cfg.Rollouts, cfg.ICC, cfg.Replicates, cfg.Seed, Table(cells, cfg))
	}
	// A cell's coverage is an estimate from its runs (those where the
	// metric is defined): it fails when it is more than two Monte Carlo
	// standard errors below 0.93 (0.914 with the full 1000 runs, 0.894 with
	// the small version's 200), and every type's mean over its cells must
	// reach 0.93.
	sum, n := map[string]float64{}, map[string]int{}
	for _, c := range cells {
		require.Positive(t, c.Reps, "%s at rate %g with %d scenarios: never defined", c.Type, c.Rate, c.Clusters)
		floor := 0.93 - 2*math.Sqrt(0.93*0.07/float64(c.Reps))
		assert.GreaterOrEqual(t, c.Coverage(), floor, "%s at rate %g with %d scenarios (%d runs)", c.Type, c.Rate, c.Clusters, c.Reps)
		sum[c.Type] += c.Coverage()
		n[c.Type]++
	}
	for typ, s := range sum {
		assert.GreaterOrEqual(t, s/float64(n[typ]), 0.93, "%s: mean coverage", typ)
	}
}
