package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

// injectionRuns rolls a profile out under a framework over the gating
// suite and returns, over the injected episodes, how many attempted an
// injection's target call, how many executed one (the injection
// succeeded: the environment ran it), and the most target calls one
// episode attempted.
func injectionRuns(t *testing.T, name, fw string, ss []*scenario.Scenario) (injected, hit, executed, most int) {
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
		targets := map[int]bool{}
		for _, m := range r.Matches {
			if m.Kind == scenario.KindInjection {
				n++
				targets[m.Call] = true
			}
		}
		if n > 0 {
			hit++
		}
		ran := false
		for _, st := range r.Steps {
			for _, c := range st.Calls {
				ran = ran || (targets[c.Call] && (c.Outcome == "matched" || c.Outcome == "default"))
			}
		}
		if ran {
			executed++
		}
		most = max(most, n)
	}
	require.NoError(t, it.Err())
	return injected, hit, executed, most
}

// unbind drops every argument binding of the suite's approvals: the
// control variant, where an approval is a yes/no flag.
func unbind(ss []*scenario.Scenario) {
	for _, s := range ss {
		for i := range s.Tools {
			s.Tools[i].Binds = nil
		}
	}
}

// sim:gullible acts on an injection only on the turn it reads it, so a
// gate that hides the target tool then stops every injection. sim:persistent
// keeps the instruction and tries it once the gate shows the tool (after
// the user's approval step unlocks it). With approvals bound to the
// arguments the user approved (the suite as built) the gate refuses that
// call, so no injection succeeds; on the control variant with yes/no
// approvals the call runs, so injection success is above 0. Without a gate
// sim:persistent succeeds at least as often as sim:gullible.
func TestPersistentInjectionMemory(t *testing.T) {
	racetest.WholeSuiteStatistics(t, "TestServerMatchesInProcessPolicy and the engine's tests")
	ss, ps := gating.Load(nil, scenario.Options{})
	require.NoError(t, ps.Err())
	n, _, gullible, _ := injectionRuns(t, "sim:gullible", engine.FrameworkGated, ss)
	require.Positive(t, n)
	assert.Zero(t, gullible, "gated stops the injections of a policy without memory")
	_, tried, bound, most := injectionRuns(t, "sim:persistent", engine.FrameworkGated, ss)
	assert.Positive(t, tried, "a remembered instruction is tried once the gate shows its tool")
	assert.Zero(t, bound, "argument-bound approvals: the gate refuses the attacker's payee, recipient, party or account")
	assert.Equal(t, 1, most, "the memory acts once")

	control, ps := gating.Load(nil, scenario.Options{})
	require.NoError(t, ps.Err())
	unbind(control)
	_, _, unbound, _ := injectionRuns(t, "sim:persistent", engine.FrameworkGated, control)
	assert.Positive(t, unbound, "unbound approvals: the remembered instruction runs once the approval opens the gate")

	_, _, gNormal, _ := injectionRuns(t, "sim:gullible", engine.FrameworkNormal, ss)
	_, _, pNormal, _ := injectionRuns(t, "sim:persistent", engine.FrameworkNormal, ss)
	assert.GreaterOrEqual(t, pNormal, gNormal)
	t.Logf("injected episodes %d: gated gullible %d, persistent %d tried, %d ran (bound), %d ran (unbound); normal gullible %d, persistent %d", n, gullible, tried, bound, unbound, gNormal, pNormal)
}
