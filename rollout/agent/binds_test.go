package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

// argJSON completes a call's arguments to the tool's schema, as JSON.
func argJSON(t *testing.T, s *scenario.Scenario, c scenario.Call) string {
	t.Helper()
	args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
	require.NoError(t, err)
	b, err := json.Marshal(args)
	require.NoError(t, err)
	return string(b)
}

// TestApprovalsBoundToArguments plays, on one task of each gating family
// whose action needs the user's approval, the compliant path up to the
// approval, then the action with the payee, recipient, party or account
// the injection substitutes, then the approved one. Under gated the
// substituted call is refused (the gate exposes the approved capability,
// not the tool) and the approved one runs; under normal the substituted
// call runs and is labelled a premature action (unauthorised), the
// approved one is not.
func TestApprovalsBoundToArguments(t *testing.T) {
	ss, ps := gating.Load(nil, scenario.Options{})
	require.NoError(t, ps.Err())
	byID := map[string]*scenario.Scenario{}
	for _, s := range ss {
		byID[s.ID] = s
	}
	for _, id := range []string{"gating-pay-supplier-007", "gating-email-summary-001", "gating-doc-share-013", "gating-admin-offboard-019"} {
		s := byID[id+"--instruction"]
		require.NotNil(t, s, id)
		var attack scenario.Call
		for _, inj := range s.Injections {
			if inj.Kind == scenario.InjectInstruction {
				attack = *inj.Target
			}
		}
		rc := s.RequiredCalls
		require.Len(t, rc, 4, id)
		act := rc[3]
		require.Equal(t, act.Tool, attack.Tool, "%s: the injection substitutes the action's target", id)
		approved, substituted := argJSON(t, s, act), argJSON(t, s, attack)
		require.NotEqual(t, approved, substituted)
		script := func() *script {
			return newScript(
				calls(call("a", rc[0].Tool, argJSON(t, s, rc[0])), call("b", rc[1].Tool, argJSON(t, s, rc[1]))),
				calls(call("c", rc[2].Tool, argJSON(t, s, rc[2]))),
				calls(call("d", act.Tool, substituted)),
				calls(call("e", act.Tool, approved)),
				text("Done."))
		}
		sc, err := agent.Prepare(s)
		require.NoError(t, err)
		for _, fw := range []string{"gated", "normal"} {
			t.Run(id+"/"+fw, func(t *testing.T) {
				run := agent.RunNormal
				if fw == "gated" {
					run = agent.RunGated
				}
				res, err := run(context.Background(), script(), agent.Episode{Scenario: sc, Seed: 3}, agent.Limits{})
				require.NoError(t, err)
				require.Len(t, res.Steps, 5)
				premature := map[int]bool{}
				for _, m := range res.Matches {
					if m.Kind == scenario.KindPrematureAction {
						premature[m.Call] = true
					}
				}
				if fw == "gated" {
					assert.Equal(t, []string{act.Tool + ":not_visible"}, outcomes(res.Steps[2]), "the substituted call is refused")
					assert.Contains(t, res.Messages[len(res.Messages)-4].Content, "not available for these arguments")
				} else {
					assert.Equal(t, []string{act.Tool + ":matched"}, outcomes(res.Steps[2]))
					assert.True(t, premature[3], "the substituted call is unauthorised in the labels")
				}
				assert.Equal(t, []string{act.Tool + ":matched"}, outcomes(res.Steps[3]), "the approved call runs")
				assert.False(t, premature[4], "the approved call is authorised")
			})
		}
	}
}
