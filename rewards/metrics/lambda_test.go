package metrics_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
)

// TestLambdaTradesSuccessForExposure sweeps the risk penalty λ of gated
// over the gating suite (provenance intact) with sim:gullible: each task
// with authorization has a hand-off route whose cost sets the λ above which
// the gate hides the direct action, so success and high-risk exposure fall
// together, step by step: at least five distinct (TSR, high-risk surface)
// points on the front (no other point dominates them), and at every λ
// every risk-bearing tool the gate showed lies in its scenario's boundary.
// With low-risk tools shown causally (the paper's setting) the thresholds
// move down (the trusted step is hidden once off the path) and the points
// stay distinct.
func TestLambdaTradesSuccessForExposure(t *testing.T) {
	racetest.WholeSuiteStatistics(t, "TestGatingOnTheGatingSuite (the same gated rollouts and accumulator)")
	prof := gullible(t)
	safe := selection(t, "safe")
	all, err := gatingSuite()
	require.NoError(t, err)
	byID := map[string]*scenario.Scenario{}
	for _, s := range all {
		byID[s.ID] = s
	}
	lambdas := []float64{0, 1, 2, 3, 4, 5, 6, 8}
	for _, low := range []agent.LowRiskVisibility{agent.LowRiskAll, agent.LowRiskCausal} {
		t.Run(string(low), func(t *testing.T) {
			type point struct{ tsr, hr float64 }
			var pts []point
			for _, l := range lambdas {
				dir := simRunFiltered(t, safe, all, prof, 1, agent.FilterOptions{RiskLambda: l, LowRisk: low})
				acc, err := metrics.New(metrics.Options{By: []metrics.Key{}, K: 1, Bootstrap: metrics.Bootstrap{Replicates: 50, Seed: 1}})
				require.NoError(t, err)
				require.NoError(t, acc.AddScenarios(safe))
				it := store.Records(dir)
				for it.Next() {
					r := it.At()
					require.NoError(t, acc.Add(r))
					s := byID[r.ScenarioID]
					for i, st := range r.Steps {
						for _, name := range st.Visible {
							if tl := s.Tool(name); tl != nil && tl.Risk.Bearing() {
								assert.True(t, slices.Contains(s.Boundary.Tools, name), "λ=%g %s step %d: risk-bearing %s shown outside the boundary", l, s.ID, i, name)
							}
						}
					}
				}
				require.NoError(t, it.Err())
				it.Close()
				g := acc.Result().Groups[0]
				assert.Zero(t, float64(g.DRAnnotated), "λ=%g: no annotated drift", l)
				pts = append(pts, point{float64(g.TSR), float64(g.AttackSurface.HighRiskSurfaceMean.Value)})
			}
			// The front: the points no other point dominates (higher TSR
			// and lower high-risk surface are better), counted once each.
			front := map[string]bool{}
			for i, p := range pts {
				if i > 0 {
					assert.LessOrEqual(t, p.tsr, pts[i-1].tsr+1e-12, "λ=%g: more penalty, no more success", lambdas[i])
					assert.LessOrEqual(t, p.hr, pts[i-1].hr+1e-12, "λ=%g: more penalty, no more exposure", lambdas[i])
				}
				dominated := false
				for _, q := range pts {
					dominated = dominated || (q.tsr >= p.tsr && q.hr <= p.hr && (q.tsr > p.tsr || q.hr < p.hr))
				}
				if !dominated {
					front[fmt.Sprintf("%.6f/%.6f", p.tsr, p.hr)] = true
				}
			}
			t.Logf("%s: points (TSR, high-risk surface) by λ %v: %v; %d distinct on the front", low, lambdas, pts, len(front))
			assert.GreaterOrEqual(t, len(front), 5, "distinct points on the sweep's front")
		})
	}
}

// simRunFiltered is simRun for the gated framework with filter options.
func simRunFiltered(t *testing.T, ss, all []*scenario.Scenario, prof sim.Profile, rollouts int, opts agent.FilterOptions) string {
	t.Helper()
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "sim", Plan: store.Plan{ScenarioIDs: ids, Policy: "sim:" + prof.Name,
		Checkpoint: "sim:" + prof.Name, Framework: engine.FrameworkGated, Rollouts: rollouts, Seed: 5, Shard: "0/1"}}, false)
	require.NoError(t, err)
	cfg := engine.Config{Scenarios: ss, Policy: sim.New(prof, all), PolicyName: "sim:" + prof.Name, Checkpoint: "sim:" + prof.Name,
		Framework: engine.FrameworkGated, Filter: opts, Rollouts: rollouts, Seed: 5, Concurrency: 8, Version: "test"}
	_, err = engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)
	require.NoError(t, run.Close())
	return dir
}
