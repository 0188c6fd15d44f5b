package probe

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// Class groups probes by what they test.
type Class string

// Probe classes.
const (
	ClassBaseline Class = "baseline" // the compliant path and the empty trajectory
	ClassOver     Class = "over"     // over-actions: must not be a clean success
	ClassBenign   Class = "benign"   // benign variants: must stay a clean success
	ClassCustom   Class = "custom"   // the scenario's own probes: exact labels
)

func (c Class) String() string { return string(c) }

// Expect is the labels a probe must get.
type Expect string

// Expectations.
const (
	ExpectClean    Expect = "clean"            // success and no drift
	ExpectFailure  Expect = "failure"          // no success
	ExpectDrift    Expect = "drift"            // drift, success either way
	ExpectNotClean Expect = "drift_or_failure" // drift or no success
	ExpectExact    Expect = "exact"            // drift and success as the probe says
)

func (e Expect) String() string { return string(e) }

// Call is one tool call of a probe, with its arguments decoded and as the
// JSON text the scripted turn sends (surface variants choose their text).
type Call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"-"`
	Raw  string         `json:"arguments"`
}

// Probe is one counterfactual trajectory: calls made one per assistant
// turn, then a final answer, and the labels it must get.
type Probe struct {
	Name   string `json:"name"`
	Class  Class  `json:"class"`
	Kind   string `json:"kind"`
	Note   string `json:"note,omitempty"`
	Calls  []Call `json:"calls"`
	Answer string `json:"answer"`
	Expect Expect `json:"expect"`
	// WantDrift and WantSuccess are the exact labels (ExpectExact).
	WantDrift   bool `json:"want_drift,omitempty"`
	WantSuccess bool `json:"want_success,omitempty"`
	// Violation, when >= 0, is the annotated violation the probe enacts:
	// the trajectory must match it.
	Violation int `json:"violation"`
}

// Battery is a scenario's generated and hand-written probes.
type Battery struct {
	Scenario string  `json:"scenario"`
	Probes   []Probe `json:"probes"`
	// Skipped says which probes could not be built and why (a pattern no
	// known value matches): write them as probes.cases instead.
	Skipped []string `json:"skipped,omitempty"`
}

// Count returns the number of probes of a class.
func (b *Battery) Count(c Class) int {
	n := 0
	for _, p := range b.Probes {
		if p.Class == c {
			n++
		}
	}
	return n
}

// gen builds one scenario's battery.
type gen struct {
	s      *scenario.Scenario
	c      *scenario.Compiled // compiled on first need
	tools  map[string]params
	path   []Call
	opt    []bool // path[i] is an optional required call
	answer string
	text   string // filler for free-text arguments
	b      *Battery
	seen   map[string]bool
	// leaves are the strings and numbers of every tool's returns, the
	// last candidates for a pattern's value (decoded once: returns).
	leaves     []any
	leavesDone bool
}

// Generate builds the probe battery of a scenario. The order and content
// are a pure function of the scenario.
func Generate(s *scenario.Scenario) (*Battery, error) {
	g := &gen{s: s, tools: map[string]params{}, b: &Battery{Scenario: s.ID}, seen: map[string]bool{}}
	for _, t := range s.Tools {
		g.tools[t.Name] = readParams(t.Parameters)
	}
	g.text, g.answer = g.deliverableText()
	if err := g.compliantPath(); err != nil {
		return nil, err
	}
	g.add(Probe{Name: "compliant", Class: ClassBaseline, Kind: "compliant", Note: "the compliant path", Calls: g.path, Expect: ExpectClean})
	g.add(Probe{Name: "empty", Class: ClassBaseline, Kind: "empty", Note: "no tool call, the compliant answer only", Expect: ExpectFailure})
	g.violations()
	g.outsideTools()
	g.repeatWrites()
	g.widen()
	g.enums()
	g.resources()
	g.outsideReads()
	g.windows()
	g.leaks()
	g.surface()
	g.skipOptional()
	g.neutralReads()
	g.facts()
	g.order()
	g.deliverables()
	if err := g.custom(); err != nil {
		return nil, err
	}
	return g.b, nil
}

func (g *gen) add(p Probe) {
	if g.seen[p.Name] {
		return
	}
	g.seen[p.Name] = true
	if p.Answer == "" && p.Kind != "answer" {
		p.Answer = g.answer
	}
	if p.Violation == 0 && p.Kind != "violation" {
		p.Violation = -1
	}
	p.Calls = append([]Call(nil), p.Calls...)
	for i := range p.Calls {
		if p.Calls[i].Raw == "" {
			p.Calls[i].Raw = encode(p.Calls[i].Args, false)
		}
	}
	g.b.Probes = append(g.b.Probes, p)
}

func (g *gen) skip(name, why string) {
	g.b.Skipped = append(g.b.Skipped, name+": "+why)
}

// deliverableText is filler for free-text arguments (the strings success
// assertions look for) and the compliant answer (probes.answer, or the
// strings answer assertions look for).
func (g *gen) deliverableText() (text, answer string) {
	var parts []string
	for _, a := range g.s.Success.State {
		if a.Text == nil {
			continue
		}
		parts = append(parts, a.Text.Contains...)
		for _, alt := range a.Text.AnyOf {
			if len(alt) > 0 {
				parts = append(parts, alt[0])
			}
		}
	}
	var ans []string
	if a := g.s.Success.Answer; a != nil {
		ans = append(ans, a.Contains...)
		for _, alt := range a.AnyOf {
			if len(alt) > 0 {
				ans = append(ans, alt[0])
			}
		}
	}
	text = strings.Join(parts, ". ")
	if text == "" {
		text = "Done as asked."
	}
	switch {
	case g.s.Probes != nil && g.s.Probes.Answer != "":
		answer = g.s.Probes.Answer
	case len(ans) > 0:
		answer = "Done: " + strings.Join(ans, "; ") + "."
	default:
		answer = "Done as asked."
	}
	return text, answer
}

// compliantPath is probes.path, or required_calls completed: pattern-only
// arguments get a known value the pattern accepts, and arguments the
// tool's schema requires are taken from the tool's responses, else filled.
func (g *gen) compliantPath() error {
	if g.s.Probes != nil && len(g.s.Probes.Path) > 0 {
		for i, pc := range g.s.Probes.Path {
			args, err := decodeArgs(pc.Args)
			if err != nil {
				return fmt.Errorf("probe: %s: %s: probes.path[%d].%w", g.s.File, g.s.ID, i, err)
			}
			g.path = append(g.path, Call{Tool: pc.Tool, Args: args})
			g.opt = append(g.opt, g.optionalMatch(pc.Tool, args))
		}
		return nil
	}
	for i, rc := range g.s.RequiredCalls {
		args, err := decodeArgs(rc.Args)
		if err != nil {
			return fmt.Errorf("probe: %s: %s: required_calls[%d].%w", g.s.File, g.s.ID, i, err)
		}
		for k, p := range rc.Patterns {
			if _, ok := args[k]; ok {
				continue
			}
			if v, ok := g.valueFor(rc.Tool, k, p, nil); ok {
				args[k] = v
			} else {
				g.skip("compliant", fmt.Sprintf("required_calls[%d].patterns.%s: no known value matches %q; give the path in probes.path", i, k, p))
			}
		}
		g.complete(rc.Tool, args)
		g.path = append(g.path, Call{Tool: rc.Tool, Args: args})
		g.opt = append(g.opt, rc.Optional)
	}
	return nil
}

func (g *gen) optionalMatch(tool string, args map[string]any) bool {
	for _, rc := range g.s.RequiredCalls {
		if rc.Tool != tool || !rc.Optional {
			continue
		}
		if m, err := scenario.NewMatcher(rc.Args, rc.Patterns); err == nil && m.Match(args) {
			return true
		}
	}
	return false
}

// complete adds the arguments a tool's schema requires and args lack: from
// the first response whose literal subset agrees with args, else filled.
func (g *gen) complete(tool string, args map[string]any) {
	t := g.s.Tool(tool)
	if t == nil {
		return
	}
	for _, r := range t.Responses {
		when, err := decodeArgs(r.When)
		if err != nil || len(when) == 0 {
			continue
		}
		agrees := true
		for k, v := range when {
			if got, ok := args[k]; ok && !scenario.Equal(got, v) {
				agrees = false
				break
			}
		}
		if !agrees {
			continue
		}
		for k, v := range when {
			if _, ok := args[k]; !ok {
				args[k] = v
			}
		}
		break
	}
	p := g.tools[tool]
	for _, r := range p.required {
		if _, ok := args[r]; !ok {
			args[r] = fillValue(p.props[r], g.text)
		}
	}
}

// valueFor finds a value for an argument that a pattern accepts (and that
// differs from avoid): widened forms of avoid, the tool's response
// literals, violation literals, the parameter's enum and examples, then the
// strings and numbers of every tool's returns.
func (g *gen) valueFor(tool, arg, pattern string, avoid any) (any, bool) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, false
	}
	var cands []any
	if avoid != nil {
		cands = append(cands, widened(avoid)...)
	}
	if t := g.s.Tool(tool); t != nil {
		for _, r := range t.Responses {
			if raw, ok := r.When[arg]; ok {
				if v, err := scenario.DecodeJSON(raw); err == nil {
					cands = append(cands, v)
				}
			}
		}
	}
	for _, v := range g.s.Violations {
		if raw, ok := v.Args[arg]; ok && v.Tool == tool {
			if d, err := scenario.DecodeJSON(raw); err == nil {
				cands = append(cands, d)
			}
		}
	}
	prop := g.tools[tool].props[arg]
	for _, key := range []string{"enum", "examples"} {
		if xs, ok := prop[key].([]any); ok {
			for _, x := range xs {
				cands = append(cands, toDecoded(x))
			}
		}
	}
	// Last, what the agent can learn from any tool's return, as the
	// validator's check of a pattern does (scenario.CompleteArgs).
	cands = append(cands, g.returns()...)
	for _, c := range cands {
		if avoid != nil && scenario.Equal(c, avoid) {
			continue
		}
		if re.MatchString(valueText(c)) {
			return c, true
		}
	}
	return nil, false
}

// returns lists the strings and numbers of every tool's returns.
func (g *gen) returns() []any {
	if !g.leavesDone {
		g.leavesDone = true
		for _, t := range g.s.Tools {
			for _, r := range t.Responses {
				if x, err := scenario.DecodeJSON(r.Return); err == nil {
					g.leaves = append(g.leaves, scenario.Leaves(x)...)
				}
			}
		}
	}
	return g.leaves
}

func widened(v any) []any {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	w := widenNumber(n)
	return []any{w, widenNumber(w), widenNumber(widenNumber(w))}
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return encode(v, false)
}

// withCall returns the path with extra inserted after position at (-1:
// before everything; len: at the end).
func (g *gen) withCall(at int, extra ...Call) []Call {
	out := make([]Call, 0, len(g.path)+len(extra))
	for i := -1; i < len(g.path); i++ {
		if i >= 0 {
			out = append(out, g.cloneCall(g.path[i]))
		}
		if i == at {
			out = append(out, extra...)
		}
	}
	if at >= len(g.path) {
		out = append(out, extra...)
	}
	return out
}

// replaced returns the path with call i replaced.
func (g *gen) replaced(i int, c Call) []Call {
	out := make([]Call, len(g.path))
	for j := range g.path {
		if j == i {
			out[j] = c
		} else {
			out[j] = g.cloneCall(g.path[j])
		}
	}
	return out
}

func (g *gen) cloneCall(c Call) Call {
	return Call{Tool: c.Tool, Args: copyArgs(c.Args)}
}

// firstOnPath is the index of the first path call of a tool, or -1.
func (g *gen) firstOnPath(tool string) int {
	for i, c := range g.path {
		if c.Tool == tool {
			return i
		}
	}
	return -1
}

// label names a path call: the tool, with its position when the tool
// appears more than once.
func (g *gen) label(i int) string {
	n := 0
	for _, c := range g.path {
		if c.Tool == g.path[i].Tool {
			n++
		}
	}
	if n == 1 {
		return g.path[i].Tool
	}
	return fmt.Sprintf("%s#%d", g.path[i].Tool, i)
}

// isWrite reports whether a tool changes anything: writes: true, or a
// response with effects on a tool at privilege L2 (annotate/modify) or
// above. Effects of an L0/L1 tool are a read's own bookkeeping (a query
// log), and reading twice is no over-action.
func (g *gen) isWrite(tool string) bool {
	t := g.s.Tool(tool)
	if t == nil {
		return false
	}
	if t.Writes {
		return true
	}
	if t.Privilege < 2 {
		return false
	}
	for _, r := range t.Responses {
		if r.Effects != nil && (len(r.Effects.Set) > 0 || len(r.Effects.Append) > 0 || len(r.Effects.Remove) > 0) {
			return true
		}
	}
	return false
}

func (g *gen) onPath(c Call) bool {
	for _, p := range g.path {
		if p.Tool == c.Tool && scenario.Equal(p.Args, c.Args) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
