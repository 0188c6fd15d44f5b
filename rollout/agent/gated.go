package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Gate is a scenario's risk-aware causal gate, computed from its tool
// contracts and shared by every episode (safe for concurrent use).
//
// A risk-bearing tool (risk medium or high) is visible at a step only when
//
//   - it lies on a minimal causal path to the goal from the current state
//     (see GateOptions): a set of tools that, applied in some order from
//     the variables that hold now, makes every goal variable hold, of
//     least cost  Σ cost(t) + λ · Σ w(risk) over its risk-bearing tools;
//     and
//   - every variable in its `requires` and `authorizes` holds in the
//     environment's state.
//
// The path is recomputed as the state changes (the paper's s_t), so a tool
// that a read makes worth taking is exposed after the read, not before;
// the tools of the initial state's path stay on it (pathAt says why). Low-risk
// tools are all visible (antidrift's default), or, with LowRiskCausal,
// only when they lie on such a path and their `requires` hold (the
// paper's causal sufficiency for read-only tools).
//
// What a tool makes hold is its `produces` list plus the keys its
// responses' effects set, less the authorization variables
// when the tool is untrusted, since the environment drops those.
// Authorization variables can only be opened by trusted tools, so a tool
// result can never expose a risky tool. (A scenario loaded with unsafe
// provenance lets content tools open them: the gate then follows the
// scenario, which is the point of that boundary case.)
type Gate struct {
	s        *scenario.Scenario
	opts     GateOptions
	produces [][]string // per tool: what it makes hold
	pre      [][]string // per tool: requires (and authorizes unless ignored)
	cand     []int      // the tools that can reach the goal (backward closure)
	closure  []bool     // the same, by tool index
	initPath []bool     // the tools on a least-cost path from the initial state
	relevant []string   // variables whose holding can change the search
	index    map[string]int
	onPath   map[string]bool // risk-bearing tools on a least-cost path from the initial state
	conds    map[string][]string
	risky    map[string]bool
	known    map[string]bool
	order    []string // the scenario's tools in order
	cost     float64  // the least path cost from the initial state; NaN when unreachable
	search   string   // how the initial path was found: "exact", "closure" (fallback)
	// binds: the gate honours argument-bound approvals (scenario.Tool.Binds);
	// the causal filter, which ignores authorization, does not.
	binds bool

	mu    sync.Mutex
	paths map[string][]bool // by state (the relevant variables that hold): tools on a least-cost path
}

// LowRiskVisibility says which low-risk tools a gate shows.
type LowRiskVisibility string

// Low-risk visibility settings.
const (
	// LowRiskAll shows every low-risk tool at every step (the default).
	LowRiskAll LowRiskVisibility = "all"
	// LowRiskCausal shows a low-risk tool only on a least-cost causal path
	// from the current state with its requires holding, as the paper's
	// causal filtering exposes read-only tools.
	LowRiskCausal LowRiskVisibility = "causal"
)

// ParseLowRisk reads a low-risk visibility ("" is the default, all).
func ParseLowRisk(s string) (LowRiskVisibility, error) {
	switch LowRiskVisibility(s) {
	case "", LowRiskAll:
		return LowRiskAll, nil
	case LowRiskCausal:
		return LowRiskCausal, nil
	}
	return "", fmt.Errorf("low-risk visibility must be %q or %q, got %q", LowRiskAll, LowRiskCausal, s)
}

// GateOptions set the causal path search. Lambda is the risk penalty λ ≥ 0:
// a path costs the sum of its tools' costs (scenario.Tool.Cost, 1 unless
// given) plus λ times the risk weights of its risk-bearing tools, so a
// larger λ prefers paths through fewer or milder risky tools. Every path
// of least cost is kept (their union is on the path), so ties never depend
// on tool order.
type GateOptions struct {
	Lambda  float64
	Weights scenario.RiskWeights
	// IgnoreAuthorization drops `authorizes` from the conditions: the
	// causal filter, which gates on causal need and `requires` only.
	IgnoreAuthorization bool
	// LowRisk says which low-risk tools are shown ("" or LowRiskAll: all).
	LowRisk LowRiskVisibility
}

// maxExactTools bounds the exact path search (2^n subsets of the tools
// that can reach the goal); beyond it the gate keeps the backward closure.
const maxExactTools = 18

// NewGate computes a scenario's causal paths to its goal with λ = 0.
func NewGate(s *scenario.Scenario) *Gate {
	return NewGateWith(s, GateOptions{Weights: scenario.DefaultRiskWeights})
}

// NewGateWith prepares a scenario's gate under opts and computes its
// least-cost paths from the initial state.
func NewGateWith(s *scenario.Scenario, opts GateOptions) *Gate {
	g := &Gate{s: s, opts: opts, onPath: map[string]bool{}, conds: map[string][]string{}, risky: map[string]bool{}, known: map[string]bool{},
		index: map[string]int{}, cost: math.NaN(), binds: !opts.IgnoreAuthorization, paths: map[string][]bool{}}
	auth := s.AuthorizationVars()
	n := len(s.Tools)
	g.produces = make([][]string, n)
	g.pre = make([][]string, n)
	for i := range s.Tools {
		t := &s.Tools[i]
		g.known[t.Name] = true
		g.index[t.Name] = i
		g.order = append(g.order, t.Name)
		add := func(v string) {
			if t.Trusted || !auth[v] || s.UnsafeProvenance {
				g.produces[i] = append(g.produces[i], v)
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
		g.pre[i] = append(g.pre[i], t.Requires...)
		if !opts.IgnoreAuthorization {
			g.pre[i] = append(g.pre[i], t.Authorizes...)
		}
		if t.Risk.Bearing() {
			g.risky[t.Name] = true
			g.conds[t.Name] = g.pre[i]
		}
	}
	// Backward closure from the goal: a tool producing a needed variable
	// may lie on a path, and what it needs becomes needed.
	needed := map[string]bool{}
	for _, v := range s.Goal {
		needed[v] = true
	}
	g.closure = make([]bool, n)
	for changed := true; changed; {
		changed = false
		for i := range s.Tools {
			if g.closure[i] {
				continue
			}
			for _, v := range g.produces[i] {
				if needed[v] {
					g.closure[i], changed = true, true
					break
				}
			}
			if g.closure[i] {
				for _, v := range g.pre[i] {
					needed[v] = true
				}
			}
		}
	}
	rel := map[string]bool{}
	for _, v := range s.Goal {
		rel[v] = true
	}
	for i := range g.closure {
		if g.closure[i] {
			g.cand = append(g.cand, i)
			for _, v := range g.pre[i] {
				rel[v] = true
			}
			for _, v := range g.produces[i] {
				rel[v] = true
			}
		}
	}
	for v := range rel {
		g.relevant = append(g.relevant, v)
	}
	sort.Strings(g.relevant)

	init := initialVars(s)
	best := g.bestPaths(init)
	if best == nil {
		// Too many candidates for the exact search, or no path reaches the
		// goal: keep every tool that could lie on one.
		g.search = "closure"
		best = g.closure
	} else {
		g.search = "exact"
	}
	g.initPath = best
	if c, ok := g.pathCost(best); ok && g.search == "exact" {
		g.cost = c
	}
	for i := range s.Tools {
		if best[i] && g.risky[s.Tools[i].Name] {
			g.onPath[s.Tools[i].Name] = true
		}
	}
	return g
}

// toolCost is a tool's cost in the path search: its own cost plus λ times
// its risk weight when it bears risk.
func (g *Gate) toolCost(i int) float64 {
	t := &g.s.Tools[i]
	c := t.PathCost()
	if t.Risk.Bearing() {
		c += g.opts.Lambda * g.opts.Weights.Of(t.Risk)
	}
	return c
}

// bestPaths is the union of the least-cost subsets of the candidates that
// reach the goal by forward chaining from the variables in holds, or nil
// when there are too many candidates or no subset reaches it. When the
// goal holds already, the empty path is the least: nothing is needed.
func (g *Gate) bestPaths(holdsInit map[string]bool) []bool {
	cand := g.cand
	if len(cand) > maxExactTools {
		return nil
	}
	cost := make([]float64, len(cand))
	for j, i := range cand {
		cost[j] = g.toolCost(i)
	}
	reaches := func(mask uint32) bool {
		holds := map[string]bool{}
		for v := range holdsInit {
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
				for _, v := range g.pre[i] {
					ok = ok && holds[v]
				}
				if ok {
					used |= 1 << j
					progress = true
					for _, v := range g.produces[i] {
						holds[v] = true
					}
				}
			}
		}
		for _, v := range g.s.Goal {
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
	out := make([]bool, len(g.s.Tools))
	for j, i := range cand {
		out[i] = union&(1<<j) != 0
	}
	return out
}

// pathCost is the cost of the tools marked in on (for reports).
func (g *Gate) pathCost(on []bool) (float64, bool) {
	c := 0.0
	any := false
	for i, ok := range on {
		if ok {
			any = true
			c += g.toolCost(i)
		}
	}
	return c, any
}

// pathAt is the tools on a least-cost path to the goal from e's state
// (the backward closure when the exact search cannot run or finds none),
// computed once per state and cached.
func (g *Gate) pathAt(e *env.Env) []bool {
	var key strings.Builder
	holds := map[string]bool{}
	for i, v := range g.relevant {
		if e.Holds(v) {
			holds[v] = true
			key.WriteString(strconv.Itoa(i))
			key.WriteByte(',')
		}
	}
	k := key.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.paths[k]; ok {
		return p
	}
	p := g.bestPaths(holds)
	if p == nil {
		p = g.closure
	}
	// The initial path stays on: a scenario's goal variables may hold
	// before its last required call (two payments make "paid" hold at the
	// first), so hiding what the state no longer needs would hide required
	// calls. What the state newly needs is added.
	u := make([]bool, len(p))
	for i := range p {
		u[i] = p[i] || g.initPath[i]
	}
	g.paths[k] = u
	return u
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
// to the goal from the initial state (always false for low-risk tools,
// which the gate does not consider). OnPathAt answers for a later state.
func (g *Gate) OnPath(tool string) bool { return g.onPath[tool] }

// OnPathAt reports whether a tool lies on a minimal causal path to the
// goal from e's state.
func (g *Gate) OnPathAt(tool string, e *env.Env) bool {
	i, ok := g.index[tool]
	return ok && g.pathAt(e)[i]
}

// Exact reports whether the exact path search ran from the initial state
// (false: the gate fell back to the backward closure, as with more than
// 18 candidate tools or an unreachable goal).
func (g *Gate) Exact() bool { return g.search == "exact" }

// Visible reports whether a tool is exposed in the given state. Tools the
// scenario does not have are never visible.
func (g *Gate) Visible(tool string, e *env.Env) bool {
	i, ok := g.index[tool]
	if !ok {
		return false
	}
	if !g.risky[tool] {
		if g.opts.LowRisk != LowRiskCausal {
			return true
		}
		if !g.pathAt(e)[i] {
			return false
		}
		for _, v := range g.s.Tools[i].Requires {
			if !e.Holds(v) {
				return false
			}
		}
		return true
	}
	if !g.pathAt(e)[i] {
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
