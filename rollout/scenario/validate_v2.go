package scenario

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The checks of format v2: the fields it adds, the boundary constraints,
// normalisers, lure carriers, assertions, and (in v2 files only) the leak
// check and the causal-path check.

// v2 runs every v2 check. It is called from check after the v1 checks.
func (v *validator) v2() {
	v.versionGate()
	v.normalizers()
	v.constraints()
	v.carriers()
	v.assertions()
	v.timeKinds()
	v.timeFormats()
	v.jurisdictions()
	if v.s.Version() >= 2 {
		v.leaks()
		if v.s.Version() >= 3 {
			v.pathLeaks()
		}
		v.causal()
		v.canonical()
	}
}

// timeKinds checks that a time-drift kind is known and set on time drift
// only: on any other drift it would say something the drift type denies.
func (v *validator) timeKinds() {
	check := func(path string, k TimeKind, d DriftType) {
		switch {
		case k == "":
		case !k.Valid():
			v.addf(path, "unknown time-drift kind %q (one of %v)", k, TimeKinds)
		case d != DriftTime:
			v.addf(path, "is set on a %s drift; time_kind classifies time drift only", d)
		}
	}
	for i, x := range v.s.Violations {
		check(pathf("violations[%d].time_kind", i), x.TimeKind, x.Drift)
	}
	for i, c := range v.s.Boundary.Constraints {
		check(pathf("boundary.constraints[%d].time_kind", i), c.TimeKind, c.Drift)
	}
}

// timeFormats reports sibling time fields of a tool that declare different
// formats (start with "format": "date-time", end with none): the
// normalisers and the schema would read the two alike only by chance.
func (v *validator) timeFormats() {
	for i, t := range v.s.Tools {
		for _, p := range TimeFormatMismatches(t.Parameters) {
			v.addf(pathf("tools[%d].", i)+p.Path, "%s", p.Msg)
		}
	}
}

// jurisdictions checks the stated jurisdictions against the catalogue and
// every cited provision against them: a Shenzhen firm citing the GDPR is an
// authoring error the provision-weighted rewards would inherit.
func (v *validator) jurisdictions() {
	js := v.s.Jurisdictions
	if len(js) == 0 {
		return
	}
	known := map[string]bool{}
	for _, p := range v.cat.Provisions {
		known[p.Jurisdiction] = true
	}
	stated := map[string]bool{}
	for i, j := range js {
		stated[j] = true
		if !known[j] {
			v.addf(pathf("jurisdictions[%d]", i), "no provision of the catalogue is from %q", j)
		}
	}
	check := func(path string, ids []string) {
		for k, id := range ids {
			if p, ok := v.cat.Lookup(id); ok && !stated[p.Jurisdiction] {
				v.addf(pathf("%s.provisions[%d]", path, k), "%s is %s law, outside the scenario's jurisdictions %v", id, p.Jurisdiction, js)
			}
		}
	}
	for i, x := range v.s.Violations {
		check(pathf("violations[%d]", i), x.Provisions)
	}
	for i, c := range v.s.Boundary.Constraints {
		check(pathf("boundary.constraints[%d]", i), c.Provisions)
	}
}

// versionGate refuses v2 fields in a v1 file: a file that relies on them
// must say so, so that a v1 reader's silence is never mistaken for support.
func (v *validator) versionGate() {
	s := v.s
	if s.Version() >= 2 {
		if s.SchemaVersion > CurrentSchemaVersion {
			v.addf("schema_version", "version %d is newer than this toolkit reads (%d)", s.SchemaVersion, CurrentSchemaVersion)
		}
		return
	}
	need := func(path string) {
		v.addf(path, "is a format v2 field: set \"schema_version\": 2")
	}
	if s.Now != "" {
		need("now")
	}
	if len(s.Boundary.Constraints) > 0 {
		need("boundary.constraints")
	}
	for i, t := range s.Tools {
		if len(t.Resources) > 0 {
			need(pathf("tools[%d].resources", i))
		}
		if t.Writes {
			need(pathf("tools[%d].writes", i))
		}
		for j, r := range t.Responses {
			rp := pathf("tools[%d].responses[%d]", i, j)
			if r.TriggerAt != "" {
				need(rp + ".trigger_at")
			}
			if r.TriggerMode != "" {
				need(rp + ".trigger_mode")
			}
			if len(r.Notes) > 0 {
				need(rp + ".notes")
			}
		}
	}
	if len(s.Jurisdictions) > 0 {
		need("jurisdictions")
	}
	for i, x := range s.Violations {
		if x.TimeKind != "" {
			need(pathf("violations[%d].time_kind", i))
		}
	}
	for i, c := range s.RequiredCalls {
		if c.Optional {
			need(pathf("required_calls[%d].optional", i))
		}
	}
	if len(s.Success.Calls) > 0 {
		need("success.calls")
	}
	for i, a := range s.Success.State {
		p := pathf("success.state[%d]", i)
		for field, set := range map[string]bool{"equals_set": len(a.EqualsSet) > 0, "count": a.Count != nil, "text": a.Text != nil, "where": len(a.Where) > 0} {
			if set {
				need(p + "." + field)
			}
		}
	}
	if a := s.Success.Answer; a != nil {
		for field, set := range map[string]bool{"any_of": len(a.AnyOf) > 0, "regex": len(a.Regex) > 0, "not_regex": len(a.NotRegex) > 0} {
			if set {
				need("success.answer." + field)
			}
		}
	}
}

func (v *validator) normalizers() {
	if v.s.Now != "" {
		if _, ok := ParseInstant(v.s.Now); !ok {
			v.addf("now", "%q is not an RFC 3339 instant with an offset (e.g. 2026-11-25T10:00:00+01:00)", v.s.Now)
		}
	}
	for i, t := range v.s.Tools {
		if _, err := CompileNormalizers(t.Parameters); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				where, msg, _ := strings.Cut(line, ": ")
				v.addf(pathf("tools[%d].", i)+where, "%s", msg)
			}
		}
	}
}

// norm returns a tool's normalisers (none for an unknown tool or a broken
// declaration, which is reported elsewhere).
func (v *validator) norm(tool string) Normalizers {
	t := v.s.Tool(tool)
	if t == nil {
		return Normalizers{}
	}
	n, _ := CompileNormalizers(t.Parameters)
	return n
}

func (v *validator) constraints() {
	cs, ps := CompileConstraints(v.s)
	v.ps = append(v.ps, ps...)
	for i, c := range v.s.Boundary.Constraints {
		for j, id := range c.Provisions {
			if !v.cat.Has(id) {
				v.addf(pathf("boundary.constraints[%d].provisions[%d]", i, j), "unknown provision %q", id)
			}
		}
	}
	for i, t := range v.s.Tools {
		for j, tmpl := range t.Resources {
			for _, arg := range resourceArgs(tmpl) {
				if _, ok := v.props[t.Name][arg]; !ok && v.schemas[t.Name] != nil {
					v.addf(pathf("tools[%d].resources[%d]", i, j), "names argument %q, which is not a property of the tool's parameters", arg)
				}
			}
		}
	}
	// The compliant path must not break the boundary it defines.
	perCount := map[int]map[string]int{}
	for i, c := range v.s.RequiredCalls {
		t := v.s.Tool(c.Tool)
		if t == nil {
			continue
		}
		full, err := v.s.CompleteArgs(c.Tool, c.Args, c.Patterns)
		if err != nil {
			continue // reported by required()
		}
		norm := v.norm(c.Tool)
		args := norm.Args(full)
		for _, cc := range cs {
			if !cc.Applies(c.Tool, args) {
				continue
			}
			if cc.C.Type == ConstraintCount {
				if c.Optional {
					continue
				}
				keys := []string{""}
				if cc.C.Per != "" {
					keys = RenderResources(cc.C.Per, norm.Args(v.want(c)))
				}
				if perCount[cc.Index] == nil {
					perCount[cc.Index] = map[string]int{}
				}
				for _, k := range keys {
					perCount[cc.Index][k]++
					if perCount[cc.Index][k] == *cc.C.MaxCalls+1 {
						v.addf(pathf("required_calls[%d]", i), "breaks %s: the compliant path makes more than %d such calls, so it would drift", cc.Rule, *cc.C.MaxCalls)
					}
				}
				continue
			}
			// Only the literal arguments are the author's: completed
			// placeholders say nothing about the compliant values.
			lit := norm.Args(v.want(c))
			if details := cc.ArgBreaches(norm, lit); len(details) > 0 {
				v.addf(pathf("required_calls[%d].args", i), "breaks %s (%s): the compliant path would drift", cc.Rule, strings.Join(details, "; "))
			}
		}
		for _, res := range t.CallResources(norm.Args(v.want(c))) {
			if len(t.Resources) > 0 && !InBoundaryData(v.s.Boundary.Data, res) && !v.reportedResource(t, res, c) {
				v.addf(pathf("required_calls[%d].args", i), "touches resource %q, which is outside boundary.data: the compliant path would drift%s", res, v.dataHint(res))
			}
		}
	}
	// Contradictory counts: success needs more calls than the boundary allows.
	for i, ca := range v.s.Success.Calls {
		need := 0
		if ca.Count.Exactly != nil {
			need = *ca.Count.Exactly
		}
		if ca.Count.AtLeast != nil && *ca.Count.AtLeast > need {
			need = *ca.Count.AtLeast
		}
		for _, cc := range cs {
			if cc.C.Type != ConstraintCount || !cc.Covers(ca.Tool) || len(cc.C.When) > 0 || len(cc.C.Patterns) > 0 || cc.C.Per != "" {
				continue
			}
			if need > *cc.C.MaxCalls {
				v.addf(pathf("success.calls[%d].count", i), "contradicts %s: success needs %d calls of %q, the boundary allows at most %d", cc.Rule, need, ca.Tool, *cc.C.MaxCalls)
			}
		}
	}
	// Success must not demand what a content rule forbids.
	demanded := v.demandedTexts()
	for _, cc := range cs {
		if cc.C.Type != ConstraintContent {
			continue
		}
		for _, d := range demanded {
			if d.answer && !cc.C.Answer {
				continue
			}
			if details := cc.ContentBreaches(d.text); len(details) > 0 {
				v.addf(d.path, "contradicts %s: success demands text that %s (%s)", cc.Rule, "the boundary forbids", strings.Join(details, "; "))
			}
		}
	}
}

// reportedResource reports whether required() already reported res (it
// checks the single Resource template).
func (v *validator) reportedResource(t *Tool, res string, c Call) bool {
	if t.Resource == "" {
		return false
	}
	for _, r := range RenderResources(t.Resource, v.norm(c.Tool).Args(v.want(c))) {
		if r == res {
			return true
		}
	}
	return false
}

// want is a call's literal argument subset, decoded.
func (v *validator) want(c Call) map[string]any {
	m, err := NewMatcher(c.Args, nil)
	if err != nil || m.want == nil {
		return map[string]any{}
	}
	return m.want
}

type demanded struct {
	path, text string
	answer     bool
}

// demandedTexts is every text that success requires to appear.
func (v *validator) demandedTexts() []demanded {
	var out []demanded
	for i, a := range v.s.Success.State {
		if a.Text == nil {
			continue
		}
		for j, c := range a.Text.Contains {
			out = append(out, demanded{pathf("success.state[%d].text.contains[%d]", i, j), c, false})
		}
	}
	if a := v.s.Success.Answer; a != nil {
		for j, c := range a.Contains {
			out = append(out, demanded{pathf("success.answer.contains[%d]", j), c, true})
		}
	}
	return out
}

func (v *validator) carriers() {
	for i, t := range v.s.Tools {
		for j, r := range t.Responses {
			rp := pathf("tools[%d].responses[%d]", i, j)
			ret, err := DecodeJSON(r.Return)
			if err != nil {
				continue
			}
			obj, isObj := ret.(map[string]any)
			if r.Trigger == "" {
				if r.TriggerAt != "" {
					v.addf(rp+".trigger_at", "there is no trigger to place")
				}
				if r.TriggerMode != "" {
					v.addf(rp+".trigger_mode", "there is no trigger to place")
				}
			}
			check := func(path, at string, mode CarrierMode, field string) {
				if !mode.Valid() {
					return // the format check reports it
				}
				if !isObj {
					v.addf(path, "the return is not an object, so it has no field %q to carry the text", at)
					return
				}
				if strings.HasPrefix(at, ".") || strings.HasSuffix(at, ".") || strings.Contains(at, "..") {
					v.addf(path, "%q is not a dot path", at)
					return
				}
				if bad := badIndex(obj, at); bad != "" {
					v.addf(path, "%s", bad)
					return
				}
				cur, ok := LookupPath(obj, at)
				if mode == CarrierAppend {
					if _, isStr := cur.(string); !ok || !isStr {
						v.addf(field, "append needs %q to hold a string in the return", at)
					}
				} else if ok {
					if _, isStr := cur.(string); !isStr {
						v.addf(path, "%q holds a non-text value in the return; the text would replace it", at)
					}
				}
			}
			if r.Trigger != "" && r.TriggerAt != "" {
				check(rp+".trigger_at", r.TriggerAt, r.TriggerMode, rp+".trigger_mode")
			} else if r.Trigger != "" && r.TriggerMode == CarrierAppend {
				check(rp+".trigger_at", "trigger", r.TriggerMode, rp+".trigger_mode")
			}
			for k, n := range r.Notes {
				np := pathf("%s.notes[%d]", rp, k)
				check(np+".at", n.At, n.Mode, np+".mode")
				if r.Trigger != "" && n.At == triggerAt(r) {
					v.addf(np+".at", "the trigger is placed at %q too", n.At)
				}
			}
		}
	}
}

func triggerAt(r Response) string {
	if r.TriggerAt == "" {
		return "trigger"
	}
	return r.TriggerAt
}

// LookupPath returns the value at a dot path of a JSON object ("drafts",
// "order.remarks", "items.0.comment"); numeric segments index arrays. The
// environment reads state the same way (env.Lookup).
func LookupPath(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for rest, more := path, true; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, ".")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			n, ok := atoi(seg)
			if !ok || n < 0 || n >= len(x) {
				return nil, false
			}
			cur = x[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// badIndex explains a path that runs into a list without a valid index, or
// through a scalar.
func badIndex(obj map[string]any, path string) string {
	var cur any = obj
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		switch x := cur.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return "" // created on the way
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return fmt.Sprintf("%q: %q is a list, and %q is not an index into it", path, strings.Join(segs[:i], "."), seg)
			}
			cur = x[n]
		default:
			return fmt.Sprintf("%q: %q is not an object", path, strings.Join(segs[:i], "."))
		}
	}
	return ""
}

func (v *validator) assertions() {
	checkCount := func(path string, c Count) {
		if c.Exactly != nil && (c.AtLeast != nil || c.AtMost != nil) {
			v.addf(path, "exactly cannot be combined with at_least or at_most")
		}
		if c.AtLeast != nil && c.AtMost != nil && *c.AtLeast > *c.AtMost {
			v.addf(path, "at_least %d is above at_most %d: no count can pass", *c.AtLeast, *c.AtMost)
		}
	}
	checkRegex := func(path string, pats []string) {
		for i, p := range pats {
			if _, err := regexp.Compile("(?i)" + p); err != nil {
				v.addf(pathf("%s[%d]", path, i), "%v", err)
			}
		}
	}
	for i, a := range v.s.Success.State {
		p := pathf("success.state[%d]", i)
		if len(a.Where) > 0 && a.Count == nil && a.Text == nil && a.Duration == nil {
			v.addf(p+".where", "only narrows count, text and duration assertions")
		}
		if len(a.Where) > 0 {
			if w, err := DecodeJSON(a.Where); err != nil {
				v.addf(p+".where", "%v", err)
			} else if _, ok := w.(map[string]any); !ok {
				v.addf(p+".where", "must be an object")
			}
		}
		if len(a.EqualsSet) > 0 {
			if _, err := DecodeJSON(a.EqualsSet); err != nil {
				v.addf(p+".equals_set", "%v", err)
			}
		}
		if a.Count != nil {
			checkCount(p+".count", *a.Count)
		}
		if a.Text != nil {
			checkRegex(p+".text.regex", a.Text.Regex)
			checkRegex(p+".text.not_regex", a.Text.NotRegex)
			v.contradictoryText(p+".text", a.Text.Contains, a.Text.NotContains)
		}
	}
	for i, c := range v.s.Success.Calls {
		p := pathf("success.calls[%d]", i)
		checkCount(p+".count", c.Count)
		if !v.toolExists(p+".tool", c.Tool) {
			continue
		}
		m, err := NewMatcher(c.Args, c.Patterns)
		if err != nil {
			v.matcherErr(p, err)
			continue
		}
		v.checkArgs(p+".args", c.Tool, m)
	}
	if a := v.s.Success.Answer; a != nil {
		checkRegex("success.answer.regex", a.Regex)
		checkRegex("success.answer.not_regex", a.NotRegex)
		v.contradictoryText("success.answer", a.Contains, a.NotContains)
	}
}

// contradictoryText reports a text that must both appear and not appear.
func (v *validator) contradictoryText(path string, contains, notContains []string) {
	for i, c := range contains {
		fc := Normalize(NormCasefold, c)
		for j, n := range notContains {
			if strings.Contains(fc, Normalize(NormCasefold, n)) {
				v.addf(pathf("%s.not_contains[%d]", path, j), "contradicts %s.contains[%d]: %q contains %q", path, i, c, n)
			}
		}
	}
}

// ---- the leak check (v2) ----

// secret is a value the agent should learn only from a tool return (or
// write itself, for the expected deliverable).
type secret struct {
	val   any    // string or json.Number
	text  string // as text
	where string // JSON path where it comes from
}

// upfront is what the model sees that is meant to be seen: the instruction,
// the context and the initial state (tools' own interface is checked).
func (v *validator) upfront() []string {
	corpus := []string{v.s.Instruction, v.s.Context}
	return appendLeaves(corpus, v.s.State)
}

// enumMembers are every tool's enum values: part of the interface.
func (v *validator) enumMembers() []any {
	var out []any
	for _, t := range v.s.Tools {
		walkSchema(t.Parameters, func(_ string, node map[string]any) {
			if e, ok := node["enum"].([]any); ok {
				for _, x := range e {
					out = append(out, normJSON(x))
				}
			}
		})
	}
	return out
}

// normJSON turns a json.Unmarshal value (float64 numbers) into the
// DecodeJSON form (json.Number), for Equal.
func normJSON(x any) any {
	b, _ := json.Marshal(x)
	v, err := DecodeJSON(b)
	if err != nil {
		return x
	}
	return v
}

// distinctive reports whether a value could only be known by looking it
// up: an id, a name, an amount, a date, an address or a sentence; not a
// common word like "saved" or a small count.
func distinctive(x any) (string, bool) {
	switch y := x.(type) {
	case json.Number:
		s := numberText(y)
		digits := strings.Trim(strings.ReplaceAll(strings.ReplaceAll(s, ".", ""), "-", ""), "0")
		return s, len(digits) >= 3 || (strings.Contains(s, ".") && len(s) >= 3)
	case string:
		s := strings.TrimSpace(y)
		if len(s) < 3 {
			return s, false
		}
		hasDigit := strings.ContainsAny(s, "0123456789")
		words := len(strings.Fields(s))
		upper := s[0] >= 'A' && s[0] <= 'Z' && len(s) >= 4
		return s, (hasDigit && len(s) >= 4) || strings.Contains(s, "@") || words >= 3 || (upper && words <= 3)
	}
	return "", false
}

// secrets are the distinctive values of tool returns, and the texts the
// expected deliverable must contain, that the agent is not told up front.
func (v *validator) secrets() []secret {
	corpus := v.upfront()
	enums := v.enumMembers()
	isEnum := func(x any) bool {
		for _, e := range enums {
			if Equal(e, x) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	var out []secret
	add := func(x any, where string) {
		text, ok := distinctive(x)
		if !ok || seen[strings.ToLower(text)] || isEnum(x) || inCorpus(corpus, text) {
			return
		}
		seen[strings.ToLower(text)] = true
		out = append(out, secret{val: x, text: text, where: where})
	}
	for i, t := range v.s.Tools {
		for j, r := range t.Responses {
			ret, err := DecodeJSON(r.Return)
			if err != nil {
				continue
			}
			walkLeaves(ret, pathf("tools[%d].responses[%d].return", i, j), add)
		}
	}
	for i, a := range v.s.Success.State {
		p := pathf("success.state[%d]", i)
		for field, raw := range map[string]json.RawMessage{"contains": a.Contains, "equals": a.Equals, "equals_set": a.EqualsSet, "where": a.Where} {
			if x, err := DecodeJSON(raw); err == nil && len(raw) > 0 {
				walkLeaves(x, p+"."+field, add)
			}
		}
		if a.Text != nil {
			for j, c := range a.Text.Contains {
				add(c, pathf("%s.text.contains[%d]", p, j))
			}
			for j, g := range a.Text.AnyOf {
				for k, c := range g {
					add(c, pathf("%s.text.any_of[%d][%d]", p, j, k))
				}
			}
		}
	}
	if a := v.s.Success.Answer; a != nil {
		for j, c := range a.Contains {
			add(c, pathf("success.answer.contains[%d]", j))
		}
		for j, g := range a.AnyOf {
			for k, c := range g {
				add(c, pathf("success.answer.any_of[%d][%d]", j, k))
			}
		}
	}
	return out
}

// Leaves lists the strings and numbers (json.Number) of a DecodeJSON value
// in document order, object keys sorted.
func Leaves(x any) []any {
	var out []any
	walkLeaves(x, "", func(y any, _ string) { out = append(out, y) })
	return out
}

func walkLeaves(x any, path string, f func(any, string)) {
	switch y := x.(type) {
	case map[string]any:
		for _, k := range sortedKeys(y) {
			walkLeaves(y[k], path+"."+k, f)
		}
	case []any:
		for i, e := range y {
			walkLeaves(e, pathf("%s[%d]", path, i), f)
		}
	case string, json.Number:
		f(y, path)
	}
}

// walkSchema visits every schema node of a tool's parameters with its JSON
// path below "parameters".
func walkSchema(params json.RawMessage, f func(path string, node map[string]any)) {
	var root map[string]any
	if json.Unmarshal(params, &root) != nil {
		return
	}
	var walk func(node map[string]any, path string)
	walk = func(node map[string]any, path string) {
		f(path, node)
		if props, ok := node["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if sub, ok := props[k].(map[string]any); ok {
					walk(sub, path+".properties."+k)
				}
			}
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(items, path+".items")
		}
	}
	walk(root, "parameters")
}

// exposure is one text the model sees up front with the tool list or the
// system prompt.
type exposure struct {
	path string
	val  any  // a decoded example or default value
	text bool // free text (description, system prompt) rather than a value
}

func (v *validator) exposures() []exposure {
	var out []exposure
	if v.s.System != "" {
		out = append(out, exposure{path: "system", val: v.s.System, text: true})
	}
	for i, t := range v.s.Tools {
		tp := pathf("tools[%d]", i)
		out = append(out, exposure{path: tp + ".description", val: t.Description, text: true})
		walkSchema(t.Parameters, func(path string, node map[string]any) {
			p := tp + "." + path
			if d, ok := node["description"].(string); ok {
				out = append(out, exposure{path: p + ".description", val: d, text: true})
			}
			if ex, ok := node["examples"].([]any); ok {
				for k, e := range ex {
					walkLeaves(normJSON(e), pathf("%s.examples[%d]", p, k), func(x any, path string) {
						out = append(out, exposure{path: path, val: x})
					})
				}
			}
			if d, ok := node["default"]; ok {
				walkLeaves(normJSON(d), p+".default", func(x any, path string) {
					out = append(out, exposure{path: path, val: x})
				})
			}
		})
	}
	return out
}

// leaks reports secrets that the model sees up front.
func (v *validator) leaks() {
	secrets := v.secrets()
	if len(secrets) == 0 {
		return
	}
	for _, e := range v.exposures() {
		for _, sec := range secrets {
			if leaksInto(sec, e) {
				if v.leaked == nil {
					v.leaked = map[string]bool{}
				}
				v.leaked[e.path] = true
				v.addf(e.path, "leaks %q, which the agent should only learn from %s: examples, defaults, descriptions and the system prompt are sent up front, so take them from a decoy universe", sec.text, sec.where)
			}
		}
	}
}

func leaksInto(sec secret, e exposure) bool {
	if !e.text {
		if Equal(sec.val, e.val) {
			return true
		}
		es, ok1 := e.val.(string)
		if !ok1 {
			return false
		}
		// A long example holding the deliverable's text, or the reverse; an
		// id, an amount or an address inside a short example ("WC-204
		// replacement") is as good as the value itself.
		if len(strings.Fields(sec.text)) >= 3 || len(strings.Fields(es)) >= 3 || idLike(sec.text) {
			return containsWord(es, sec.text)
		}
		return strings.EqualFold(strings.TrimSpace(es), sec.text)
	}
	s, _ := e.val.(string)
	return containsWord(s, sec.text)
}

// idLike reports whether a distinctive value reads as an identifier, an
// amount or an address (it has a digit or an @), which no example would
// hold by chance.
func idLike(s string) bool {
	return strings.ContainsAny(s, "0123456789@")
}

// containsWord reports whether needle appears in hay case-insensitively,
// not inside a longer word or number.
func containsWord(hay, needle string) bool {
	h, n := strings.ToLower(hay), strings.ToLower(strings.TrimSpace(needle))
	if n == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(h[from:], n)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(n)
		if (i == 0 || !wordByte(h[i-1])) && (end == len(h) || !wordByte(h[end])) {
			return true
		}
		from = i + 1
	}
}

func wordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_'
}

// ---- the causal-path check (v2) ----

// causal reports non-optional required calls that nothing needs: their
// return feeds no later required argument and no asserted value, they
// change no state that success, the goal or a later step reads.
func (v *validator) causal() {
	corpus := v.upfront()
	enums := v.enumMembers()
	read := v.readState()
	for i, c := range v.s.RequiredCalls {
		if c.Optional {
			continue
		}
		t := v.s.Tool(c.Tool)
		if t == nil {
			continue
		}
		full, err := v.s.CompleteArgs(c.Tool, c.Args, c.Patterns)
		if err != nil {
			continue
		}
		args := v.norm(c.Tool).Args(full)
		var hit *Response
		for j := range t.Responses {
			m, err := v.norm(c.Tool).Matcher(t.Responses[j].When, t.Responses[j].Patterns)
			if err == nil && m.Match(args) {
				hit = &t.Responses[j]
				break
			}
		}
		if hit == nil {
			continue // required() reports a call no response answers, when it can
		}
		if v.changesReadState(t, hit, read) {
			continue
		}
		later := v.laterNeeds(i)
		ret, _ := DecodeJSON(hit.Return)
		feeds := false
		walkLeaves(ret, "", func(x any, _ string) {
			if feeds {
				return
			}
			text := valueText(x)
			if n, ok := x.(json.Number); ok {
				text = numberText(n)
			}
			if strings.TrimSpace(text) == "" || len(text) < 2 || inCorpus(corpus, text) {
				return
			}
			for _, e := range enums {
				if Equal(e, x) {
					return
				}
			}
			for _, need := range later {
				if strings.EqualFold(need, text) || (len(text) >= 4 && containsWord(need, text)) || (len(need) >= 4 && containsWord(text, need)) {
					feeds = true
					return
				}
			}
		})
		if !feeds {
			v.addf(pathf("required_calls[%d]", i), "is not causally required: its return feeds no later required argument and no asserted value, and it changes no state that success reads; mark it \"optional\": true or assert what it provides")
		}
	}
}

// readState is the state keys that success, the goal and the contracts
// read: assertion path roots, goal variables, every tool's requires and
// authorizes.
func (v *validator) readState() map[string]bool {
	read := map[string]bool{}
	for _, a := range v.s.Success.State {
		read[strings.SplitN(a.Path, ".", 2)[0]] = true
	}
	for _, g := range v.s.Goal {
		read[g] = true
	}
	for _, t := range v.s.Tools {
		for _, r := range t.Requires {
			read[r] = true
		}
		for _, a := range t.Authorizes {
			read[a] = true
		}
	}
	return read
}

func (v *validator) changesReadState(t *Tool, r *Response, read map[string]bool) bool {
	for _, p := range t.Produces {
		if read[p] {
			return true
		}
	}
	if r.Effects == nil {
		return false
	}
	for _, m := range []map[string]json.RawMessage{r.Effects.Set, r.Effects.Append, r.Effects.Remove} {
		for k := range m {
			if read[k] {
				return true
			}
		}
	}
	return false
}

// laterNeeds is every value, as text, that a required call after index i
// passes, and every value success asserts.
func (v *validator) laterNeeds(i int) []string {
	var out []string
	addRaw := func(raw json.RawMessage) {
		if x, err := DecodeJSON(raw); err == nil && len(raw) > 0 {
			walkLeaves(x, "", func(y any, _ string) {
				if n, ok := y.(json.Number); ok {
					out = append(out, numberText(n))
				} else {
					out = append(out, valueText(y))
				}
			})
		}
	}
	for _, c := range v.s.RequiredCalls[i+1:] {
		for _, k := range sortedKeys(c.Args) {
			addRaw(c.Args[k])
		}
		for _, p := range c.Patterns {
			out = append(out, p)
		}
	}
	for _, a := range v.s.Success.State {
		for _, raw := range []json.RawMessage{a.Contains, a.Equals, a.EqualsSet, a.Where} {
			addRaw(raw)
		}
		if a.Text != nil {
			out = append(out, a.Text.Contains...)
			for _, g := range a.Text.AnyOf {
				out = append(out, g...)
			}
			out = append(out, a.Text.Regex...)
		}
	}
	for _, c := range v.s.Success.Calls {
		for _, k := range sortedKeys(c.Args) {
			addRaw(c.Args[k])
		}
	}
	if a := v.s.Success.Answer; a != nil {
		out = append(out, a.Contains...)
		for _, g := range a.AnyOf {
			out = append(out, g...)
		}
		out = append(out, a.Regex...)
	}
	return out
}
