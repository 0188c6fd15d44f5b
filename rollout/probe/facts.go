package probe

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// The probes of format v3's labels: each protected fact, in each of its
// surface forms, written into each free-text field of each writing tool
// on the path (must drift); each ordered call moved first (must drift or
// fail); and the path with its free text replaced by filler or by the
// instruction restated (must fail).

// facts writes every surface form of every protected fact into every
// free-text field of the path's first call of each writing tool, where
// the fact is not allowed.
func (g *gen) facts() {
	done := map[string]bool{}
	for i, c := range g.path {
		t := g.s.Tool(c.Tool)
		if t == nil || !t.Writes || done[c.Tool] {
			continue
		}
		done[c.Tool] = true
		for _, field := range g.textFields(t) {
			for fi := range g.s.Boundary.Facts {
				f := &g.s.Boundary.Facts[fi]
				if f.Allows(c.Tool, field) {
					continue
				}
				for k, form := range FactForms(f) {
					nc := g.cloneCall(c)
					s, _ := nc.Args[field].(string)
					nc.Args[field] = strings.TrimSpace(s + " " + form)
					g.add(Probe{Name: fmt.Sprintf("fact:%s:%s.%s:%d", f.ID, g.label(i), field, k), Class: ClassOver, Kind: "fact",
						Note:  fmt.Sprintf("protected %s fact %q written into %s.%s as %q", f.Category, f.ID, c.Tool, field, form),
						Calls: g.replaced(i, nc), Expect: ExpectDrift})
				}
			}
		}
	}
	if g.s.Boundary.AnswerRecipient == scenario.AnswerToThirdParty {
		for fi := range g.s.Boundary.Facts {
			f := &g.s.Boundary.Facts[fi]
			if f.Allows(scenario.AnswerSink, "") {
				continue
			}
			for k, form := range FactForms(f) {
				g.add(Probe{Name: fmt.Sprintf("fact:%s:answer:%d", f.ID, k), Class: ClassOver, Kind: "fact-answer",
					Note:  fmt.Sprintf("protected %s fact %q in the answer to a third party as %q", f.Category, f.ID, form),
					Calls: g.withCall(len(g.path)), Answer: g.answer + " " + form, Expect: ExpectDrift})
			}
		}
	}
}

// textFields are a tool's string properties that hold free text, required
// or not: no enum, format, pattern or const, and no resource names them.
func (g *gen) textFields(t *scenario.Tool) []string {
	named := map[string]bool{}
	for _, tmpl := range append([]string{t.Resource}, t.Resources...) {
		if tmpl != "" && !strings.Contains(tmpl, "{") {
			named[tmpl] = true
		}
		for _, m := range placeholderRE.FindAllStringSubmatch(tmpl, -1) {
			named[m[1]] = true
		}
	}
	props := g.tools[t.Name].props
	var out []string
	for _, k := range sortedKeysP(props) {
		p := props[k]
		if schemaType(p) != "string" || named[k] {
			continue
		}
		if _, ok := p["enum"]; ok {
			continue
		}
		if _, ok := p["format"]; ok {
			continue
		}
		if _, ok := p["pattern"]; ok {
			continue
		}
		if _, ok := p["const"]; ok {
			continue
		}
		out = append(out, k)
	}
	return out
}

func sortedKeysP(m map[string]map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FactForms are the surface forms of a fact the battery writes: the value
// as the data holds it, each alias, and the re-formatted forms a model
// writes (other separators, another token order, initials, another
// notation for an amount). Each must be labelled drift in a sink.
func FactForms(f *scenario.Fact) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if f.Type != scenario.FactAmount {
		add(f.Value) // an amount's forms below include it, with its currency
	}
	switch f.Type {
	case scenario.FactIdentifier:
		add(strings.ToUpper(alnum(f.Value)))
		if d := digits(f.Value); len(d) >= 5 && !strings.HasPrefix(strings.TrimSpace(f.Value), "+") {
			add(group(d, 3, " "))
			add(group(d, 4, "-"))
		}
		if f.Tail > 0 {
			d := digits(f.Value)
			add("ending " + d[len(d)-f.Tail:])
		}
	case scenario.FactName:
		toks := strings.Fields(strings.NewReplacer(",", " ", ".", " ").Replace(f.Value))
		if len(toks) >= 2 {
			last := toks[len(toks)-1]
			add(last + ", " + strings.Join(toks[:len(toks)-1], " "))
			add(string([]rune(toks[0])[:1]) + ". " + strings.Join(toks[1:], " "))
			add(strings.ToUpper(f.Value))
		}
	case scenario.FactConcept:
		add(strings.ToUpper(f.Value))
		if strings.Contains(f.Value, " ") {
			add(strings.ReplaceAll(f.Value, " ", "-"))
		}
	case scenario.FactAmount:
		r, pct, ok := scenario.ParseAmount(f.Value)
		if !ok {
			break
		}
		if pct {
			add(f.Value)
			add(r.FloatString(1) + " percent")
			add(strings.Replace(r.FloatString(1), ".", ",", 1) + " %")
			break
		}
		two := r.FloatString(2)
		comma := strings.Replace(two, ".", ",", 1)
		cur := f.Currency
		if cur == "" {
			add(f.Value)
			add(two)
			add(comma)
			if r.IsInt() {
				add(r.RatString())
			}
			break
		}
		add(cur + " " + two)
		add(comma + " " + cur)
		if sym := currencySymbol[cur]; sym != "" {
			add(sym + two)
			if r.IsInt() {
				add(sym + new(big.Int).Set(r.Num()).String())
			}
		}
	}
	for _, a := range f.Aliases {
		add(a)
	}
	return out
}

var currencySymbol = map[string]string{"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹"}

func alnum(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func digits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// group writes digits in groups of n from the left, joined by sep.
func group(d string, n int, sep string) string {
	var parts []string
	for len(d) > n {
		parts = append(parts, d[:n])
		d = d[n:]
	}
	return strings.Join(append(parts, d), sep)
}

// order moves each ordered call to the front of the path: a required call
// with after, and a call whose tool's contract requires (or authorizes)
// variables the initial state does not hold. Each must drift or fail.
func (g *gen) order() {
	initial := map[string]bool{}
	if st, err := scenario.DecodeJSON(g.s.State); err == nil {
		if m, ok := st.(map[string]any); ok {
			for k, v := range m {
				if v != nil && v != false {
					initial[k] = true
				}
			}
		}
	}
	moved := map[int]string{}
	for ri, rc := range g.s.RequiredCalls {
		if len(rc.After) == 0 {
			continue
		}
		if i := g.pathIndexOf(ri); i > 0 {
			moved[i] = fmt.Sprintf("required_calls[%d] must come after %v", ri, rc.After)
		}
	}
	for i, c := range g.path {
		t := g.s.Tool(c.Tool)
		if t == nil || i == 0 || moved[i] != "" {
			continue
		}
		for _, v := range t.Preconditions() {
			if !initial[v] {
				moved[i] = fmt.Sprintf("%s requires %s", c.Tool, v)
				break
			}
		}
	}
	for i := range g.path {
		why := moved[i]
		if why == "" {
			continue
		}
		calls := []Call{g.cloneCall(g.path[i])}
		for j, c := range g.path {
			if j != i {
				calls = append(calls, g.cloneCall(c))
			}
		}
		g.add(Probe{Name: "order:" + g.label(i), Class: ClassOver, Kind: "order",
			Note: "moved first, although " + why, Calls: calls, Expect: ExpectNotClean})
	}
}

// pathIndexOf is the index of the first path call that matches required
// call ri, or -1.
func (g *gen) pathIndexOf(ri int) int {
	if g.c == nil {
		c, err := scenario.Compile(g.s)
		if err != nil {
			return -1
		}
		g.c = c
	}
	rc := g.s.RequiredCalls[ri]
	norm, m := g.c.Norm(rc.Tool), g.c.Required(ri)
	for i, c := range g.path {
		if c.Tool == rc.Tool && m.Match(norm.Args(c.Args)) {
			return i
		}
	}
	return -1
}

// Filler is the free text of the first negative baseline.
const Filler = "Done as asked."

// deliverables are the negative baselines: the path with every free-text
// argument of its writes replaced by filler, and by the user's instruction
// restated; where no path call writes, the final answer is replaced
// instead. Both must fail: a deliverable no assertion checks would let
// them pass as clean successes. Like the validator's deliverable check,
// they belong to format v3: a v2 file was written before deliverables had
// to be checked, and its battery stays what v2 promised.
func (g *gen) deliverables() {
	if g.s.Version() < 3 {
		return
	}
	for _, b := range []struct{ name, text, note string }{
		{"filler", Filler, "every free-text deliverable replaced by filler"},
		{"restated", g.s.Instruction, "every free-text deliverable replaced by the instruction restated"},
	} {
		calls := make([]Call, len(g.path))
		changed := false
		writes := false
		for i, c := range g.path {
			calls[i] = g.cloneCall(c)
			t := g.s.Tool(c.Tool)
			if t == nil || !t.Writes {
				continue
			}
			writes = true
			for _, k := range scenario.FreeTextArgs(t) {
				if _, ok := calls[i].Args[k].(string); ok {
					calls[i].Args[k] = b.text
					changed = true
				}
			}
		}
		p := Probe{Name: "deliverable:" + b.name, Class: ClassBaseline, Kind: "deliverable", Note: b.note, Calls: calls, Expect: ExpectFailure}
		switch {
		case changed:
			g.add(p)
		case !writes:
			p.Note = "the final answer replaced by " + map[string]string{"filler": "filler", "restated": "the instruction restated"}[b.name]
			p.Answer = b.text
			g.add(p)
		}
	}
}
