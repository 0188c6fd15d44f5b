package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
)

// by_time_kind is the share of scored trajectories with a counted time
// drift of each time_kind, the kind read from the violation or the
// constraint a match names. Recomputed here from the records of a
// simulated run of the built-in suite, by parsing the match's rule by
// hand rather than through Scenario.TimeKindOf.
func TestByTimeKindRecomputed(t *testing.T) {
	racetest.WholeSuiteStatistics(t, "TestStoredExposureScoresAsAReplay (the same rollouts, decoding and accumulator)")
	ss, err := suite.Load()
	require.NoError(t, err)
	byID := map[string]*scenario.Scenario{}
	for _, s := range ss {
		byID[s.ID] = s
	}
	prof, err := sim.Lookup("sim:base")
	require.NoError(t, err)
	dir := simRun(t, ss, ss, engine.FrameworkNormal, prof, 2, 7)

	acc, err := metrics.New(metrics.Options{By: []metrics.Key{}, K: 1, Bootstrap: metrics.Bootstrap{Replicates: 1, Seed: 1}})
	require.NoError(t, err)
	require.NoError(t, acc.AddScenarios(ss))
	want := map[scenario.TimeKind]int{}
	n := 0
	it := store.Records(dir)
	for it.Next() {
		r := it.At()
		require.NoError(t, acc.Add(r))
		if !r.Status.Scored() {
			continue
		}
		n++
		seen := map[scenario.TimeKind]bool{}
		for _, m := range drift.Counted(r.Matches) {
			if m.Drift != scenario.DriftTime {
				continue
			}
			s := byID[r.ScenarioID]
			var k scenario.TimeKind
			if m.Violation >= 0 {
				k = s.Violations[m.Violation].TimeKind
			} else {
				var i int
				_, err := fmt.Sscanf(strings.TrimPrefix(m.Rule, "boundary.constraints["), "%d]", &i)
				require.NoError(t, err, m.Rule)
				k = s.Boundary.Constraints[i].TimeKind
			}
			seen[k] = true
		}
		for k := range seen {
			want[k]++
		}
	}
	require.NoError(t, it.Err())
	it.Close()
	g := acc.Result().Groups[0]
	require.Len(t, g.TimeKinds, len(scenario.TimeKinds))
	nonzero := 0
	for _, k := range scenario.TimeKinds {
		got := g.TimeKinds[string(k)].Value
		assert.InDelta(t, float64(want[k])/float64(n), float64(got), 1e-12, "time kind %s", k)
		if want[k] > 0 {
			nonzero++
		}
	}
	assert.GreaterOrEqual(t, nonzero, 3, "the simulated run drifts in several time kinds: %v", want)
	assert.Zero(t, want[""], "every counted time drift of the built-in suite has a time_kind")
}
