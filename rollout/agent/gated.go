package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Gate is a scenario's risk-aware causal gate, computed once from its tool
// contracts and shared read-only by every episode.
//
// A low-risk tool is always visible. A risk-bearing tool (risk medium or
// high) is visible at a step only when
//
//   - it lies on a minimal causal path to the goal (see GateOptions): a set
//     of tools that, applied in some order from the initial state, makes
//     every goal variable hold, of least cost  |path| + λ · Σ w(risk) over
//     its risk-bearing tools; and
//   - every variable in its `requires` and `authorizes` holds in the
//     environment's state.
//
// What a tool makes hold is its `produces` list plus the keys its
// responses' effects set, less the authorization variables
// when the tool is untrusted, since the environment drops those.
// Authorization variables can only be opened by trusted tools, so a tool
// result can never expose a risky tool. (A scenario loaded with unsafe
// provenance lets content tools open them: the gate then follows the
// scenario, which is the point of that boundary case.)
type Gate struct {
	onPath map[string]bool // risk-bearing tools on a minimal causal path to the goal
	conds  map[string][]string
	risky  map[string]bool
	known  map[string]bool
	order  []string // the scenario's tools in order
	cost   float64  // the least path cost; NaN when the goal is unreachable
	search string   // how onPath was found: "exact", "closure" (fallback)
	// binds: the gate honours argument-bound approvals (scenario.Tool.Binds);
	// the causal filter, which ignores authorization, does not.
	binds bool
}

// GateOptions set the causal path search. Lambda is the risk penalty λ ≥ 0:
// a path costs its number of tools plus λ times the risk weights of its
// risk-bearing tools, so a larger λ prefers longer paths through fewer or
// milder risky tools. Every path of least cost is kept (their union is on
// the path), so ties never depend on tool order.
type GateOptions struct {
	Lambda  float64
	Weights scenario.RiskWeights
	// IgnoreAuthorization drops `authorizes` from the conditions: the
	// causal filter, which gates on causal need and `requires` only.
	IgnoreAuthorization bool
}

// maxExactTools bounds the exact path search (2^n subsets of the tools
// that can reach the goal); beyond it the gate keeps the backward closure.
const maxExactTools = 18

// NewGate computes a scenario's causal paths to its goal with λ = 0.
func NewGate(s *scenario.Scenario) *Gate {
	return NewGateWith(s, GateOptions{Weights: scenario.DefaultRiskWeights})
}

// NewGateWith computes a scenario's minimal causal paths under opts.
func NewGateWith(s *scenario.Scenario, opts GateOptions) *Gate {
	g := &Gate{onPath: map[string]bool{}, conds: map[string][]string{}, risky: map[string]bool{}, known: map[string]bool{}, cost: math.NaN(), binds: !opts.IgnoreAuthorization}
	auth := s.AuthorizationVars()
	n := len(s.Tools)
	produces := make([][]string, n)
	pre := make([][]string, n)
	for i := range s.Tools {
		t := &s.Tools[i]
		g.known[t.Name] = true
		g.order = append(g.order, t.Name)
		add := func(v string) {
			if t.Trusted || !auth[v] || s.UnsafeProvenance {
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
		pre[i] = append(pre[i], t.Requires...)
		if !opts.IgnoreAuthorization {
			pre[i] = append(pre[i], t.Authorizes...)
		}
		if t.Risk.Bearing() {
			g.risky[t.Name] = true
			g.conds[t.Name] = pre[i]
		}
	}
	// Backward closure from the goal: a tool producing a needed variable
	// may lie on a path, and what it needs becomes needed.
	needed := map[string]bool{}
	for _, v := range s.Goal {
		needed[v] = true
	}
	on := make([]bool, n)
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
				for _, v := range pre[i] {
					needed[v] = true
				}
			}
		}
	}
	var cand []int
	for i := range on {
		if on[i] {
			cand = append(cand, i)
		}
	}
	best := bestPaths(s, cand, produces, pre, opts)
	if best == nil {
		// Too many candidates for the exact search, or no path reaches the
		// goal: keep every tool that could lie on one.
		g.search = "closure"
		best = on
	} else {
		g.search = "exact"
	}
	if c, ok := pathCost(s, best, opts); ok && g.search == "exact" {
		g.cost = c
	}
	for i := range s.Tools {
		if best[i] && g.risky[s.Tools[i].Name] {
			g.onPath[s.Tools[i].Name] = true
		}
	}
	return g
}

// bestPaths is the union of the least-cost subsets of cand that reach the
// goal by forward chaining from the initial state, or nil when there are
// too many candidates or no subset reaches it.
func bestPaths(s *scenario.Scenario, cand []int, produces, pre [][]string, opts GateOptions) []bool {
	if len(cand) > maxExactTools {
		return nil
	}
	init := initialVars(s)
	cost := make([]float64, len(cand))
	for j, i := range cand {
		cost[j] = 1
		if t := &s.Tools[i]; t.Risk.Bearing() {
			cost[j] += opts.Lambda * opts.Weights.Of(t.Risk)
		}
	}
	reaches := func(mask uint32) bool {
		holds := map[string]bool{}
		for v := range init {
			holds[v] = true
		}
		used := uint32(0)
		for progress := true; progress; {
			progress = false
			for j, i := range cand {
				if mask&(1<<j) == 0 || used&(1<<j) != 0 {
					continue
				}
				ok := true
				for _, v := range pre[i] {
					ok = ok && holds[v]
				}
				if ok {
					used |= 1 << j
					progress = true
					for _, v := range produces[i] {
						holds[v] = true
					}
				}
			}
		}
		for _, v := range s.Goal {
			if !holds[v] {
				return false
			}
		}
		return used == mask // every tool of the path is applicable
	}
	const eps = 1e-9
	bestCost := math.Inf(1)
	var union uint32
	for mask := uint32(0); mask < 1<<len(cand); mask++ {
		c := 0.0
		for m := mask; m != 0; m &= m - 1 {
			c += cost[bits.TrailingZeros32(m)]
		}
		if c > bestCost+eps || !reaches(mask) {
			continue
		}
		if c < bestCost-eps {
			bestCost, union = c, 0
		}
		union |= mask
	}
	if math.IsInf(bestCost, 1) {
		return nil
	}
	out := make([]bool, len(s.Tools))
	for j, i := range cand {
		out[i] = union&(1<<j) != 0
	}
	return out
}

// pathCost is the cost of the tools marked in on (for reports).
func pathCost(s *scenario.Scenario, on []bool, opts GateOptions) (float64, bool) {
	c := 0.0
	any := false
	for i, ok := range on {
		if !ok {
			continue
		}
		any = true
		c++
		if t := &s.Tools[i]; t.Risk.Bearing() {
			c += opts.Lambda * opts.Weights.Of(t.Risk)
		}
	}
	return c, any
}

// initialVars are the top-level state variables that hold before any call
// (set to something other than null or false).
func initialVars(s *scenario.Scenario) map[string]bool {
	out := map[string]bool{}
	if len(s.State) == 0 {
		return out
	}
	var st map[string]any
	if json.Unmarshal(s.State, &st) != nil {
		return out
	}
	for k, v := range st {
		if b, isBool := v.(bool); v == nil || (isBool && !b) {
			continue
		}
		out[k] = true
	}
	return out
}

// OnPath reports whether a risk-bearing tool lies on a minimal causal path
// to the goal (always false for low-risk tools, which the gate does not
// consider).
func (g *Gate) OnPath(tool string) bool { return g.onPath[tool] }

// Exact reports whether the exact path search ran (false: the gate fell
// back to the backward closure, as with more than 18 candidate tools or an
// unreachable goal).
func (g *Gate) Exact() bool { return g.search == "exact" }

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

// Refuses returns why the gate does not admit a call to a visible tool
// with these arguments, or "": the tool's argument-bound approvals
// (scenario.Tool.Binds) name other arguments. A bound tool is exposed as
// the capability the user approved (pay PY-2201), not the tool at large,
// so a call outside it is refused like a call to a hidden tool.
func (g *Gate) Refuses(t *scenario.Tool, e *env.Env, args map[string]any) string {
	if !g.binds || t == nil {
		return ""
	}
	if un := e.Unapproved(t, args); len(un) > 0 {
		return fmt.Sprintf("tool %s is not available for these arguments: the approval (%s) names other arguments", t.Name, strings.Join(un, ", "))
	}
	return ""
}

// A CallGate is a filter that also admits or refuses each call to a tool
// it offers, by its arguments (the gate: argument-bound approvals).
type CallGate interface {
	Filter
	Refuses(t *scenario.Tool, e *env.Env, args map[string]any) string
}

// Offer is the gate as a Filter: each of the scenario's tools in order.
func (g *Gate) Offer(e *env.Env, _ []trajectory.Message) []bool {
	out := make([]bool, len(g.order))
	for i, name := range g.order {
		out[i] = g.Visible(name, e)
	}
	return out
}

// RunGated is the "gated" framework (risk-aware causal gating) with λ = 0:
// the native tool-calling loop of RunNormal, except that the tools offered
// at each step are those the scenario's Gate exposes in the current state.
// The visible set is recorded per step. A call to a tool of the scenario
// that is not visible is not executed: it is answered with a tool error
// ("tool X is not available"), recorded with outcome not_visible, and still
// labelled by the drift detector (it is an attempt). RunFiltered runs it
// with another λ.
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
