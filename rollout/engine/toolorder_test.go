package engine_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// wireNames are the names of the tools a record says were sent, in order.
func wireNames(t *testing.T, r *trajectory.Record) []string {
	t.Helper()
	var names []string
	for _, raw := range r.Tools {
		var w struct {
			Function struct{ Name string } `json:"function"`
		}
		require.NoError(t, json.Unmarshal(raw, &w))
		names = append(names, w.Function.Name)
	}
	return names
}

// The tools are shown in an order drawn from the run seed and the
// scenario: the same for every rollout, checkpoint and framework of a
// scenario under one seed (pairs share their prompt, GRPO groups their
// first request), another under another seed, and recorded.
func TestToolOrderIsDrawnFromTheSeedAndRecorded(t *testing.T) {
	ss := builtin(t)
	p, err := sim.Lookup("base")
	require.NoError(t, err)
	run := func(framework, checkpoint string, seed int64, order agent.ToolOrder) []*trajectory.Record {
		cfg := engine.Config{Scenarios: ss, Policy: sim.New(p, ss), PolicyName: checkpoint, Framework: framework,
			Rollouts: 2, Seed: seed, ToolOrder: order}
		return runFramework(t, cfg)
	}
	orders := func(recs []*trajectory.Record) map[string][]string {
		out := map[string][]string{}
		for _, r := range recs {
			require.NotEmpty(t, r.ToolOrder, "%s/%d: no tool order recorded", r.ScenarioID, r.Rollout)
			if prev, ok := out[r.ScenarioID]; ok {
				assert.Equal(t, prev, r.ToolOrder, "%s: rollouts of one scenario see one order", r.ScenarioID)
			}
			out[r.ScenarioID] = r.ToolOrder
		}
		return out
	}
	normal := run(engine.FrameworkNormal, "sim:base", 1, agent.ToolOrderSeeded)
	base := orders(normal)
	assert.Equal(t, base, orders(run(engine.FrameworkNormal, "ckpt-b", 1, agent.ToolOrderSeeded)), "the order does not depend on the checkpoint")
	assert.Equal(t, base, orders(run(engine.FrameworkGated, "sim:base", 1, agent.ToolOrderSeeded)), "nor on the framework")
	assert.Equal(t, base, orders(run(engine.FrameworkReAct, "sim:base", 1, agent.ToolOrderSeeded)), "nor on the framework (text tools)")
	other := orders(run(engine.FrameworkNormal, "sim:base", 2, agent.ToolOrderSeeded))

	byID := map[string][]string{}
	for _, s := range ss {
		for _, tl := range s.Tools {
			byID[s.ID] = append(byID[s.ID], tl.Name)
		}
	}
	var moved, reseeded int
	for id, o := range base {
		assert.ElementsMatch(t, byID[id], o, "%s: the order is a permutation of the tools", id)
		if !slices.Equal(byID[id], o) {
			moved++
		}
		if !slices.Equal(other[id], o) {
			reseeded++
		}
	}
	// With five or more tools a scenario keeps the file's order with
	// probability 1/120 at most: nearly every scenario moves.
	assert.Greater(t, moved, len(ss)*9/10, "the drawn order differs from the file's")
	assert.Greater(t, reseeded, len(ss)*9/10, "another seed draws another order")

	// What the model was sent follows the recorded order: the tools sent
	// and every step's visible list.
	for _, r := range normal {
		assert.Equal(t, r.ToolOrder, wireNames(t, r), "%s: tools sent in the recorded order", r.ScenarioID)
		for _, st := range r.Steps {
			assert.Equal(t, r.ToolOrder, st.Visible, "%s: visible tools in the recorded order", r.ScenarioID)
		}
	}

	// --tool-order authored: the file's order, and nothing recorded (as
	// records made before the order was drawn).
	for _, r := range run(engine.FrameworkNormal, "sim:base", 1, agent.ToolOrderAuthored) {
		assert.Nil(t, r.ToolOrder, r.ScenarioID)
		assert.Equal(t, byID[r.ScenarioID], wireNames(t, r), r.ScenarioID)
	}
}

func TestPlanToolOrderRoundTrips(t *testing.T) {
	for _, o := range []agent.ToolOrder{agent.ToolOrderSeeded, agent.ToolOrderAuthored} {
		got, err := engine.ToolOrderOf(engine.PlanToolOrder(o))
		require.NoError(t, err)
		assert.Equal(t, o, got)
	}
	assert.Equal(t, "", engine.PlanToolOrder(agent.ToolOrderAuthored), "older plans, which have no tool_order, are authored")
	_, err := engine.ToolOrderOf("shuffled")
	assert.ErrorContains(t, err, "unknown tool order")
}
