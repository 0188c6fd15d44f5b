package scenario

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// CompiledConstraint is a boundary constraint ready to check calls. Build
// them with CompileConstraints; they are read-only and safe to share.
type CompiledConstraint struct {
	C     *Constraint
	Index int // position in boundary.constraints
	// Rule is how drift matches name the constraint:
	// "boundary.constraints[i]" or "boundary.constraints[i]:ID".
	Rule string

	tools     map[string]bool
	when      map[string]Matcher // per tool, literals normalised for it
	values    []any
	value     any
	min, max  *big.Rat
	re        *regexp.Regexp
	notBefore *time.Time
	notAfter  *time.Time
	protected []protected
	protRe    []*regexp.Regexp
}

type protected struct {
	text string         // case-folded, white space collapsed
	re   *regexp.Regexp // for numbers written with separators (cards, phones)
}

// CompileConstraints compiles a scenario's boundary constraints. Problems
// name the JSON path of each bad field; a constraint with problems is left
// out of the result.
func CompileConstraints(s *Scenario) ([]*CompiledConstraint, Problems) {
	var out []*CompiledConstraint
	var ps Problems
	for i := range s.Boundary.Constraints {
		c, cps := compileConstraint(s, i)
		ps = append(ps, cps...)
		if c != nil && len(cps) == 0 { // nil: an unknown type, which the format check reports
			out = append(out, c)
		}
	}
	return out, ps
}

var constraintFields = map[ConstraintType][]string{
	ConstraintAllowed: {"values"},
	ConstraintExact:   {"value"},
	ConstraintRange:   {"min", "max"},
	ConstraintPattern: {"pattern"},
	ConstraintWindow:  {"window"},
	ConstraintCount:   {"max_calls", "per"},
	ConstraintContent: {"protected", "protected_patterns", "answer"},
}

func compileConstraint(s *Scenario, i int) (*CompiledConstraint, Problems) {
	c := &s.Boundary.Constraints[i]
	p := pathf("boundary.constraints[%d]", i)
	var ps Problems
	addf := func(path, format string, a ...any) {
		ps = append(ps, Problem{File: s.File, Path: path, Msg: fmt.Sprintf(format, a...)})
	}
	cc := &CompiledConstraint{C: c, Index: i, Rule: p, tools: map[string]bool{}, when: map[string]Matcher{}}
	if c.ID != "" {
		cc.Rule += ":" + c.ID
	}
	if !c.Type.Valid() {
		return nil, ps // the format check reports the enum
	}
	// Fields that belong to another type are mistakes, not options.
	set := map[string]bool{
		"values": len(c.Values) > 0, "value": len(c.Value) > 0, "min": c.Min != nil, "max": c.Max != nil,
		"pattern": c.Pattern != "", "window": c.Window != nil, "max_calls": c.MaxCalls != nil, "per": c.Per != "",
		"protected": len(c.Protected) > 0, "protected_patterns": len(c.ProtectedPatterns) > 0, "answer": c.Answer,
	}
	own := map[string]bool{}
	for _, f := range constraintFields[c.Type] {
		own[f] = true
	}
	for _, t := range ConstraintTypes {
		for _, f := range constraintFields[t] {
			if set[f] && !own[f] {
				addf(p+"."+f, "does not apply to %s %s constraint", article(c.Type), c.Type)
				set[f] = false
			}
		}
	}
	argTyped := c.Type != ConstraintCount && c.Type != ConstraintContent
	if len(c.Tools) == 0 && c.Type != ConstraintContent {
		addf(p+".tools", "%s %s constraint needs the tools it applies to", article(c.Type), c.Type)
	}
	for j, name := range c.Tools {
		t := s.Tool(name)
		if t == nil {
			addf(pathf("%s.tools[%d]", p, j), "unknown tool %q", name)
			continue
		}
		cc.tools[name] = true
		norm, _ := CompileNormalizers(t.Parameters) // reported at the tool
		m, err := norm.Matcher(c.When, c.Patterns)
		if err != nil {
			where, msg, _ := strings.Cut(err.Error(), ": ")
			addf(p+"."+strings.Replace(where, "args.", "when.", 1), "%s", msg)
			continue
		}
		cc.when[name] = m
		props := properties(t.Parameters)
		for k := range c.When {
			if _, ok := props[k]; !ok {
				addf(p+".when."+k, "%q has no argument %q", name, k)
			}
		}
		for k := range c.Patterns {
			if _, ok := props[k]; !ok {
				addf(p+".patterns."+k, "%q has no argument %q", name, k)
			}
		}
		for a, arg := range c.Args {
			root, _, _ := strings.Cut(arg, ".")
			if _, ok := props[root]; !ok {
				addf(pathf("%s.args[%d]", p, a), "%q has no argument %q", name, root)
			}
		}
		if c.Per != "" {
			for _, arg := range resourceArgs(c.Per) {
				if _, ok := props[arg]; !ok {
					addf(p+".per", "names argument %q, which %q does not have", arg, name)
				}
			}
		}
	}
	if argTyped && len(c.Args) == 0 {
		addf(p+".args", "%s %s constraint needs the argument paths it checks", article(c.Type), c.Type)
	}
	switch c.Type {
	case ConstraintAllowed:
		if !set["values"] {
			addf(p+".values", "an allowed constraint needs its values")
		}
		for j, raw := range c.Values {
			v, err := DecodeJSON(raw)
			if err != nil {
				addf(pathf("%s.values[%d]", p, j), "%v", err)
				continue
			}
			cc.values = append(cc.values, v)
		}
	case ConstraintExact:
		if !set["value"] {
			addf(p+".value", "an exact constraint needs its value")
		} else if v, err := DecodeJSON(c.Value); err != nil {
			addf(p+".value", "%v", err)
		} else {
			cc.value = v
		}
	case ConstraintRange:
		if !set["min"] && !set["max"] {
			addf(p, "a range constraint needs min, max or both")
		}
		if c.Min != nil {
			cc.min = new(big.Rat).SetFloat64(*c.Min)
		}
		if c.Max != nil {
			cc.max = new(big.Rat).SetFloat64(*c.Max)
		}
		if cc.min != nil && cc.max != nil && cc.min.Cmp(cc.max) > 0 {
			addf(p, "min %v is above max %v: no value can pass", *c.Min, *c.Max)
		}
	case ConstraintPattern:
		if !set["pattern"] {
			addf(p+".pattern", "a pattern constraint needs its pattern")
		} else if re, err := regexp.Compile("^(?:" + c.Pattern + ")$"); err != nil {
			addf(p+".pattern", "%v", err)
		} else {
			cc.re = re
		}
	case ConstraintWindow:
		if c.Window == nil || (c.Window.NotBefore == "" && c.Window.NotAfter == "") {
			addf(p+".window", "a window constraint needs not_before, not_after or both")
			break
		}
		if c.Window.NotBefore != "" {
			t, err := s.windowBound(c.Window.NotBefore, false)
			if err != nil {
				addf(p+".window.not_before", "%v", err)
			} else {
				cc.notBefore = &t
			}
		}
		if c.Window.NotAfter != "" {
			t, err := s.windowBound(c.Window.NotAfter, true)
			if err != nil {
				addf(p+".window.not_after", "%v", err)
			} else {
				cc.notAfter = &t
			}
		}
		if cc.notBefore != nil && cc.notAfter != nil && cc.notBefore.After(*cc.notAfter) {
			addf(p+".window", "not_before %s is after not_after %s: no value can pass", c.Window.NotBefore, c.Window.NotAfter)
		}
	case ConstraintCount:
		if c.MaxCalls == nil {
			addf(p+".max_calls", "a count constraint needs max_calls")
		}
	case ConstraintContent:
		if !set["protected"] && !set["protected_patterns"] {
			addf(p, "a content constraint needs protected strings or protected_patterns")
		}
		for j, text := range c.Protected {
			pr := protected{text: Normalize(NormCasefold, text)}
			if strings.TrimSpace(text) == "" {
				addf(pathf("%s.protected[%d]", p, j), "is blank")
				continue
			}
			pr.re = digitsPattern(text)
			cc.protected = append(cc.protected, pr)
		}
		for j, pat := range c.ProtectedPatterns {
			re, err := regexp.Compile("(?i)" + pat)
			if err != nil {
				addf(pathf("%s.protected_patterns[%d]", p, j), "%v", err)
				continue
			}
			cc.protRe = append(cc.protRe, re)
		}
		if len(c.Tools) == 0 {
			for _, t := range s.Tools {
				if t.Writes {
					cc.tools[t.Name] = true
					cc.when[t.Name] = Matcher{}
				}
			}
			if len(cc.tools) == 0 && !c.Answer {
				addf(p+".tools", "applies to nothing: name its tools, mark writing tools with \"writes\": true, or set \"answer\": true")
			}
		}
	}
	return cc, ps
}

// digitsPattern matches a number written with any separators ("4111 1111
// 1111 1111", "+44 20-7946-0958") when text is one: digits, an optional
// leading "+", and separators only, at least six digits.
func digitsPattern(text string) *regexp.Regexp {
	text = strings.TrimSpace(text)
	var digits []string
	for i, r := range text {
		switch {
		case r >= '0' && r <= '9':
			digits = append(digits, string(r))
		case r == '+' && i == 0:
		case strings.ContainsRune(" -./()", r):
		default:
			return nil
		}
	}
	if len(digits) < 6 {
		return nil
	}
	return regexp.MustCompile(`(?:^|[^0-9])` + strings.Join(digits, `[\s.\-/()]*`) + `(?:$|[^0-9])`)
}

var relBound = regexp.MustCompile(`^now(?:([+-])(P.+))?$`)

// windowBound reads one window bound. A date bound stands for the start of
// its day (not_before) or the end of it (not_after), in the offset of Now
// (UTC without Now).
func (s *Scenario) windowBound(b string, end bool) (time.Time, error) {
	b = strings.TrimSpace(b)
	if m := relBound.FindStringSubmatch(b); m != nil {
		if s.Now == "" {
			return time.Time{}, fmt.Errorf("%q is relative to now, but the scenario declares no \"now\"", b)
		}
		now, ok := ParseInstant(s.Now)
		if !ok {
			return time.Time{}, fmt.Errorf("the scenario's \"now\" %q is not an RFC 3339 instant", s.Now)
		}
		if m[2] == "" {
			return now, nil
		}
		d, err := ParseISODuration(m[2])
		if err != nil {
			return time.Time{}, err
		}
		if m[1] == "-" {
			return addDuration(now, d, -1), nil
		}
		return addDuration(now, d, 1), nil
	}
	if t, ok := ParseInstant(b); ok {
		return t, nil
	}
	if d, ok := parseDate(b); ok && len(b) == 10 {
		start, _ := time.ParseInLocation("2006-01-02", d, s.location())
		if end {
			return start.AddDate(0, 0, 1).Add(-time.Nanosecond), nil
		}
		return start, nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 instant, a YYYY-MM-DD date or now[+-duration]", b)
}

// location is the zone that dates are read in: Now's offset, else UTC.
func (s *Scenario) location() *time.Location {
	if t, ok := ParseInstant(s.Now); ok {
		return t.Location()
	}
	return time.UTC
}

// ISODuration is an ISO 8601 duration of calendar parts and clock parts.
type ISODuration struct {
	Years, Months, Days int
	Clock               time.Duration
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)

// ParseISODuration reads PnYnMnWnDTnHnMnS (any part may be absent, at least
// one present).
func ParseISODuration(s string) (ISODuration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return ISODuration{}, fmt.Errorf("%q is not an ISO 8601 duration (e.g. P14D, PT2H, P1M)", s)
	}
	n := func(i int) int {
		v, _ := strconv.Atoi(m[i])
		return v
	}
	return ISODuration{
		Years: n(1), Months: n(2), Days: 7*n(3) + n(4),
		Clock: time.Duration(n(5))*time.Hour + time.Duration(n(6))*time.Minute + time.Duration(n(7))*time.Second,
	}, nil
}

func addDuration(t time.Time, d ISODuration, sign int) time.Time {
	return t.AddDate(sign*d.Years, sign*d.Months, sign*d.Days).Add(time.Duration(sign) * d.Clock)
}

// Applies reports whether the constraint covers a call of tool with these
// (normalised) arguments.
func (cc *CompiledConstraint) Applies(tool string, args map[string]any) bool {
	if !cc.tools[tool] {
		return false
	}
	m, ok := cc.when[tool]
	return !ok || m.Match(args)
}

// Covers reports whether the constraint names the tool.
func (cc *CompiledConstraint) Covers(tool string) bool { return cc.tools[tool] }

// ValuesAt returns the values at a dot path of the arguments. A path
// through a list continues into each element; a list at the end gives its
// elements. An absent path gives nothing.
func ValuesAt(v any, path string) []any {
	var buf1, buf2 [8]any
	cur, next := append(buf1[:0], v), buf2[:0]
	for rest, more := path, true; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, ".")
		next = next[:0]
		for _, x := range cur {
			next = appendStep(next, x, seg)
		}
		cur, next = next, cur
	}
	var out []any
	for _, x := range cur {
		if list, ok := x.([]any); ok {
			out = append(out, list...)
		} else {
			out = append(out, x)
		}
	}
	return out
}

// ArgBreaches checks one call's normalised arguments against an argument
// constraint (allowed, exact, range, pattern, window) or a content rule,
// returning one detail per breaking value. norm is the tool's normalisers.
// Count constraints need the episode's history: see drift.
func (cc *CompiledConstraint) ArgBreaches(norm Normalizers, args map[string]any) []string {
	c := cc.C
	var out []string
	if c.Type == ConstraintContent {
		var texts []string
		if len(c.Args) == 0 {
			texts = stringLeaves(args, nil)
		} else {
			for _, path := range c.Args {
				for _, v := range ValuesAt(args, path) {
					texts = stringLeaves(v, texts)
				}
			}
		}
		for _, t := range texts {
			out = append(out, cc.ContentBreaches(t)...)
		}
		return out
	}
	for _, path := range c.Args {
		for _, v := range ValuesAt(args, path) {
			if d := cc.valueBreach(norm, path, v); d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

func (cc *CompiledConstraint) valueBreach(norm Normalizers, path string, v any) string {
	c := cc.C
	switch c.Type {
	case ConstraintAllowed:
		for _, want := range cc.values {
			if equal(norm.Value(path, want), v, !norm.Ordered(path)) {
				return ""
			}
		}
		return fmt.Sprintf("%s = %s is not an allowed value", path, valueText(v))
	case ConstraintExact:
		if equal(norm.Value(path, cc.value), v, !norm.Ordered(path)) {
			return ""
		}
		return fmt.Sprintf("%s = %s differs from the policy value %s", path, valueText(v), valueText(cc.value))
	case ConstraintRange:
		r, ok := numberOf(v)
		if !ok {
			return fmt.Sprintf("%s = %s is not a number", path, valueText(v))
		}
		if cc.min != nil && r.Cmp(cc.min) < 0 {
			return fmt.Sprintf("%s = %s is below the minimum %v", path, valueText(v), *c.Min)
		}
		if cc.max != nil && r.Cmp(cc.max) > 0 {
			return fmt.Sprintf("%s = %s is above the maximum %v", path, valueText(v), *c.Max)
		}
	case ConstraintPattern:
		if !cc.re.MatchString(valueText(v)) {
			return fmt.Sprintf("%s = %s does not match %s", path, valueText(v), c.Pattern)
		}
	case ConstraintWindow:
		text, _ := v.(string)
		lo, hi, ok := cc.span(text)
		if !ok {
			return fmt.Sprintf("%s = %s is not a date or an instant with an offset", path, valueText(v))
		}
		if cc.notAfter != nil && lo.After(*cc.notAfter) {
			return fmt.Sprintf("%s = %s is after %s", path, text, c.Window.NotAfter)
		}
		if cc.notBefore != nil && hi.Before(*cc.notBefore) {
			return fmt.Sprintf("%s = %s is before %s", path, text, c.Window.NotBefore)
		}
	}
	return ""
}

// span is the interval a value names: an instant, or a whole day for a
// date (read in the zone of the window's bounds).
func (cc *CompiledConstraint) span(text string) (time.Time, time.Time, bool) {
	if t, ok := ParseInstant(text); ok {
		return t, t, true
	}
	if d, ok := parseDate(strings.TrimSpace(text)); ok {
		loc := time.UTC
		if cc.notBefore != nil {
			loc = cc.notBefore.Location()
		} else if cc.notAfter != nil {
			loc = cc.notAfter.Location()
		}
		start, _ := time.ParseInLocation("2006-01-02", d, loc)
		return start, start.AddDate(0, 0, 1).Add(-time.Nanosecond), true
	}
	return time.Time{}, time.Time{}, false
}

func numberOf(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		return exactNumber(x)
	case float64:
		return new(big.Rat).SetFloat64(x), true
	case string:
		return exactNumber(json.Number(strings.TrimSpace(x)))
	}
	return nil, false
}

// ContentBreaches returns what of a content rule one text breaks.
func (cc *CompiledConstraint) ContentBreaches(text string) []string {
	var out []string
	folded := Normalize(NormCasefold, text)
	for i, p := range cc.protected {
		if strings.Contains(folded, p.text) || (p.re != nil && p.re.MatchString(text)) {
			out = append(out, fmt.Sprintf("contains protected %q", cc.C.Protected[i]))
		}
	}
	for i, re := range cc.protRe {
		if re.MatchString(text) {
			out = append(out, fmt.Sprintf("matches protected pattern %q", cc.C.ProtectedPatterns[i]))
		}
	}
	return out
}

// stringLeaves appends every string inside a decoded JSON value.
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

func article(t ConstraintType) string {
	if t == ConstraintAllowed || t == ConstraintExact {
		return "an"
	}
	return "a"
}
