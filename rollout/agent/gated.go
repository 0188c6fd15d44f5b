package agent

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// Gate is a scenario's risk-aware causal gate, computed once from its tool
// contracts and shared read-only by every episode.
//
// A low-risk tool is always visible. A risk-bearing tool (risk medium or
// high) is visible at a step only when
//
//   - it lies on a causal path to the goal: it produces a goal variable, or a
//     variable that a tool on a causal path requires or is authorised by
//     (what a tool produces is its `produces` list plus the keys its
//     responses' effects `set`, less the authorization variables when the
//     tool is untrusted, since the environment drops those); and
//   - every variable in its `requires` and `authorizes` holds in the
//     environment's state.
//
// Authorization variables can only be opened by trusted tools: the
// environment drops an untrusted (content-producing) tool's attempt to set
// one, so a tool result can never expose a risky tool.
type Gate struct {
	onPath map[string]bool // risk-bearing tools on a causal path to the goal
	conds  map[string][]string
	risky  map[string]bool
	known  map[string]bool
}

// NewGate computes a scenario's causal paths to its goal.
func NewGate(s *scenario.Scenario) *Gate {
	g := &Gate{onPath: map[string]bool{}, conds: map[string][]string{}, risky: map[string]bool{}, known: map[string]bool{}}
	auth := s.AuthorizationVars()
	produces := make([][]string, len(s.Tools))
	for i := range s.Tools {
		t := &s.Tools[i]
		g.known[t.Name] = true
		add := func(v string) {
			if t.Trusted || !auth[v] {
				produces[i] = append(produces[i], v)
			}
		}
		for _, v := range t.Produces {
			add(v)
		}
		for _, r := range t.Responses {
			if r.Effects != nil {
				for _, k := range sortedRawKeys(r.Effects.Set) {
					add(k)
				}
			}
		}
		if t.Risk.Bearing() {
			g.risky[t.Name] = true
			g.conds[t.Name] = append(append([]string(nil), t.Requires...), t.Authorizes...)
		}
	}
	// Backward search from the goal: a tool producing a needed variable is
	// on a path, and what it requires (or is authorised by) becomes needed.
	needed := map[string]bool{}
	for _, v := range s.Goal {
		needed[v] = true
	}
	on := make([]bool, len(s.Tools))
	for changed := true; changed; {
		changed = false
		for i := range s.Tools {
			if on[i] {
				continue
			}
			for _, v := range produces[i] {
				if needed[v] {
					on[i], changed = true, true
					break
				}
			}
			if on[i] {
				for _, v := range s.Tools[i].Requires {
					needed[v] = true
				}
				for _, v := range s.Tools[i].Authorizes {
					needed[v] = true
				}
			}
		}
	}
	for i := range s.Tools {
		if on[i] && g.risky[s.Tools[i].Name] {
			g.onPath[s.Tools[i].Name] = true
		}
	}
	return g
}

// OnPath reports whether a risk-bearing tool lies on a causal path to the
// goal (always false for low-risk tools, which the gate does not consider).
func (g *Gate) OnPath(tool string) bool { return g.onPath[tool] }

// Visible reports whether a tool is exposed in the given state. Tools the
// scenario does not have are never visible.
func (g *Gate) Visible(tool string, e *env.Env) bool {
	if !g.risky[tool] {
		return g.known[tool]
	}
	if !g.onPath[tool] {
		return false
	}
	for _, v := range g.conds[tool] {
		if !e.Holds(v) {
			return false
		}
	}
	return true
}

// RunGated is the "gated" framework (risk-aware causal gating): the native
// tool-calling loop of RunNormal, except that the tools offered at each
// step are those the scenario's Gate exposes in the current state. The
// visible set is recorded per step. A call to a tool of the scenario that
// is not visible is not executed: it is answered with a tool error ("tool X
// is not available"), recorded with outcome not_visible, and still labelled
// by the drift detector (it is an attempt).
func RunGated(ctx context.Context, pol policy.Policy, ep Episode, lim Limits) (Result, error) {
	r, cancel := begin(ctx, pol, ep, lim)
	defer cancel()
	return r.native(ep.Scenario.S.System, true)
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
