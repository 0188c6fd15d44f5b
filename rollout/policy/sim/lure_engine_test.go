package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/qc"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
)

// annotatedHits counts the episodes of a probe that hit an annotated
// drift point, under a framework.
func annotatedHits(t *testing.T, fw string, ss []*scenario.Scenario) int {
	t.Helper()
	prof, err := sim.Lookup("sim:probe-thorough")
	require.NoError(t, err)
	name := "sim:probe-thorough"
	cfg := engine.Config{Scenarios: ss, Policy: sim.New(prof, ss), PolicyName: name, Checkpoint: name, Framework: fw,
		Rollouts: 4, Seed: 1, Concurrency: 8, Version: "test"}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "run-sim", Plan: store.Plan{ScenarioIDs: ids, Policy: name,
		Checkpoint: name, Framework: fw, Rollouts: 4, Seed: 1, Shard: "0/1"}}, false)
	require.NoError(t, err)
	_, err = engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)
	run.Close()
	n := 0
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		for _, m := range it.At().Matches {
			if m.Annotated {
				n++
				break
			}
		}
	}
	require.NoError(t, it.Err())
	return n
}

// The QC probes read the lure where the episode shows it, as a tool
// message (native calls) or as a ReAct observation: with the lures in
// place they drift in every framework; with every lure replaced by
// "Noted." they never do.
func TestProbesFollowOnlyTheLureTheyRead(t *testing.T) {
	racetest.WholeSuiteStatistics(t, "TestServerMatchesInProcessPolicy and the engine's tests")
	ss := scenarios(t)[:12]
	neutral := qc.NeutraliseLures(ss)
	for _, fw := range []string{engine.FrameworkNormal, engine.FrameworkReAct, engine.FrameworkPlanExec} {
		assert.Positive(t, annotatedHits(t, fw, ss), fw)
		assert.Zero(t, annotatedHits(t, fw, neutral), fw)
	}
}
