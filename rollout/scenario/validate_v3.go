package scenario

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The checks of format v3: protected facts, the answer's recipient, call
// order, and (in v3 files) that every deliverable is checked.

// minConceptAliases is the fewest aliases a health or financial concept
// may list: a diagnosis, a drug or a debt is written in lay and clinical
// terms, abbreviations and codes, and a rule that knows one of them lets
// the others through as a clean success.
const minConceptAliases = 3

func (v *validator) v3() {
	v.versionGate3()
	v.facts()
	v.order()
	if v.s.Version() >= 3 {
		v.deliverables()
	}
}

// versionGate3 refuses v3 fields in an older file.
func (v *validator) versionGate3() {
	s := v.s
	if s.Version() >= 3 {
		return
	}
	need := func(path string) {
		v.addf(path, "is a format v3 field: set \"schema_version\": 3")
	}
	if len(s.Boundary.Facts) > 0 {
		need("boundary.facts")
	}
	if s.Boundary.AnswerRecipient != "" {
		need("boundary.answer_recipient")
	}
	for i, c := range s.RequiredCalls {
		if len(c.After) > 0 {
			need(pathf("required_calls[%d].after", i))
		}
	}
	for i, a := range s.Success.State {
		if a.Duration != nil {
			need(pathf("success.state[%d].duration", i))
		}
	}
}

func (v *validator) facts() {
	if !v.s.Boundary.AnswerRecipient.Valid() {
		v.addf("boundary.answer_recipient", "unknown recipient %q (user or third_party)", v.s.Boundary.AnswerRecipient)
	}
	seen := map[string]int{}
	for i := range v.s.Boundary.Facts {
		f := &v.s.Boundary.Facts[i]
		p := pathf("boundary.facts[%d]", i)
		if j, dup := seen[f.ID]; dup {
			v.addf(p+".id", "duplicate fact %q (also boundary.facts[%d])", f.ID, j)
		}
		seen[f.ID] = i
		if !f.Category.Valid() {
			v.addf(p+".category", "unknown category %q (one of %v)", f.Category, FactCategories)
		}
		if !f.Type.Valid() {
			v.addf(p+".type", "unknown fact type %q (one of %v)", f.Type, FactTypes)
			continue
		}
		if f.Kind != "" && (!f.Kind.Valid() || f.Kind == KindInjection || f.Kind == KindPrematureAction) {
			v.addf(p+".kind", "unknown violation kind %q", f.Kind)
		}
		if _, err := CompileFact(f, i); err != nil {
			v.addf(p+".value", "%v", err)
		}
		if f.Tail > 0 && f.Type != FactIdentifier {
			v.addf(p+".tail", "is for identifiers; a %s compares otherwise", f.Type)
		}
		if f.Currency != "" && f.Type != FactAmount {
			v.addf(p+".currency", "is for amounts")
		}
		if f.Type == FactConcept && (f.Category == FactHealth || f.Category == FactFinancial) && len(f.Aliases) < minConceptAliases {
			v.addf(p+".aliases", "a %s concept needs at least %d aliases (has %d): list the synonyms, abbreviations, lay and clinical terms and codes a model may write instead (a diagnosis with its ICD-10 code, a drug with its brand and class names), since a rule that knows one form passes the others as a clean success", f.Category, minConceptAliases, len(f.Aliases))
		}
		for j, a := range f.Aliases {
			if strings.TrimSpace(a) == "" {
				v.addf(pathf("%s.aliases[%d]", p, j), "is empty")
			}
		}
		for j, a := range f.AllowedIn {
			v.sinkName(pathf("%s.allowed_in[%d]", p, j), a)
		}
		for j, src := range f.Sources {
			v.factSource(pathf("%s.sources[%d]", p, j), src)
		}
		for j, id := range f.Provisions {
			if !v.cat.Has(id) {
				v.addf(pathf("%s.provisions[%d]", p, j), "unknown provision %q", id)
			} else if pr, ok := v.cat.Lookup(id); ok && len(v.s.Jurisdictions) > 0 && !contains(v.s.Jurisdictions, pr.Jurisdiction) {
				v.addf(pathf("%s.provisions[%d]", p, j), "%s is %s law, outside the scenario's jurisdictions %v", id, pr.Jurisdiction, v.s.Jurisdictions)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sinkName checks an allowed_in entry: "answer", "TOOL" or "TOOL.ARG".
func (v *validator) sinkName(path, a string) {
	if a == AnswerSink {
		return
	}
	tool, arg, hasArg := strings.Cut(a, ".")
	t := v.s.Tool(tool)
	if t == nil {
		v.addf(path, "unknown tool %q (write TOOL, TOOL.ARG or %q)", tool, AnswerSink)
		return
	}
	if !t.Writes {
		v.addf(path, "tool %q does not write (writes: true): it is no sink, so allowing a fact there says nothing", tool)
	}
	if hasArg {
		top, _, _ := strings.Cut(arg, ".")
		if _, ok := v.props[tool][top]; !ok && v.schemas[tool] != nil {
			v.addf(path, "%q has no argument %q", tool, top)
		}
	}
}

// factSource checks a source: "TOOL:PATH", "instruction", "context" or
// "state:PATH".
func (v *validator) factSource(path, src string) {
	switch src {
	case "instruction", "context":
		return
	}
	where, rest, ok := strings.Cut(src, ":")
	if !ok || rest == "" {
		v.addf(path, "write TOOL:PATH, state:PATH, instruction or context (got %q)", src)
		return
	}
	if where == "state" {
		return
	}
	if v.s.Tool(where) == nil {
		v.addf(path, "unknown tool %q", where)
	}
}

// order checks required_calls[i].after: indexes of earlier compliant steps,
// not optional ones (a skipped step can order nothing), and no cycle.
func (v *validator) order() {
	calls := v.s.RequiredCalls
	for i, c := range calls {
		for j, k := range c.After {
			p := pathf("required_calls[%d].after[%d]", i, j)
			switch {
			case k < 0 || k >= len(calls):
				v.addf(p, "%d is not a required call (0–%d)", k, len(calls)-1)
			case k == i:
				v.addf(p, "a call cannot come after itself")
			case calls[k].Optional:
				v.addf(p, "required_calls[%d] is optional: a step the agent may skip cannot order another", k)
			}
		}
	}
	// A cycle makes the path impossible.
	state := make([]int, len(calls)) // 0 new, 1 on the stack, 2 done
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = 1
		for _, k := range calls[i].After {
			if k < 0 || k >= len(calls) || k == i {
				continue
			}
			if state[k] == 1 || (state[k] == 0 && !visit(k)) {
				return false
			}
		}
		state[i] = 2
		return true
	}
	for i := range calls {
		if state[i] == 0 && !visit(i) {
			v.addf(pathf("required_calls[%d].after", i), "the order relations form a cycle: no trajectory can satisfy them")
			return
		}
	}
}

// deliverables reports a free-text argument of a required write that no
// success assertion checks, and a task whose only deliverable is the final
// answer with no answer assertion: filler ("Done as asked.") or the
// instruction restated would then pass as a clean success.
func (v *validator) deliverables() {
	s := v.s
	writes := false
	for i, c := range s.RequiredCalls {
		t := s.Tool(c.Tool)
		if t == nil || !t.Writes {
			continue
		}
		writes = true
		for _, arg := range FreeTextArgs(t) {
			if v.argChecked(t, arg) {
				continue
			}
			where := StoredAt(t, arg)
			hint := "add a success.calls assertion with a pattern on it"
			if len(where) > 0 {
				hint = fmt.Sprintf("add a success.state text check on %s", where[0])
			}
			v.addf(pathf("required_calls[%d]", i), "free-text argument %q of %s is checked by no success assertion: %s, so that filler or the instruction restated fails", arg, c.Tool, hint)
		}
	}
	if !writes && s.Success.Answer == nil {
		v.addf("success.answer", "the final answer is the task's deliverable (no required call writes) and no answer assertion checks it: add contains, any_of or regex checks on what the answer must say")
	}
}

// RecipientArgs are argument names that name people or places a write
// reaches, whether or not the tool declares them as resources.
var RecipientArgs = map[string]bool{
	"to": true, "cc": true, "bcc": true, "recipients": true, "attendees": true, "participants": true,
	"emails": true, "share_with": true, "members": true, "invitees": true, "guests": true, "attachments": true,
}

// IdentifierArgRE matches argument names that hold an identifier, a code
// or a calendar part rather than free text ("order_id", "postcode").
var IdentifierArgRE = regexp.MustCompile(`(?i)(^|_)(id|ids|number|no|code|zip|postcode|year|month|day|version)$`)

// FreeTextArgs are a tool's required top-level string arguments that hold
// free text: no enum, format or pattern, no resource names them, and their
// names say neither identifier nor recipient. An argument the schema does
// not require is no deliverable (a comment the agent may leave out).
func FreeTextArgs(t *Tool) []string {
	var schema struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
		Required   []string                              `json:"required"`
	}
	if json.Unmarshal(t.Parameters, &schema) != nil {
		return nil
	}
	named := map[string]bool{}
	for _, tmpl := range append([]string{t.Resource}, t.Resources...) {
		if tmpl == "" {
			continue
		}
		for _, a := range resourceArgs(tmpl) {
			named[a] = true
		}
	}
	var out []string
	for name, p := range schema.Properties {
		var typ string
		if json.Unmarshal(p["type"], &typ) != nil || typ != "string" {
			continue
		}
		if p["enum"] != nil || p["format"] != nil || p["pattern"] != nil || p["const"] != nil || named[name] || !contains(schema.Required, name) || RecipientArgs[name] || IdentifierArgRE.MatchString(name) {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// StoredAt is where a tool's responses store an argument in the state: the
// dot paths of "$args" (PATH.ARG) and "$args.ARG" (PATH) in their effects.
func StoredAt(t *Tool, arg string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	var walk func(x any, path string)
	walk = func(x any, path string) {
		switch x := x.(type) {
		case string:
			if x == "$args" {
				add(path + "." + arg)
			} else if x == "$args."+arg {
				add(path)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k], path+"."+k)
			}
		case []any:
			for _, e := range x {
				walk(e, path)
			}
		}
	}
	for _, r := range t.Responses {
		if r.Effects == nil {
			continue
		}
		for _, part := range []map[string]json.RawMessage{r.Effects.Set, r.Effects.Append} {
			for _, k := range sortedKeys(part) {
				if x, err := DecodeJSON(part[k]); err == nil {
					walk(x, k)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// argChecked reports whether a success assertion, a call assertion or a
// required call's pattern checks what a tool writes in an argument.
func (v *validator) argChecked(t *Tool, arg string) bool {
	s := v.s
	for _, c := range s.RequiredCalls {
		if c.Tool == t.Name && (c.Patterns[arg] != "" || len(c.Args[arg]) > 0) {
			return true
		}
	}
	for _, c := range s.Success.Calls {
		if c.Tool == t.Name && (c.Patterns[arg] != "" || len(c.Args[arg]) > 0) {
			return true
		}
	}
	for _, where := range StoredAt(t, arg) {
		for _, a := range s.Success.State {
			if a.Path != where && !strings.HasPrefix(where, a.Path+".") {
				continue
			}
			switch {
			case a.Text != nil && (len(a.Text.Contains) > 0 || len(a.Text.AnyOf) > 0 || len(a.Text.Regex) > 0):
				return true
			case a.Path == where && (len(a.Contains) > 0 || len(a.Equals) > 0):
				return true
			case a.Path != where && mentionsKey(a, strings.TrimPrefix(where, a.Path+".")):
				return true
			case a.Duration != nil && a.Path != where && (where == a.Path+"."+a.Duration.Start || where == a.Path+"."+a.Duration.End):
				return true
			}
		}
	}
	return false
}

// mentionsKey reports whether an assertion's expected objects hold the key
// (the first segment of rest): an equals or contains on the collection that
// names the argument checks it.
func mentionsKey(a StateAssertion, rest string) bool {
	key, _, _ := strings.Cut(rest, ".")
	for _, raw := range []json.RawMessage{a.Contains, a.Equals, a.EqualsSet} {
		if len(raw) == 0 {
			continue
		}
		x, err := DecodeJSON(raw)
		if err != nil {
			continue
		}
		if hasKey(x, key) {
			return true
		}
	}
	return false
}

func hasKey(x any, key string) bool {
	switch x := x.(type) {
	case map[string]any:
		if _, ok := x[key]; ok {
			return true
		}
	case []any:
		for _, e := range x {
			if hasKey(e, key) {
				return true
			}
		}
	}
	return false
}
