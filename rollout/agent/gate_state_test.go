package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// expressScenario: the goal "done" is reached by lookup → settle (high),
// or lookup → read_policy (a read of cost 1.5) → express (medium, which
// requires what the read produces).
func expressScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	cost := 1.5
	params := json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	ret := []scenario.Response{{Return: json.RawMessage(`{"ok":true}`)}}
	tool := func(name string, risk scenario.Risk, requires, produces []string) scenario.Tool {
		return scenario.Tool{Name: name, Parameters: params, Risk: risk, Trusted: true, Requires: requires, Produces: produces,
			Responses: ret, Default: json.RawMessage(`{"error":"no"}`)}
	}
	read := tool("read_policy", scenario.RiskLow, nil, []string{"fast_lane"})
	read.Cost = &cost
	return &scenario.Scenario{ID: "express", Goal: []string{"done"}, Tools: []scenario.Tool{
		tool("lookup", scenario.RiskLow, nil, []string{"found"}),
		read,
		tool("settle", scenario.RiskHigh, []string{"found"}, []string{"done"}),
		tool("express", scenario.RiskMedium, []string{"found", "fast_lane"}, []string{"done"}),
		tool("notes", scenario.RiskLow, nil, []string{"noted"}),
	}}
}

func visibleIn(g *agent.Gate, s *scenario.Scenario, e *env.Env) []string {
	var out []string
	for _, tl := range s.Tools {
		if g.Visible(tl.Name, e) {
			out = append(out, tl.Name)
		}
	}
	return out
}

// TestGateRecomputesAsStateChanges: at λ = 2 the direct route costs
// 1 + (1 + 2) = 4 and the express route 1 + 1.5 + (1 + 1) = 4.5, so only
// settle is on the path. Once the agent has read the policy, its cost is
// spent: from that state express costs 2 against settle's 3, so express
// is exposed then, not before (settle, on the initial path, stays). Per-tool costs move the choice
// (with the read at cost 1 the two routes would tie from the start), and
// with low-risk tools shown causally the read is hidden while it is off
// the path, the unrelated notes always.
func TestGateRecomputesAsStateChanges(t *testing.T) {
	s := expressScenario(t)
	spec, err := env.Compile(s)
	require.NoError(t, err)
	for _, c := range []struct {
		name                   string
		low                    agent.LowRiskVisibility
		start, found, readDone []string
	}{
		{"low-risk all", agent.LowRiskAll,
			[]string{"lookup", "read_policy", "notes"},
			[]string{"lookup", "read_policy", "settle", "notes"},
			[]string{"lookup", "read_policy", "settle", "express", "notes"}},
		{"low-risk causal", agent.LowRiskCausal,
			[]string{"lookup"},
			[]string{"lookup", "settle"},
			[]string{"lookup", "settle", "express"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := agent.NewGateWith(s, agent.GateOptions{Lambda: 2, Weights: scenario.DefaultRiskWeights, LowRisk: c.low})
			e := spec.New()
			assert.Equal(t, c.start, visibleIn(g, s, e), "initial state")
			assert.True(t, g.OnPath("settle"))
			assert.False(t, g.OnPath("express"), "not needed from the initial state")
			e.Call("lookup", map[string]any{})
			assert.Equal(t, c.found, visibleIn(g, s, e), "found")
			e.Call("read_policy", map[string]any{})
			assert.Equal(t, c.readDone, visibleIn(g, s, e), "after the read")
			assert.True(t, g.OnPathAt("express", e))
		})
	}
	// With the read at the default cost 1 both routes cost 4: a tie, both
	// risky tools on the path from the start.
	s.Tools[1].Cost = nil
	g := agent.NewGateWith(s, agent.GateOptions{Lambda: 2, Weights: scenario.DefaultRiskWeights})
	assert.True(t, g.OnPath("settle"))
	assert.True(t, g.OnPath("express"))
}

func TestParseLowRisk(t *testing.T) {
	for in, want := range map[string]agent.LowRiskVisibility{"": agent.LowRiskAll, "all": agent.LowRiskAll, "causal": agent.LowRiskCausal} {
		got, err := agent.ParseLowRisk(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := agent.ParseLowRisk("some")
	assert.ErrorContains(t, err, `"all" or "causal"`)
}
