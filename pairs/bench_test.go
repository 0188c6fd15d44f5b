package pairs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// benchRollouts is the rollouts per scenario of the benchmark run: with
// sim:base, most candidates of a pool are duplicates of an emitted pair,
// as in a run of thousands of rollouts.
const benchRollouts = 100

var benchRoot string

// benchRun rolls sim:base out on the built-in suite once (benchRollouts
// rollouts per scenario: 4,300 trajectories) and returns the run folder.
var benchRun = sync.OnceValues(func() (string, error) {
	var err error
	if benchRoot, err = os.MkdirTemp("", "antidrift-pairs-bench-"); err != nil {
		return "", err
	}
	d := filepath.Join(benchRoot, "base")
	return d, simRun(d, "base", benchRollouts, 1, 8)
})

// BenchmarkBuild pairs a run of 4,300 simulated trajectories, records read
// from the run folder included (what `antidrift pairs` does), with the
// command's default table (drift-onset step pairs, next turn), both pair
// types continued to the end, and a character limit (which sizes every
// candidate before dedup).
func BenchmarkBuild(b *testing.B) {
	dir, err := benchRun()
	if err != nil {
		b.Fatal(err)
	}
	cfg := rewards.Default()
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	reward := func(r *trajectory.Record) (float64, error) {
		res, err := cfg.Score(r)
		return res.Reward, err
	}
	cases := []struct {
		name string
		opt  func(*pairs.Options)
	}{
		{"step-turn", func(o *pairs.Options) {
			o.TrajectoryPairs, o.StepPairs, o.StepContinuation = false, true, pairs.ContinueTurn
		}},
		{"both-rest", func(o *pairs.Options) {
			o.StepPairs, o.StepContinuation = true, pairs.ContinueRest
			o.Render.Completion = dataset.CompletionRest
		}},
		{"max-chars", func(o *pairs.Options) {
			o.StepPairs, o.MaxChars = true, 6000
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			o := pairs.DefaultOptions()
			o.Reward = reward
			c.opt(&o)
			b.ReportAllocs()
			var n, rows int
			for b.Loop() {
				ix, err := dataset.OpenIndex(dir)
				if err != nil {
					b.Fatal(err)
				}
				rows = 0
				if _, err := pairs.Build(ix, o, func(*dataset.DPORow) error { rows++; return nil }); err != nil {
					b.Fatal(err)
				}
				n = ix.Len()
				ix.Close()
			}
			if rows == 0 {
				b.Fatal("no pairs")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/trajectory")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkBuildRolloutsPerScenario pairs scenarios of copied episodes
// (writeScaleRun: two episodes under many traj_ids, every pool trying
// candidates by the thousand) at 1,000 and 10,000 rollouts per scenario,
// trajectory and step pairs: time per trajectory stays flat where trying
// every candidate grew with the rollouts.
func BenchmarkBuildRolloutsPerScenario(b *testing.B) {
	for _, per := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("rollouts-%d", per), func(b *testing.B) {
			dir := writeScaleRun(b, 2, per, true)
			ix, err := dataset.OpenIndex(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			o := pairs.DefaultOptions()
			o.StepPairs = true
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				rows = 0
				if _, err := pairs.Build(ix, o, func(*dataset.DPORow) error { rows++; return nil }); err != nil {
					b.Fatal(err)
				}
			}
			if rows == 0 {
				b.Fatal("no pairs")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*ix.Len()), "µs/trajectory")
		})
	}
}
