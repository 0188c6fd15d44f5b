package env

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// Lookup returns the value at a dot path of a state ("drafts",
// "calendar.events", "drafts.0.to"); numeric segments index arrays.
func Lookup(state map[string]any, path string) (any, bool) {
	return scenario.LookupPath(state, path)
}

// Subset reports whether got includes want: objects by their keys
// (recursively), everything else by normalised equality, lists in any
// order (scenario.EqualUnordered).
func Subset(want, got any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return scenario.EqualUnordered(want, got)
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
	sc := compileCheck(a)
	return sc.check(state)
}

// stateCheck is a success assertion with the JSON values its condition
// reads decoded once (want: equals, contains, not_contains or equals_set;
// where: the items' filter of count and text), or the decoding's error.
type stateCheck struct {
	a     scenario.StateAssertion
	want  any
	where any
	err   error
}

// compileCheck decodes what Check would decode for a, in the same order.
func compileCheck(a scenario.StateAssertion) stateCheck {
	sc := stateCheck{a: a}
	switch {
	case len(a.Equals) > 0:
		sc.want, sc.err = scenario.DecodeJSON(a.Equals)
	case len(a.Contains) > 0:
		sc.want, sc.err = scenario.DecodeJSON(a.Contains)
	case len(a.NotContains) > 0:
		sc.want, sc.err = scenario.DecodeJSON(a.NotContains)
	case len(a.EqualsSet) > 0:
		sc.want, sc.err = scenario.DecodeJSON(a.EqualsSet)
	case a.Count != nil || a.Text != nil || a.Duration != nil:
		if len(a.Where) > 0 {
			sc.where, sc.err = scenario.DecodeJSON(a.Where)
		}
	}
	return sc
}

func (sc *stateCheck) check(state map[string]any) (bool, string) {
	a := sc.a
	got, present := Lookup(state, a.Path)
	switch {
	case len(a.Equals) > 0:
		if sc.err != nil {
			return false, fmt.Sprintf("%s: bad equals: %v", a.Path, sc.err)
		}
		want := sc.want
		if (!present && want == nil) || (present && scenario.Equal(want, got)) {
			return true, ""
		}
		return false, fmt.Sprintf("%s does not equal %s", a.Path, a.Equals)
	case len(a.Contains) > 0:
		if sc.err != nil {
			return false, fmt.Sprintf("%s: bad contains: %v", a.Path, sc.err)
		}
		if present && contains(got, sc.want) {
			return true, ""
		}
		return false, fmt.Sprintf("%s does not contain %s", a.Path, a.Contains)
	case len(a.NotContains) > 0:
		if sc.err != nil {
			return false, fmt.Sprintf("%s: bad not_contains: %v", a.Path, sc.err)
		}
		if !present || !contains(got, sc.want) {
			return true, ""
		}
		return false, fmt.Sprintf("%s contains %s", a.Path, a.NotContains)
	case len(a.EqualsSet) > 0:
		return sc.checkSet(state)
	case a.Count != nil:
		items, err := sc.selected(state)
		if err != nil {
			return false, err.Error()
		}
		if ok, why := CountHolds(*a.Count, len(items)); !ok {
			return false, fmt.Sprintf("%s%s: %s", a.Path, whereText(a), why)
		}
		return true, ""
	case a.Text != nil:
		items, err := sc.selected(state)
		if err != nil {
			return false, err.Error()
		}
		texts := make([]string, len(items))
		for i, it := range items {
			texts[i] = strings.Join(stringLeaves(it, nil), "\n")
		}
		if why := CheckTexts(texts, textRules{a.Text.Contains, a.Text.NotContains, a.Text.AnyOf, a.Text.Regex, a.Text.NotRegex}); len(why) > 0 {
			return false, fmt.Sprintf("%s%s: %s", a.Path, whereText(a), strings.Join(why, ", "))
		}
		return true, ""
	}
	if a.Duration != nil {
		return sc.checkDuration(state)
	}
	return false, fmt.Sprintf("%s: assertion has no condition", a.Path)
}

// checkDuration: every selected item (at least one) spans an interval of
// the stated length.
func (sc *stateCheck) checkDuration(state map[string]any) (bool, string) {
	a := sc.a
	b, err := a.Duration.Bounds()
	if err != nil {
		return false, fmt.Sprintf("%s: bad duration: %v", a.Path, err)
	}
	items, err := sc.selected(state)
	if err != nil {
		return false, err.Error()
	}
	if len(items) == 0 {
		return false, fmt.Sprintf("%s%s: no item to span an interval", a.Path, whereText(a))
	}
	for _, it := range items {
		d, why := a.Duration.Span(it)
		if why != "" {
			return false, fmt.Sprintf("%s%s: an item %s", a.Path, whereText(a), why)
		}
		if ok, why := b.Holds(d); !ok {
			return false, fmt.Sprintf("%s%s: %s to %s %s", a.Path, whereText(a), a.Duration.Start, a.Duration.End, why)
		}
	}
	return true, ""
}

func whereText(a scenario.StateAssertion) string {
	if len(a.Where) == 0 {
		return ""
	}
	return " where " + string(a.Where)
}

// selected is the items at an assertion's path (a path through a list
// continues into each element; a list at the end gives its elements),
// narrowed to those including Where.
func (sc *stateCheck) selected(state map[string]any) ([]any, error) {
	a := sc.a
	items := scenario.ValuesAt(state, a.Path)
	if len(a.Where) == 0 {
		return items, nil
	}
	if sc.err != nil {
		return nil, fmt.Errorf("%s: bad where: %v", a.Path, sc.err)
	}
	var out []any
	for _, it := range items {
		if Subset(sc.where, it) {
			out = append(out, it)
		}
	}
	return out, nil
}

// CountHolds checks a number against a count bound.
func CountHolds(c scenario.Count, n int) (bool, string) {
	switch {
	case c.Exactly != nil && n != *c.Exactly:
		return false, fmt.Sprintf("%d, want exactly %d", n, *c.Exactly)
	case c.AtLeast != nil && n < *c.AtLeast:
		return false, fmt.Sprintf("%d, want at least %d", n, *c.AtLeast)
	case c.AtMost != nil && n > *c.AtMost:
		return false, fmt.Sprintf("%d, want at most %d", n, *c.AtMost)
	}
	return true, ""
}

// checkSet: the list at the path holds exactly the expected items in any
// order, each item including its expected value ("no extra effects").
func (sc *stateCheck) checkSet(state map[string]any) (bool, string) {
	a := sc.a
	if sc.err != nil {
		return false, fmt.Sprintf("%s: bad equals_set: %v", a.Path, sc.err)
	}
	wl, _ := sc.want.([]any)
	got := scenario.ValuesAt(state, a.Path)
	if len(got) != len(wl) {
		return false, fmt.Sprintf("%s holds %d items, want exactly %d (%s)", a.Path, len(got), len(wl), a.EqualsSet)
	}
	// Bipartite matching of expected to actual items (augmenting paths).
	owner := make([]int, len(got))
	for i := range owner {
		owner[i] = -1
	}
	var try func(w int, seen []bool) bool
	try = func(w int, seen []bool) bool {
		for g := range got {
			if seen[g] || !Subset(wl[w], got[g]) {
				continue
			}
			seen[g] = true
			if owner[g] < 0 || try(owner[g], seen) {
				owner[g] = w
				return true
			}
		}
		return false
	}
	for w := range wl {
		if !try(w, make([]bool, len(got))) {
			b, _ := json.Marshal(wl[w])
			return false, fmt.Sprintf("%s has no item matching %s among exactly the expected set", a.Path, b)
		}
	}
	return true, ""
}

// textRules are free-text checks: positive ones (contains, any_of, regex)
// need one text passing them all; negative ones must hold for every text.
type textRules struct {
	contains, notContains []string
	anyOf                 [][]string
	regex, notRegex       []string
}

// CheckAnswer applies answer assertions to the final answer; it returns
// what failed, nothing when they hold.
func CheckAnswer(answer string, a *scenario.AnswerAssertions) []string {
	if a == nil {
		return nil
	}
	return CheckTexts([]string{answer}, textRules{a.Contains, a.NotContains, a.AnyOf, a.Regex, a.NotRegex})
}

// CheckTexts applies text rules to texts, case-insensitively with white
// space collapsed, and returns what failed: the positive checks of the
// text that came closest, then every negative check some text breaks.
func CheckTexts(texts []string, r textRules) []string {
	folded := make([]string, len(texts))
	for i, t := range texts {
		folded[i] = scenario.Normalize(scenario.NormCasefold, t)
	}
	var out []string
	if len(r.contains) > 0 || len(r.anyOf) > 0 || len(r.regex) > 0 {
		var best []string
		for i, t := range folded {
			why := positive(t, r)
			if i == 0 || len(why) < len(best) {
				best = why
			}
		}
		if len(folded) == 0 {
			best = []string{"no text to check"}
		}
		out = append(out, best...)
	}
	for _, n := range r.notContains {
		for _, t := range folded {
			if strings.Contains(t, foldNeedle(n)) {
				out = append(out, fmt.Sprintf("contains %q", n))
				break
			}
		}
	}
	for _, p := range r.notRegex {
		re, err := compileText(p)
		for _, t := range folded {
			if err != nil || re.MatchString(t) {
				out = append(out, fmt.Sprintf("matches %q", p))
				break
			}
		}
	}
	return out
}

func positive(t string, r textRules) []string {
	var out []string
	for _, c := range r.contains {
		if !strings.Contains(t, foldNeedle(c)) {
			out = append(out, fmt.Sprintf("lacks %q", c))
		}
	}
	for _, group := range r.anyOf {
		hit := false
		for _, alt := range group {
			hit = hit || strings.Contains(t, foldNeedle(alt))
		}
		if !hit {
			out = append(out, fmt.Sprintf("lacks any of %q", group))
		}
	}
	for _, p := range r.regex {
		re, err := compileText(p)
		if err != nil || !re.MatchString(t) {
			out = append(out, fmt.Sprintf("does not match %q", p))
		}
	}
	return out
}

var foldedNeedles sync.Map // needle → its casefold form

// foldNeedle is the casefold form of a scenario's text needle, computed
// once (needles come from scenarios; the texts they are looked for in are
// folded per check).
func foldNeedle(n string) string {
	if f, ok := foldedNeedles.Load(n); ok {
		return f.(string)
	}
	f := scenario.Normalize(scenario.NormCasefold, n)
	foldedNeedles.Store(n, f)
	return f
}

var textRegexps sync.Map // pattern → *regexp.Regexp

// compileText compiles a text pattern case-insensitively, once.
func compileText(p string) (*regexp.Regexp, error) {
	if re, ok := textRegexps.Load(p); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile("(?i)" + p)
	if err != nil {
		return nil, err
	}
	textRegexps.Store(p, re)
	return re, nil
}

func stringLeaves(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = stringLeaves(e, out)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			out = stringLeaves(x[k], out)
		}
	}
	return out
}
