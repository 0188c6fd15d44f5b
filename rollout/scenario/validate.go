package scenario

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/provisions"
)

// validate runs the semantic checks on a scenario that already satisfies the
// format schema, returning every problem.
func check(s *Scenario, cat *provisions.Catalogue) Problems {
	v := &validator{s: s, cat: cat, schemas: map[string]*ArgSchema{}, props: map[string]map[string]propInfo{}}
	v.tools()
	v.boundary()
	v.required()
	v.violations()
	v.success()
	v.goal()
	v.skills()
	v.v2()
	v.v3()
	v.injections()
	v.binds()
	v.probes()
	return v.ps
}

type validator struct {
	s       *Scenario
	cat     *provisions.Catalogue
	ps      Problems
	schemas map[string]*ArgSchema          // by tool name; absent when the schema is broken
	props   map[string]map[string]propInfo // by tool name, then property
	leaked  map[string]bool                // exposure paths the leak check reported (pathLeaks says no more there)
}

type propInfo struct {
	enum     []any
	examples []any
}

func (v *validator) addf(path, format string, a ...any) {
	v.ps = append(v.ps, Problem{File: v.s.File, Path: path, Msg: fmt.Sprintf(format, a...)})
}

var placeholder = regexp.MustCompile(`\{([^{}]*)\}`)

func (v *validator) tools() {
	seen := map[string]int{}
	for i, t := range v.s.Tools {
		p := pathf("tools[%d]", i)
		if j, dup := seen[t.Name]; dup {
			v.addf(p+".name", "duplicate tool %q (also tools[%d])", t.Name, j)
			continue
		}
		seen[t.Name] = i
		as, err := CompileArgSchema(t.Parameters)
		if err != nil {
			v.addf(p+".parameters", "%v", err)
		} else {
			v.schemas[t.Name] = as
			v.props[t.Name] = properties(t.Parameters)
		}
		if t.Resource != "" {
			for _, arg := range resourceArgs(t.Resource) {
				if _, ok := v.props[t.Name][arg]; !ok && as != nil {
					v.addf(p+".resource", "names argument %q, which is not a property of the tool's parameters", arg)
				}
			}
		}
		for j, r := range t.Responses {
			rp := pathf("%s.responses[%d]", p, j)
			m, err := NewMatcher(r.When, r.Patterns)
			if err != nil {
				v.matcherErr(rp, err)
				continue
			}
			v.checkArgs(rp+".when", t.Name, m)
			if r.Effects != nil {
				for name, raw := range r.Effects.Remove {
					if _, err := DecodeJSON(raw); err != nil {
						v.addf(rp+".effects.remove."+name, "%v", err)
					}
				}
			}
		}
	}
}

// matcherErr reports a NewMatcher error ("patterns.NAME: ...") at its path.
func (v *validator) matcherErr(path string, err error) {
	where, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		v.addf(path, "%v", err)
		return
	}
	v.addf(path+"."+where, "%s", msg)
}

// checkArgs validates an argument subset against the tool's schema and
// reports patterns on arguments the tool does not have. It reports whether
// the arguments are sound enough to check further.
func (v *validator) checkArgs(path, tool string, m Matcher) bool {
	as := v.schemas[tool]
	if as == nil {
		return false
	}
	ok := true
	if err := as.ValidateSubset(m.Want()); err != nil {
		v.addf(path, "does not match the parameters of %q: %v", tool, err)
		ok = false
	}
	for _, k := range sortedKeys(m.patterns) {
		ppath := strings.TrimSuffix(strings.TrimSuffix(path, ".args"), ".when") + ".patterns." + k
		if _, has := v.props[tool][k]; !has {
			v.addf(ppath, "%q has no argument %q", tool, k)
			ok = false
		} else if lit, has := m.want[k]; has && !m.patterns[k].MatchString(valueText(lit)) {
			v.addf(ppath, "contradicts the literal %s given for %q: no call can match", valueText(lit), k)
			ok = false
		}
	}
	return ok
}

func (v *validator) toolExists(path, name string) bool {
	if v.s.Tool(name) == nil {
		v.addf(path, "unknown tool %q", name)
		return false
	}
	return true
}

func (v *validator) boundary() {
	for i, name := range v.s.Boundary.Tools {
		v.toolExists(pathf("boundary.tools[%d]", i), name)
	}
}

func (v *validator) required() {
	var corpus []string
	corpus = append(corpus, v.s.Instruction, v.s.Context)
	corpus = appendLeaves(corpus, v.s.State)
	for i, c := range v.s.RequiredCalls {
		p := pathf("required_calls[%d]", i)
		if !v.toolExists(p+".tool", c.Tool) {
			continue
		}
		t := v.s.Tool(c.Tool)
		m, err := NewMatcher(c.Args, c.Patterns)
		if err != nil {
			v.matcherErr(p, err)
			continue
		}
		argsOK := v.checkArgs(p+".args", c.Tool, m)
		if argsOK {
			if _, err := v.s.CompleteArgs(c.Tool, c.Args, c.Patterns); err != nil {
				v.addf(p, "%v", err)
			}
		}
		if !v.s.InBoundaryTools(c.Tool) {
			v.addf(p+".tool", "%q is not in boundary.tools: the compliant path would drift", c.Tool)
		}
		if argsOK && t.Resource != "" {
			norm, _ := CompileNormalizers(t.Parameters)
			if res, ok := RenderResource(t.Resource, norm.Args(m.Want())); ok && !InBoundaryData(v.s.Boundary.Data, res) {
				v.addf(p+".args", "touches resource %q, which is outside boundary.data: the compliant path would drift%s", res, v.dataHint(res))
			}
		}
		for _, k := range sortedKeys(m.Want()) {
			v.traceable(pathf("%s.args.%s", p, k), c.Tool, k, m.Want()[k], corpus)
		}
		// Later required calls may use what this call's tool returns.
		for _, r := range t.Responses {
			corpus = appendLeaves(corpus, r.Return)
		}
	}
}

// traceable reports a required-call argument whose value cannot be found in
// what the agent sees before it must make the call.
func (v *validator) traceable(path, tool, arg string, val any, corpus []string) {
	info := v.props[tool][arg]
	for _, e := range info.enum {
		if Equal(e, val) {
			return
		}
	}
	var missing []string
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			if strings.TrimSpace(x) != "" && !inCorpus(corpus, x) {
				missing = append(missing, fmt.Sprintf("%q", x))
			}
		case json.Number:
			if !inCorpus(corpus, x.String()) {
				missing = append(missing, x.String())
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k])
			}
		}
	}
	walk(val)
	for _, m := range missing {
		v.addf(path, "value %s is not traceable: it appears nowhere in the instruction, the context, the initial state or an earlier required call's tool return", m)
	}
}

func inCorpus(corpus []string, s string) bool {
	s = strings.ToLower(s)
	for _, c := range corpus {
		if strings.Contains(strings.ToLower(c), s) {
			return true
		}
	}
	return false
}

// appendLeaves adds every string and number inside a JSON value (object keys
// included) to the corpus.
func appendLeaves(corpus []string, raw json.RawMessage) []string {
	if len(raw) == 0 {
		return corpus
	}
	val, err := DecodeJSON(raw)
	if err != nil {
		return corpus
	}
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			corpus = append(corpus, x)
		case json.Number:
			corpus = append(corpus, x.String())
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				corpus = append(corpus, k)
				walk(e)
			}
		}
	}
	walk(val)
	return corpus
}

func (v *validator) violations() {
	required := make([]Matcher, len(v.s.RequiredCalls))
	for i, c := range v.s.RequiredCalls {
		required[i], _ = v.norm(c.Tool).Matcher(c.Args, c.Patterns) // reported in required()
	}
	for i, vi := range v.s.Violations {
		p := pathf("violations[%d]", i)
		if v.toolExists(p+".tool", vi.Tool) {
			m, err := NewMatcher(vi.Args, vi.Patterns)
			if err != nil {
				v.matcherErr(p, err)
			} else {
				nm, _ := v.norm(vi.Tool).Matcher(vi.Args, vi.Patterns)
				if v.checkArgs(p+".args", vi.Tool, m) {
					if _, err := v.s.CompleteArgs(vi.Tool, vi.Args, vi.Patterns); err != nil {
						v.addf(p, "%v", err)
					}
				}
				for j, c := range v.s.RequiredCalls {
					if c.Tool == vi.Tool && !nm.Disjoint(required[j]) {
						v.addf(p, "overlaps required_calls[%d]: a call to %q can match both the compliant path and this violation", j, c.Tool)
					}
				}
			}
		}
		for j, id := range vi.Provisions {
			if !v.cat.Has(id) {
				v.addf(pathf("%s.provisions[%d]", p, j), "unknown provision %q", id)
			}
		}
		if vi.Kind == KindInjection {
			if v.toolExists(p+".trigger_in", vi.TriggerIn) {
				v.injectionTrigger(p, vi)
			}
		} else if v.toolExists(p+".trigger_in", vi.TriggerIn) {
			has := false
			for _, r := range v.s.Tool(vi.TriggerIn).Responses {
				has = has || r.Trigger != ""
			}
			if !has {
				v.addf(p+".trigger_in", "tool %q has no response with a trigger", vi.TriggerIn)
			}
		}
	}
}

// written is every top-level state key a scenario can hold: the initial
// state, effects and produced variables.
func (v *validator) written() map[string]bool {
	keys := map[string]bool{}
	if st, err := DecodeJSON(v.s.State); err == nil {
		if m, ok := st.(map[string]any); ok {
			for k := range m {
				keys[k] = true
			}
		}
	}
	for _, t := range v.s.Tools {
		for _, p := range t.Produces {
			keys[p] = true
		}
		for _, r := range t.Responses {
			if r.Effects == nil {
				continue
			}
			for k := range r.Effects.Set {
				keys[k] = true
			}
			for k := range r.Effects.Append {
				keys[k] = true
			}
		}
	}
	return keys
}

func (v *validator) success() {
	keys := v.written()
	for i, a := range v.s.Success.State {
		p := pathf("success.state[%d]", i)
		ops := 0
		for _, raw := range [][]byte{a.Contains, a.NotContains, a.Equals, a.EqualsSet} {
			if len(raw) > 0 {
				ops++
			}
		}
		if a.Count != nil {
			ops++
		}
		if a.Text != nil {
			ops++
		}
		if a.Duration != nil {
			ops++
			if _, err := a.Duration.Bounds(); err != nil {
				v.addf(p+".duration", "%v", err)
			}
		}
		if ops != 1 {
			v.addf(p, "needs exactly one of contains, not_contains, equals, equals_set, count, text and duration (has %d)", ops)
		}
		root := strings.SplitN(a.Path, ".", 2)[0]
		if !keys[root] {
			v.addf(p+".path", "%q is never in the state: not in the initial state, and no tool writes it", root)
		}
		for field, raw := range map[string]json.RawMessage{"contains": a.Contains, "not_contains": a.NotContains, "equals": a.Equals} {
			if len(raw) > 0 {
				if _, err := DecodeJSON(raw); err != nil {
					v.addf(p+"."+field, "%v", err)
				}
			}
		}
	}
}

func (v *validator) goal() {
	keys := v.written()
	for i, g := range v.s.Goal {
		if !keys[g] {
			v.addf(pathf("goal[%d]", i), "%q is never set: no tool produces it", g)
		}
	}
}

func (v *validator) skills() {
	for i, sk := range v.s.Skills {
		for j, name := range sk.Tools {
			v.toolExists(pathf("skills[%d].tools[%d]", i, j), name)
		}
	}
}

// properties reads the enum and examples of each top-level property.
func properties(params json.RawMessage) map[string]propInfo {
	var schema struct {
		Properties map[string]struct {
			Enum     []json.RawMessage `json:"enum"`
			Examples []json.RawMessage `json:"examples"`
			Default  json.RawMessage   `json:"default"`
		} `json:"properties"`
	}
	out := map[string]propInfo{}
	if json.Unmarshal(params, &schema) != nil {
		return out
	}
	for name, p := range schema.Properties {
		var info propInfo
		for _, e := range p.Enum {
			if x, err := DecodeJSON(e); err == nil {
				info.enum = append(info.enum, x)
			}
		}
		for _, e := range p.Examples {
			if x, err := DecodeJSON(e); err == nil {
				info.examples = append(info.examples, x)
			}
		}
		out[name] = info
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
