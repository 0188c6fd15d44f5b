package scenario

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// timePairEnds maps the word that opens a time pair to the words that
// close it: start/end, from/to, starts_at/ends_at, check_in/check_out,
// not_before/not_after, valid_from/valid_until, date_from/date_to, ...
var timePairEnds = map[string][]string{
	"start": {"end", "finish", "stop"}, "starts": {"ends"}, "begin": {"end", "finish"}, "begins": {"ends"},
	"from": {"to", "until", "till"}, "since": {"until"}, "before": {"after"}, "opens": {"closes"}, "open": {"close"},
	"in": {"out"}, // check_in/check_out only: see timePairs
}

// timeFormatPair is two sibling properties whose names make a time pair.
type timeFormatPair struct{ open, close string }

// timePairs returns the pairs among a properties object's names: two
// names that differ in one "_"-separated word, an opening word
// (timePairEnds) in one and a closing word for it in the other. "in"/"out"
// pair only after "check" (check_in, check_out; not opt_in).
func timePairs(names []string) []timeFormatPair {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	var out []timeFormatPair
	for _, n := range names {
		words := strings.Split(n, "_")
		for i, w := range words {
			if w == "in" && (i == 0 || words[i-1] != "check") {
				continue
			}
			for _, e := range timePairEnds[w] {
				other := strings.Join(append(append(append([]string{}, words[:i]...), e), words[i+1:]...), "_")
				if has[other] {
					out = append(out, timeFormatPair{n, other})
				}
			}
		}
	}
	return out
}

// TimeFormatMismatches reports the sibling time fields of a tool's
// parameters that declare different formats: each pair of names that make
// a time pair (timePairs), at least one of which declares a time format,
// where the other declares another format or none. Each problem is the
// schema path of the property that should change ("parameters.properties.
// end", nested properties and items included) and what to write. A
// property that declares a non-time type ("integer") or format ("email")
// is no time field and pairs with nothing.
func TimeFormatMismatches(params json.RawMessage) []Problem {
	var root map[string]any
	if json.Unmarshal(params, &root) != nil {
		return nil // the schema check reports it
	}
	var out []Problem
	var walk func(schema map[string]any, path string)
	walk = func(schema map[string]any, path string) {
		props, _ := schema["properties"].(map[string]any)
		names := sortedKeys(props)
		for _, p := range timePairs(names) {
			a, _ := props[p.open].(map[string]any)
			b, _ := props[p.close].(map[string]any)
			if a == nil || b == nil || !textField(a) || !textField(b) {
				continue
			}
			fa, _ := a["format"].(string)
			fb, _ := b["format"].(string)
			if fa == fb || (!IsTimeFormat(fa) && !IsTimeFormat(fb)) {
				continue
			}
			// Report the side without a time format; with two time
			// formats, the closing side.
			bad, badF, good, goodF := p.close, fb, p.open, fa
			if !IsTimeFormat(fa) {
				bad, badF, good, goodF = p.open, fa, p.close, fb
			}
			msg := fmt.Sprintf("declares no format, but its time pair %q declares %q: add \"format\": %q, so that both read times alike (without it, a correct value written in another offset or in UTC fails, and a local time with no offset is not refused)", good, goodF, goodF)
			if IsTimeFormat(badF) {
				msg = fmt.Sprintf("declares \"format\": %q, but its time pair %q declares %q: give both the same format (\"date\" for days, \"date-time\" for instants with an offset)", badF, good, goodF)
			}
			out = append(out, Problem{Path: path + ".properties." + bad, Msg: msg})
		}
		for _, k := range names {
			if sub, ok := props[k].(map[string]any); ok {
				walk(sub, path+".properties."+k)
				if items, ok := sub["items"].(map[string]any); ok {
					walk(items, path+".properties."+k+".items")
				}
			}
		}
	}
	walk(root, "parameters")
	return out
}

// textField reports whether a property schema can hold a time: a string
// (or no type) with a time format or none.
func textField(p map[string]any) bool {
	switch t := p["type"].(type) {
	case nil:
	case string:
		if t != "string" {
			return false
		}
	case []any:
		if !slices.Contains(t, any("string")) {
			return false
		}
	default:
		return false
	}
	f, ok := p["format"].(string)
	return !ok || IsTimeFormat(f)
}
