package scenario

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The environment writes normalised arguments into the state ("$args"), so
// a success assertion whose expected value is not in that canonical form
// can never hold: "Dana.Kim@Example.org" is never found where the state
// holds "dana.kim@example.org", and every compliant run is labelled a
// failure (or a not_contains passes for every over-action). canonical
// reports such values, naming the form to write.

// stateWriter is a tool that writes its normalised arguments, or one of
// them (arg), at a state path.
type stateWriter struct {
	tool string
	norm Normalizers
	arg  string // "" for the whole arguments object
}

// stateWriters maps the state paths that set and append effects write
// "$args" or "$args.NAME" to, to the tools writing them.
func (v *validator) stateWriters() map[string][]stateWriter {
	out := map[string][]stateWriter{}
	for _, t := range v.s.Tools {
		n, err := CompileNormalizers(t.Parameters)
		if err != nil {
			continue // reported by the normaliser check
		}
		for _, r := range t.Responses {
			if r.Effects == nil {
				continue
			}
			for _, m := range []map[string]json.RawMessage{r.Effects.Set, r.Effects.Append} {
				for path, raw := range m {
					var val string
					if json.Unmarshal(raw, &val) != nil {
						continue
					}
					w := stateWriter{tool: t.Name, norm: n}
					switch {
					case val == "$args":
					case strings.HasPrefix(val, "$args."):
						w.arg = strings.TrimPrefix(val, "$args.")
					default:
						continue
					}
					out[path] = append(out[path], w)
				}
			}
		}
	}
	return out
}

// canonical checks the expected values of the state assertions on paths
// that tools write their arguments to.
func (v *validator) canonical() {
	writers := v.stateWriters()
	var initial map[string]any
	if x, err := DecodeJSON(v.s.State); err == nil {
		initial, _ = x.(map[string]any)
	}
	for i, a := range v.s.Success.State {
		ws := writers[a.Path]
		if len(ws) == 0 {
			continue
		}
		// The initial state is written as the author wrote it: an
		// expected value found there can match what was there already.
		seeded := map[string]bool{}
		if x, ok := LookupPath(initial, a.Path); ok {
			for _, leaf := range Leaves(x) {
				if s, ok := leaf.(string); ok {
					seeded[s] = true
				}
			}
		}
		fields := map[string]json.RawMessage{"contains": a.Contains, "not_contains": a.NotContains, "equals": a.Equals, "equals_set": a.EqualsSet, "where": a.Where}
		names := make([]string, 0, len(fields))
		for f := range fields {
			names = append(names, f)
		}
		sort.Strings(names)
		for _, f := range names {
			raw := fields[f]
			if len(raw) == 0 {
				continue
			}
			x, err := DecodeJSON(raw)
			if err != nil {
				continue // reported by the assertion checks
			}
			p := pathf("success.state[%d].%s", i, f)
			if list, ok := x.([]any); ok && f != "contains" && f != "not_contains" && f != "where" {
				for k, item := range list { // equals / equals_set: the items
					v.canonicalItem(pathf("%s[%d]", p, k), item, ws, seeded)
				}
				continue
			}
			v.canonicalItem(p, x, ws, seeded)
		}
	}
}

// canonicalItem reports the first string of an expected item that every
// writer's normaliser would change (unless the initial state holds it as
// written: seeded).
func (v *validator) canonicalItem(path string, item any, ws []stateWriter, seeded map[string]bool) {
	var first string
	var from, to any
	changed := 0
	for _, w := range ws {
		canon := w.norm.Value(w.arg, item)
		p, f, t, ok := firstChange(path, item, canon)
		if !ok {
			return // one writer writes it as it stands
		}
		if s, isStr := f.(string); isStr && seeded[s] {
			return
		}
		if changed == 0 {
			first, from, to = p, f, t
		}
		changed++
	}
	if changed > 0 {
		v.addf(first, "%s is not in the form the state holds it: the environment normalises the arguments that %s writes here, so this can never match; write %s", jsonText(from), writersOf(ws), jsonText(to))
	}
}

// firstChange finds the first leaf where canon differs from orig.
func firstChange(path string, orig, canon any) (string, any, any, bool) {
	switch o := orig.(type) {
	case string:
		if c, ok := canon.(string); ok && c != o {
			return path, o, c, true
		}
	case []any:
		c, _ := canon.([]any)
		for i := range o {
			if i < len(c) {
				if p, f, t, ok := firstChange(pathf("%s[%d]", path, i), o[i], c[i]); ok {
					return p, f, t, true
				}
			}
		}
	case map[string]any:
		c, _ := canon.(map[string]any)
		for _, k := range sortedKeys(o) {
			if p, f, t, ok := firstChange(path+"."+k, o[k], c[k]); ok {
				return p, f, t, true
			}
		}
	}
	return "", nil, nil, false
}

func writersOf(ws []stateWriter) string {
	seen := map[string]bool{}
	var names []string
	for _, w := range ws {
		if !seen[w.tool] {
			seen[w.tool] = true
			names = append(names, fmt.Sprintf("%q", w.tool))
		}
	}
	return strings.Join(names, ", ")
}

func jsonText(x any) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// dataHint names the boundary.data entry that differs from a resource only
// in case or surrounding white space: the resource is rendered from the
// normalised arguments, so the entry must be written in that form.
func (v *validator) dataHint(res string) string {
	for i, d := range v.s.Boundary.Data {
		if d != res && strings.EqualFold(strings.TrimSpace(d), res) {
			return fmt.Sprintf(" (boundary.data[%d] is %q: resources are rendered from the normalised arguments, so write %q)", i, d, res)
		}
	}
	return ""
}
