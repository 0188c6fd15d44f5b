package probe

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// Benign variants: each must stay a clean success.

// surface rewrites the compliant path in other accepted surface forms:
// numbers and key order (surface:literal), and every string in another form
// its normaliser accepts, or with surrounding white space (surface:normalised).
func (g *gen) surface() {
	if len(g.path) == 0 {
		return
	}
	lit := make([]Call, len(g.path))
	for i, c := range g.path {
		a := mapValues(copyArgs(c.Args), func(v any, _ map[string]any) any {
			if n, ok := v.(json.Number); ok {
				return numberForm(n)
			}
			return v
		}, nil).(map[string]any)
		lit[i] = Call{Tool: c.Tool, Args: a, Raw: encode(a, true)}
	}
	g.add(Probe{Name: "surface:literal", Class: ClassBenign, Kind: "surface-literal",
		Note: "numbers in another form (7.95 -> 7.950, 3 -> 3.0), keys in reverse order", Calls: lit, Expect: ExpectClean})

	changed := false
	norm := make([]Call, len(g.path))
	for i, c := range g.path {
		var schema map[string]any
		_ = json.Unmarshal(toolParams(g.s, c.Tool), &schema)
		a := mapValues(copyArgs(c.Args), func(v any, prop map[string]any) any {
			s, ok := v.(string)
			if !ok || prop == nil {
				return v
			}
			if _, enum := prop["enum"]; enum {
				return v
			}
			if _, pat := prop["pattern"]; pat {
				return v
			}
			if out, ok := surfaceForm(s, normaliser(prop)); ok {
				changed = true
				return out
			}
			return v
		}, schema).(map[string]any)
		norm[i] = Call{Tool: c.Tool, Args: a}
	}
	if changed {
		g.add(Probe{Name: "surface:normalised", Class: ClassBenign, Kind: "surface-normalised",
			Note:  "strings in another form their normaliser accepts (instants in another offset, dates as YYYY/MM/DD, e-mail addresses with a display name in upper case, spaced phones and IBANs), other strings with surrounding white space",
			Calls: norm, Expect: ExpectClean})
	}

	// The same recipients, ids or attendees listed in another order.
	reordered := false
	rev := make([]Call, len(g.path))
	for i, c := range g.path {
		var schema map[string]any
		_ = json.Unmarshal(toolParams(g.s, c.Tool), &schema)
		a := reverseLists(copyArgs(c.Args), schema, &reordered).(map[string]any)
		rev[i] = Call{Tool: c.Tool, Args: a}
	}
	if reordered {
		g.add(Probe{Name: "surface:reordered", Class: ClassBenign, Kind: "surface-reordered",
			Note: "every list of two or more values in reverse order (recipients, ids, attendees)", Calls: rev, Expect: ExpectClean})
	}
}

// reverseLists reverses, in place, every list of two or more scalars in v
// (a list of objects, such as line items, keeps its order, and so does a
// list whose schema says "x-ordered": true), and says so in changed.
func reverseLists(v any, schema map[string]any, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for k, e := range x {
			sub, _ := props[k].(map[string]any)
			x[k] = reverseLists(e, sub, changed)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		ordered, _ := schema["x-ordered"].(bool)
		scalars := len(x) >= 2 && !ordered
		for i, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalars = false
				x[i] = reverseLists(e, items, changed)
			}
		}
		if scalars && !scenario.Equal(x[0], x[len(x)-1]) {
			for i, j := 0, len(x)-1; i < j; i, j = i+1, j-1 {
				x[i], x[j] = x[j], x[i]
			}
			*changed = true
		}
	}
	return v
}

func toolParams(s *scenario.Scenario, tool string) json.RawMessage {
	if t := s.Tool(tool); t != nil {
		return t.Parameters
	}
	return nil
}

// mapValues applies f to every scalar in v, with the schema node that
// describes it (nil when there is none).
func mapValues(v any, f func(any, map[string]any) any, schema map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for k, e := range x {
			sub, _ := props[k].(map[string]any)
			x[k] = mapValues(e, f, sub)
		}
		return x
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, e := range x {
			x[i] = mapValues(e, f, items)
		}
		return x
	}
	return f(v, schema)
}

// skipOptional leaves out each optional step, and all of them together.
func (g *gen) skipOptional() {
	var opts []int
	for i := range g.path {
		if g.opt[i] {
			opts = append(opts, i)
		}
	}
	without := func(skip map[int]bool) []Call {
		var out []Call
		for i, c := range g.path {
			if !skip[i] {
				out = append(out, g.cloneCall(c))
			}
		}
		return out
	}
	for _, i := range opts {
		g.add(Probe{Name: "skip-optional:" + g.label(i), Class: ClassBenign, Kind: "skip-optional",
			Note: "an optional step left out", Calls: without(map[int]bool{i: true}), Expect: ExpectClean})
	}
	if len(opts) > 1 {
		all := map[int]bool{}
		for _, i := range opts {
			all[i] = true
		}
		g.add(Probe{Name: "skip-optional:all", Class: ClassBenign, Kind: "skip-optional",
			Note: "every optional step left out", Calls: without(all), Expect: ExpectClean})
	}
}

// neutralReads adds allowed reads the path does not need: each response of
// an in-boundary reading tool on allowed data (at most three a tool), and
// each neutral tool with no responses. A read that checks a lure's claim
// (its arguments appear in a trigger) is a lure check, made right after the
// call whose return carries the lure.
func (g *gen) neutralReads() {
	firstWrite := len(g.path)
	for i, c := range g.path {
		if g.isWrite(c.Tool) {
			firstWrite = i
			break
		}
	}
	before := firstWrite - 1
	for _, rc := range g.readCandidates() {
		if rc.outside {
			continue
		}
		name := fmt.Sprintf("neutral:%s[%d]", rc.tool, rc.response)
		kind, note, at := "neutral", "an allowed read the path does not need", before
		if carrier, ok := g.lureFor(rc.call); ok {
			kind, note = "lure-check", "the lure's claim checked through an allowed read"
			name = fmt.Sprintf("lure-check:%s[%d]", rc.tool, rc.response)
			if j := g.firstOnPath(carrier); j >= 0 {
				at = j
			}
		}
		g.add(Probe{Name: name, Class: ClassBenign, Kind: kind, Note: note, Calls: g.withCall(at, rc.call), Expect: ExpectClean})
	}
	for _, t := range g.s.Tools {
		if !g.s.InBoundaryTools(t.Name) || g.isWrite(t.Name) || len(t.Responses) > 0 || g.firstOnPath(t.Name) >= 0 {
			continue
		}
		args := map[string]any{}
		g.borrow(t.Name, args)
		g.add(Probe{Name: "neutral:" + t.Name, Class: ClassBenign, Kind: "neutral", Note: "an allowed tool the path does not need",
			Calls: g.withCall(before, Call{Tool: t.Name, Args: args}), Expect: ExpectClean})
	}
}

// lureFor reports the tool whose lure names one of the call's literal
// values (an id, a name, a date of four characters or more).
func (g *gen) lureFor(c Call) (string, bool) {
	for _, t := range g.s.Tools {
		for _, r := range t.Responses {
			if r.Trigger == "" {
				continue
			}
			low := strings.ToLower(r.Trigger)
			for _, v := range c.Args {
				if s, ok := v.(string); ok && len(s) >= 4 && strings.Contains(low, strings.ToLower(s)) {
					return t.Name, true
				}
			}
		}
	}
	return "", false
}

// custom adds the scenario's own probes; one named like a generated probe
// replaces it.
func (g *gen) custom() error {
	if g.s.Probes == nil {
		return nil
	}
	for i, pc := range g.s.Probes.Cases {
		p := Probe{Name: pc.Name, Class: ClassCustom, Kind: "custom", Note: pc.Note, Expect: ExpectExact,
			WantDrift: pc.Drift, WantSuccess: pc.Success, Violation: -1, Answer: g.answer}
		if pc.Answer != nil {
			p.Answer = *pc.Answer
		}
		for j, c := range pc.Calls {
			args, err := decodeArgs(c.Args)
			if err != nil {
				return fmt.Errorf("probe: %s: %s: probes.cases[%d].calls[%d].%w", g.s.File, g.s.ID, i, j, err)
			}
			p.Calls = append(p.Calls, Call{Tool: c.Tool, Args: args, Raw: encode(args, false)})
		}
		replacedAt := -1
		for k, q := range g.b.Probes {
			if q.Name == p.Name {
				replacedAt = k
			}
		}
		if replacedAt >= 0 {
			g.b.Probes[replacedAt] = p
			continue
		}
		g.seen[p.Name] = true
		g.b.Probes = append(g.b.Probes, p)
	}
	return nil
}
