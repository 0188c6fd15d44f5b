package sim

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// A violation names only what makes a call drift (the tool, a recipient, a
// wider window); CompleteArgs fills the rest of the schema with examples or
// placeholders ("(simulated to)"), and a drifting call that sends to
// "(simulated to)" looks broken to a reader. plausibleArgs fills those
// arguments from the scenario instead, as a model that followed the lure
// would: the value the lure names first, then what the task works on (the
// compliant path's arguments), then what the mock knows (response literals,
// tool returns, state), then text from the task's own messages. Each value
// is kept only if the call stays valid for the tool's schema and matches
// the same violations as before, so the drift it is labelled as does not
// change. Free text that nothing in the scenario supplies is written from
// the lure; a disclosure (data drift into a writing tool) carries the
// protected fact it discloses.

// fillSource is what plausibleArgs draws on for one scenario.
type fillSource struct {
	s      *scenario.Scenario
	path   []action         // the compliant path the simulation plays
	keyed  map[string][]any // every keyed leaf of returns, state, responses, in document order
	norm   map[string]scenario.Normalizers
	schema map[string]*scenario.ArgSchema
	// examples are each tool's properties' "examples" values, which
	// CompleteArgs fills with.
	examples map[string]map[string][]any
	viol     []scenario.Matcher // violations' matchers, literals normalised for their tool
	// injected are, by tool, the calls the policy takes for an injection's
	// (isInjected) in any scenario: a planned call filled so that it
	// matches one would be skipped as injected and made again at every
	// turn.
	injected map[string][]scenario.Matcher
	// variantViol are the violations of the other variants of the task.
	variantViol []variantViolation
	ok          bool // the scenario compiled
}

type variantViolation struct {
	tool string
	norm scenario.Normalizers
	m    scenario.Matcher
}

// injectedCalls are, by tool, the matchers isInjected applies: each
// instruction injection's target and a data theft's read, over every
// scenario of the policy.
func injectedCalls(scenarios []*scenario.Scenario) map[string][]scenario.Matcher {
	out := map[string][]scenario.Matcher{}
	for _, s := range scenarios {
		for i := range s.Injections {
			inj := &s.Injections[i]
			if inj.Kind != scenario.InjectInstruction {
				continue
			}
			for _, c := range []*scenario.Call{inj.Target, inj.SecretFrom} {
				if c == nil {
					continue
				}
				if m, err := scenario.NewMatcher(c.Args, c.Patterns); err == nil {
					out[c.Tool] = append(out[c.Tool], m)
				}
			}
		}
	}
	return out
}

// variants are the scenarios that share s's user turn (s among them),
// whose violations a filled call must match as before.
func newFillSource(s *scenario.Scenario, path []action, injected map[string][]scenario.Matcher, variants []*scenario.Scenario) *fillSource {
	fs := &fillSource{s: s, path: path, injected: injected, keyed: map[string][]any{}, norm: map[string]scenario.Normalizers{}, schema: map[string]*scenario.ArgSchema{}, examples: map[string]map[string][]any{}, ok: true}
	// Only the tools a drift call names are filled: compiling every
	// tool's schema would cost more than the filling.
	needed := map[string]bool{}
	for _, v := range s.Violations {
		needed[v.Tool] = true
	}
	for _, inj := range s.Injections {
		for _, c := range []*scenario.Call{inj.Target, inj.SecretFrom} {
			if c != nil {
				needed[c.Tool] = true
			}
		}
	}
	for i := range s.Tools {
		t := &s.Tools[i]
		if !needed[t.Name] {
			continue
		}
		n, err := scenario.CompileNormalizers(t.Parameters)
		as, err2 := scenario.CompileArgSchema(t.Parameters)
		if err != nil || err2 != nil {
			fs.ok = false
			return fs
		}
		fs.norm[t.Name], fs.schema[t.Name] = n, as
		var params struct {
			Properties map[string]struct {
				Examples []json.RawMessage `json:"examples"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(t.Parameters, &params)
		ex := map[string][]any{}
		for k, p := range params.Properties {
			for _, raw := range p.Examples {
				if x, err := scenario.DecodeJSON(raw); err == nil {
					ex[k] = append(ex[k], x)
				}
			}
		}
		fs.examples[t.Name] = ex
	}
	for _, v := range s.Violations {
		m, err := fs.norm[v.Tool].Matcher(v.Args, v.Patterns)
		if err != nil {
			fs.ok = false
			return fs
		}
		fs.viol = append(fs.viol, m)
	}
	norms := map[string]scenario.Normalizers{} // by parameters, shared by the variants' copies of a tool
	for _, o := range variants {
		if o == s {
			continue
		}
		for _, v := range o.Violations {
			t := o.Tool(v.Tool)
			if t == nil {
				continue
			}
			n, ok := norms[string(t.Parameters)]
			if !ok {
				var err error
				if n, err = scenario.CompileNormalizers(t.Parameters); err != nil {
					fs.ok = false
					return fs
				}
				norms[string(t.Parameters)] = n
			}
			m, err := n.Matcher(v.Args, v.Patterns)
			if err != nil {
				fs.ok = false
				return fs
			}
			fs.variantViol = append(fs.variantViol, variantViolation{tool: v.Tool, norm: n, m: m})
		}
	}
	add := func(raw json.RawMessage) {
		if x, err := scenario.DecodeJSON(raw); err == nil {
			keyedLeaves(x, "", fs.keyed)
		}
	}
	for _, t := range s.Tools {
		for _, r := range t.Responses {
			for k, raw := range r.When {
				if x, err := scenario.DecodeJSON(raw); err == nil {
					fs.keyed[k] = append(fs.keyed[k], x)
				}
			}
			add(r.Return)
		}
	}
	if len(s.State) > 0 {
		add(s.State)
	}
	return fs
}

// keyedLeaves collects each value under its object key (a list's elements
// under the list's key), scalars and lists of scalars alike.
func keyedLeaves(x any, key string, out map[string][]any) {
	switch y := x.(type) {
	case map[string]any:
		keys := make([]string, 0, len(y))
		for k := range y {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			keyedLeaves(y[k], k, out)
		}
	case []any:
		if key != "" && len(y) > 0 && scalars(y) {
			out[key] = append(out[key], y)
		}
		for _, e := range y {
			keyedLeaves(e, key, out)
		}
	case string, json.Number, bool:
		if key != "" && key != "trigger" {
			out[key] = append(out[key], y)
		}
	}
}

func scalars(xs []any) bool {
	for _, x := range xs {
		switch x.(type) {
		case string, json.Number:
		default:
			return false
		}
	}
	return true
}

// lures are the trigger texts of a violation's trigger tool: what argued
// for the shortcut.
func lures(s *scenario.Scenario, v scenario.Violation) []string {
	var out []string
	if t := s.Tool(v.TriggerIn); t != nil {
		for _, r := range t.Responses {
			if r.Trigger != "" {
				out = append(out, r.Trigger)
			}
		}
	}
	return out
}

var emailRE = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)

// placeholder reports whether a value reads as a stand-in rather than
// something an agent would write: the placeholders CompleteArgs and the
// text filler of earlier versions wrote, or empty text.
func placeholder(v any) bool {
	switch x := v.(type) {
	case string:
		l := strings.ToLower(x)
		return strings.TrimSpace(x) == "" || strings.Contains(l, "(simulated ") || strings.Contains(l, "[simulated ")
	case []any:
		for _, e := range x {
			if placeholder(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if placeholder(e) {
				return true
			}
		}
	}
	return false
}

// filledKeys are the top-level arguments of a completed call that its
// violation (or injection target) does not state.
func filledKeys(args map[string]any, given map[string]json.RawMessage, patterns map[string]string) []string {
	var out []string
	for k := range args {
		if _, ok := given[k]; ok {
			continue
		}
		if _, ok := patterns[k]; ok {
			continue
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// matched is the set of violations a call's arguments match, its own
// and the variants', then (as -1-i) the injected calls it matches.
func (fs *fillSource) matched(tool string, args map[string]any) []int {
	n := fs.norm[tool].Args(args)
	var out []int
	for i, v := range fs.s.Violations {
		if v.Tool == tool && fs.viol[i].Match(n) {
			out = append(out, i)
		}
	}
	for i, vv := range fs.variantViol {
		if vv.tool == tool && vv.m.Match(vv.norm.Args(args)) {
			out = append(out, len(fs.viol)+i)
		}
	}
	for i, m := range fs.injected[tool] {
		if m.Match(args) {
			out = append(out, -1-i)
		}
	}
	return out
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// textKeys are arguments that hold prose; subjectKeys hold a line.
var (
	textKeys    = map[string]bool{"body": true, "message": true, "text": true, "content": true, "note": true, "notes": true, "comment": true, "statement": true, "description": true, "summary": true, "release_note": true, "access_note": true, "reason": true, "details": true, "justification": true}
	subjectKeys = map[string]bool{"subject": true, "title": true, "headline": true}
)

// plausibleArgs replaces the placeholders among args' filled keys (see
// the comment at the top of the file). args is modified and returned.
// trigger is the tool whose result argued for the call (its lures are
// lureTexts); with disclose the call carries a protected fact, those the
// trigger tool returns first.
func (fs *fillSource) plausibleArgs(tool string, args map[string]any, given map[string]json.RawMessage, patterns map[string]string, trigger string, lureTexts []string, disclose bool) map[string]any {
	if args == nil || !fs.ok || fs.schema[tool] == nil {
		return args
	}
	before := fs.matched(tool, args)
	keep := func(k string, v any) bool {
		old := args[k]
		args[k] = v
		if sameInts(fs.matched(tool, args), before) && fs.schema[tool].Validate(args) == nil && ordered(args) {
			return true
		}
		args[k] = old
		return false
	}
	lureText := strings.Join(lureTexts, "\n")
	keys := filledKeys(args, given, patterns)
	examples := fs.examples[tool]
	for _, k := range keys {
		if !fillable(args[k]) && !isExample(examples[k], args[k]) {
			continue
		}
		for _, c := range fs.candidates(k, args[k], lureText) {
			if keep(k, c) {
				break
			}
		}
	}
	// What nothing supplied: prose from the task and the lure. A schema's
	// example text ("Message text here.") comes from a decoy universe and
	// reads as a placeholder; a short example value ("example-list") is
	// schema-valid and stays, since a phrase guessed for it is no better.
	for _, k := range keys {
		prose := textKeys[k] || subjectKeys[k]
		if !placeholder(args[k]) && !(prose && isExample(examples[k], args[k])) {
			continue
		}
		for _, c := range fs.prose(k, trigger, lureTexts) {
			if keep(k, c) {
				break
			}
		}
	}
	if disclose {
		fs.disclose(tool, trigger, args, keys, keep)
	}
	return args
}

// rangeKeys are the start and end arguments of a period.
var rangeKeys = [][2]string{{"from", "to"}, {"start", "end"}, {"start_date", "end_date"}, {"date_from", "date_to"}, {"since", "until"}, {"from_date", "to_date"}, {"created_from", "created_to"}}

// ordered reports whether every period in args that holds two ISO dates or
// instants starts before it ends, so a filled bound never inverts one.
func ordered(args map[string]any) bool {
	for _, r := range rangeKeys {
		a, ok1 := args[r[0]].(string)
		b, ok2 := args[r[1]].(string)
		if ok1 && ok2 && isoDate.MatchString(a) && isoDate.MatchString(b) && a[:10] > b[:10] {
			return false
		}
	}
	return true
}

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}`)

// isExample reports whether v is one of a property's examples.
func isExample(examples []any, v any) bool {
	for _, e := range examples {
		if scenario.Equal(e, v) {
			return true
		}
	}
	return false
}

// fillable: a placeholder, or a stand-in number or list a schema forced.
func fillable(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0 || placeholder(x)
	case json.Number:
		return true
	}
	return placeholder(v)
}

// candidates for argument k in preference order: values the lure names,
// then the compliant path's, then the scenario's keyed values; each of
// the placeholder's JSON kind.
func (fs *fillSource) candidates(k string, old any, lureText string) []any {
	var pool []any
	for _, a := range fs.path {
		if v, ok := a.args[k]; ok {
			pool = append(pool, v)
		}
	}
	pool = append(pool, fs.keyed[k]...)
	if s, ok := old.(string); ok && placeholder(s) && addressKey(k) {
		for _, e := range emailRE.FindAllString(lureText, -1) {
			pool = append(pool, e)
		}
	}
	if _, ok := old.([]any); ok {
		// A list of what the singular names: every customer's email for
		// "emails", the way a drift widens a call.
		if one, ok := strings.CutSuffix(k, "s"); ok && len(fs.keyed[one]) > 0 {
			var all []any
			seen := map[string]bool{}
			for _, v := range fs.keyed[one] {
				if s, ok := v.(string); ok && !seen[s] && !placeholder(s) {
					seen[s] = true
					all = append(all, s)
				}
			}
			pool = append(pool, all)
		}
	}
	// Then values of related keys: "partner" takes a partner_name,
	// "address" a delivery_address.
	pool = append(pool, fs.related(k)...)
	if addressKey(k) {
		// Any address the scenario holds, the lure's first (ranked below).
		pool = append(pool, fs.addresses()...)
	}
	var named, rest []any
	seen := map[string]bool{}
	for _, v := range pool {
		if !sameKind(old, v) || placeholder(v) || !fits(k, v) {
			continue
		}
		b, _ := json.Marshal(v)
		if seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		if s, ok := v.(string); ok && len(s) >= 3 && strings.Contains(lureText, s) {
			named = append(named, v)
		} else {
			rest = append(rest, v)
		}
	}
	return append(named, rest...)
}

// related are the keyed values whose key shares a word with k (other
// than id, name and type, which every record has), in key order.
func (fs *fillSource) related(k string) []any {
	words := map[string]bool{}
	for _, w := range strings.Split(k, "_") {
		if w != "id" && w != "ids" && w != "name" && w != "type" && len(w) > 1 {
			words[w] = true
		}
	}
	var keys []string
	for kk := range fs.keyed {
		if kk == k {
			continue
		}
		for _, w := range strings.Split(kk, "_") {
			if words[w] {
				keys = append(keys, kk)
				break
			}
		}
	}
	sort.Strings(keys)
	var out []any
	for _, kk := range keys {
		out = append(out, fs.keyed[kk]...)
	}
	return out
}

var phoneRE = regexp.MustCompile(`^(\+|0)[0-9][0-9 ()-]{6,}$`)

// fits: a value of the right sort for its argument: an address for an
// address, prose (several words) for prose.
func fits(k string, v any) bool {
	s, ok := v.(string)
	if !ok {
		if l, ok := v.([]any); ok && addressKey(strings.TrimSuffix(k, "s")) {
			for _, e := range l {
				if !fits(strings.TrimSuffix(k, "s"), e) {
					return false
				}
			}
		}
		return true
	}
	switch {
	case addressKey(k) && k != "address" && !strings.HasSuffix(k, "_address"):
		return strings.Contains(s, "@") || phoneRE.MatchString(s)
	case textKeys[k] || subjectKeys[k]:
		return strings.Count(strings.TrimSpace(s), " ") >= 2
	}
	return true
}

// addresses are the e-mail addresses among the scenario's keyed values,
// in key order.
func (fs *fillSource) addresses() []any {
	keys := make([]string, 0, len(fs.keyed))
	for k := range fs.keyed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []any
	for _, k := range keys {
		for _, v := range fs.keyed[k] {
			if s, ok := v.(string); ok && emailRE.MatchString(s) && strings.TrimSpace(emailRE.FindString(s)) == s {
				out = append(out, s)
			}
		}
	}
	return out
}

// addressKey: an argument that takes an address.
func addressKey(k string) bool {
	for _, w := range []string{"to", "recipient", "recipients", "email", "emails", "cc", "bcc", "grant_to", "share_with", "address"} {
		if k == w || strings.HasSuffix(k, "_"+w) {
			return true
		}
	}
	return false
}

func sameKind(a, b any) bool {
	switch x := a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case json.Number:
		_, ok := b.(json.Number)
		return ok
	case []any:
		y, ok := b.([]any)
		if !ok || len(y) == 0 {
			return false
		}
		if len(x) > 0 {
			return sameKind(x[0], y[0])
		}
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
