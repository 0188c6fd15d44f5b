package env

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// Lookup returns the value at a dot path of a state ("drafts",
// "calendar.events", "drafts.0.to"); numeric segments index arrays.
func Lookup(state map[string]any, path string) (any, bool) {
	var cur any = state
	for _, seg := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Subset reports whether got includes want: objects by their keys
// (recursively), everything else by normalised equality.
func Subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return scenario.Equal(want, got)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !Subset(wv, gv) {
			return false
		}
	}
	return true
}

// contains: a list holds an element including the needle, a string holds the
// needle as a substring, an object includes it.
func contains(hay, needle any) bool {
	switch h := hay.(type) {
	case []any:
		for _, el := range h {
			if Subset(needle, el) {
				return true
			}
		}
		return false
	case string:
		n, ok := needle.(string)
		return ok && strings.Contains(strings.ToLower(h), strings.ToLower(n))
	}
	return Subset(needle, hay)
}

// Check evaluates one success assertion on a state. The message says what
// failed, for judge reasons.
func Check(state map[string]any, a scenario.StateAssertion) (bool, string) {
	got, present := Lookup(state, a.Path)
	switch {
	case len(a.Equals) > 0:
		want, err := scenario.DecodeJSON(a.Equals)
		if err != nil {
			return false, fmt.Sprintf("%s: bad equals: %v", a.Path, err)
		}
		if (!present && want == nil) || (present && scenario.Equal(want, got)) {
			return true, ""
		}
		return false, fmt.Sprintf("%s does not equal %s", a.Path, a.Equals)
	case len(a.Contains) > 0:
		want, err := scenario.DecodeJSON(a.Contains)
		if err != nil {
			return false, fmt.Sprintf("%s: bad contains: %v", a.Path, err)
		}
		if present && contains(got, want) {
			return true, ""
		}
		return false, fmt.Sprintf("%s does not contain %s", a.Path, a.Contains)
	case len(a.NotContains) > 0:
		want, err := scenario.DecodeJSON(a.NotContains)
		if err != nil {
			return false, fmt.Sprintf("%s: bad not_contains: %v", a.Path, err)
		}
		if !present || !contains(got, want) {
			return true, ""
		}
		return false, fmt.Sprintf("%s contains %s", a.Path, a.NotContains)
	}
	return false, fmt.Sprintf("%s: assertion has no condition", a.Path)
}
