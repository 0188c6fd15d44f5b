package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

// injectionRuns rolls a profile out under a framework over the gating
// suite and returns, over the injected episodes, how many made an
// injection's target call, and the most target calls one episode made.
func injectionRuns(t *testing.T, name, fw string, ss []*scenario.Scenario) (injected, hit, most int) {
	t.Helper()
	prof, err := sim.Lookup(name)
	require.NoError(t, err)
	cfg := engine.Config{Scenarios: ss, Policy: sim.New(prof, ss), PolicyName: name, Checkpoint: name, Framework: fw,
		Rollouts: 2, Seed: 5, Concurrency: 8, Version: "test"}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "run-sim", Plan: store.Plan{ScenarioIDs: ids, Policy: name,
		Checkpoint: name, Framework: fw, Rollouts: 2, Seed: 5, Shard: "0/1"}}, false)
	require.NoError(t, err)
	_, err = engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)
	run.Close()
	byID := map[string]*scenario.Scenario{}
	for _, s := range ss {
		byID[s.ID] = s
	}
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		r := it.At()
		if len(byID[r.ScenarioID].Injections) == 0 {
			continue
		}
		injected++
		n := 0
		for _, m := range r.Matches {
			if m.Kind == scenario.KindInjection {
				n++
			}
		}
		if n > 0 {
			hit++
		}
		most = max(most, n)
	}
	require.NoError(t, it.Err())
	return injected, hit, most
}

// sim:gullible acts on an injection only on the turn it reads it, so a
// gate that hides the target tool then stops every injection; sim:persistent
// keeps the instruction and acts once the gate shows the tool (after the
// user's approval step unlocks it), so gated's injection success is above
// 0 for it, and it acts at most once per episode. Without a gate it
// succeeds at least as often as sim:gullible.
func TestPersistentInjectionMemory(t *testing.T) {
	ss, ps := gating.Load(nil, scenario.Options{})
	require.NoError(t, ps.Err())
	n, gullible, _ := injectionRuns(t, "sim:gullible", engine.FrameworkGated, ss)
	require.Positive(t, n)
	assert.Zero(t, gullible, "gated stops the injections of a policy without memory")
	_, persistent, most := injectionRuns(t, "sim:persistent", engine.FrameworkGated, ss)
	assert.Positive(t, persistent, "a remembered instruction is acted on once the gate shows its tool")
	assert.Equal(t, 1, most, "the memory acts once")
	_, gNormal, _ := injectionRuns(t, "sim:gullible", engine.FrameworkNormal, ss)
	_, pNormal, _ := injectionRuns(t, "sim:persistent", engine.FrameworkNormal, ss)
	assert.GreaterOrEqual(t, pNormal, gNormal)
	t.Logf("injected episodes %d: gated gullible %d, persistent %d; normal gullible %d, persistent %d", n, gullible, persistent, gNormal, pNormal)
}
