package scenario

import (
	"encoding/json"
	"strings"
)

// The path-argument leak check (format v3). The distinctive-value check
// (leaks) misses what a compliant or drifting call writes when the value
// is short or plain: an amount of 85, a table, domain or bucket name in
// lower case, an account "j.moreau". A parameter example or default equal
// to such an argument hands the agent the answer (the discovery call becomes
// skippable) or the shortcut; examples must come from a decoy universe.

// pathValue is an argument value a required call or a violation writes.
type pathValue struct {
	val   any    // string or json.Number
	text  string // as text, trimmed
	where string // the JSON path of the argument
}

// pathValues are the literal string and number arguments of the required
// calls and the violations (leaves of objects and lists too), less those
// the user gives up front (instruction, context) and the tools' enum
// members (part of the interface).
func (v *validator) pathValues() []pathValue {
	told := []string{v.s.Instruction, v.s.Context}
	enums := v.enumMembers()
	seen := map[string]bool{}
	var out []pathValue
	add := func(x any, where string) {
		var text string
		switch y := x.(type) {
		case string:
			text = strings.TrimSpace(y)
		case json.Number:
			text = numberText(y)
		default:
			return
		}
		if text == "" || seen[strings.ToLower(text)] {
			return
		}
		for _, e := range enums {
			if Equal(e, x) {
				return
			}
		}
		for _, c := range told {
			if containsWord(c, text) {
				return
			}
		}
		seen[strings.ToLower(text)] = true
		out = append(out, pathValue{val: x, text: text, where: where})
	}
	walk := func(args map[string]json.RawMessage, path string) {
		for _, k := range sortedKeys(args) {
			if x, err := DecodeJSON(args[k]); err == nil {
				walkLeaves(x, path+".args."+k, add)
			}
		}
	}
	for i, c := range v.s.RequiredCalls {
		walk(c.Args, pathf("required_calls[%d]", i))
	}
	for i, c := range v.s.Violations {
		walk(c.Args, pathf("violations[%d]", i))
	}
	return out
}

// pathLeaks reports a parameter example or default equal to an argument of
// the compliant path or of a violation, whatever its length or case, and an
// identifier-shaped argument (a digit, '.', '_', '-' or '@' in it) named in
// a tool or parameter description.
func (v *validator) pathLeaks() {
	vals := v.pathValues()
	if len(vals) == 0 {
		return
	}
	for _, e := range v.exposures() {
		if e.path == "system" || v.leaked[e.path] {
			continue // the operator's prompt, or reported already by the distinctive-value check
		}
		for _, pv := range vals {
			if !e.text {
				if sameValue(pv.val, e.val) {
					v.addf(e.path, "gives away %q, the argument at %s: an example or default the model sees must come from a decoy universe, never hold a value of the compliant path or of a violation", pv.text, pv.where)
				}
				continue
			}
			if s, _ := e.val.(string); identifierShaped(pv.text) && containsWord(s, pv.text) {
				v.addf(e.path, "names %q, the argument at %s: a description the model sees must not hand over a value of the compliant path or of a violation", pv.text, pv.where)
			}
		}
	}
}

// sameValue compares an argument with an example or default as the model
// would read them: numbers by value, text without case or surrounding space,
// and a number against its own text ("85" and 85).
func sameValue(a, b any) bool {
	if Equal(a, b) {
		return true
	}
	ta, oka := leafText(a)
	tb, okb := leafText(b)
	return oka && okb && ta != "" && strings.EqualFold(ta, tb)
}

func leafText(x any) (string, bool) {
	switch y := x.(type) {
	case string:
		return strings.TrimSpace(y), true
	case json.Number:
		return numberText(y), true
	}
	return "", false
}

// identifierShaped reports whether a value reads as an identifier (a
// letter with a digit, '.', '_', '-' or '@') or an amount with decimals,
// rather than a word or a bare count a description may use by chance (a
// range's bounds: "kept for 1 to 365 days").
func identifierShaped(s string) bool {
	if len(s) < 2 {
		return false
	}
	letter := strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0
	if letter {
		return strings.ContainsAny(s, "0123456789._-@")
	}
	return strings.Contains(s, ".") && strings.ContainsAny(s, "0123456789")
}
