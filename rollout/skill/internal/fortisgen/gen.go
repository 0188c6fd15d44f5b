// Package fortisgen composes the built-in skill libraries of package skill
// (rollout/skill/builtin/*.json) from hand-written pools: per domain, the
// tools and skills, and per user intent several phrasings, the items a
// request may name (by id or by description), setting frames, openers,
// later actions, optional extras and typo variants. The JSON files are its
// output, checked in; TestGolden keeps them equal to it (-update rewrites
// them), so the data is reproducible and reviewable as data.
package fortisgen

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/skill"
)

// Seed is the seed every library is composed with.
const Seed = 20261206

// Query counts per domain: 50 per Task 1 setting (200 per domain, 600 over
// three, the paper's) and 129 per Task 2 setting (516 per domain, 1,548
// over three: at least the paper's 1,543).
const (
	SkillPerSetting = 50
	ToolsPerSetting = 129
)

// Names lists the libraries, in the order package skill lists them.
func Names() []string {
	out := make([]string, len(domains))
	for i, d := range domains {
		out[i] = d().name
	}
	return out
}

// domains are the composers of the built-in libraries.
var domains = []func() *domain{emailDomain, ecommerceDomain, filesystemDomain}

type prm struct {
	name, typ, desc string
	req             bool
	enum            []string
}

type tool struct {
	name, desc string
	lvl        skill.Level
	provides   []string
	params     []prm
	resource   string
}

type skl struct {
	name, desc, scope, allows, not string
	tools                          []string
}

// callT is one ground-truth call; argument values name slots ("{msg}")
// or are literal. each marks a call repeated for every item of a list slot.
type callT struct {
	tool string
	args map[string]string
	each bool
}

// intent is one thing a user asks for: what it needs, the calls that do
// it, and the ways users say it. A phrasing names slots in braces; {x*}
// is a list of items of kind x.
type intent struct {
	needs []string
	calls []callT
	say   []string
}

// itemT is an item a request can name: by its id (in one of the kind's id
// forms) or by a description; the argument is what the request wrote.
type itemT struct{ id, desc string }

// extra is an optional addition a boundary-sensitive request mentions,
// which the needs leave out: what it would take (caps) is beyond the
// given skill.
type extra struct {
	text string
	caps []string
	on   []string // the resources (capability prefixes) it is about; none: any
}

type domain struct {
	name, domain, description string
	tools                     []tool
	skills                    []skl
	items                     map[string][]itemT
	idForms                   map[string][]string // "message %s"
	values                    map[string][]string
	intents                   []intent // single items: Task 1 and Task 2 (clean, convenience, boundary)
	multi                     []intent // several items: broad_action_justified
	scope                     []string // scope-ambiguous frames, %s the request
	lexical                   []string // lexical-ambiguous frames
	later                     []extra  // action-implication: a later action the request does not ask for (%s: it)
	convenience               []string // convenience-sensitive frames
	justify                   []string // broad-action-justified frames
	extras                    []extra  // boundary-sensitive optional additions
	openers, closers          []string
}

func params(ps []prm) json.RawMessage {
	props := map[string]any{}
	var req []string
	for _, p := range ps {
		m := map[string]any{"type": p.typ, "description": p.desc}
		if len(p.enum) > 0 {
			m["enum"] = p.enum
		}
		props[p.name] = m
		if p.req {
			req = append(req, p.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) > 0 {
		s["required"] = req
	}
	b, _ := json.Marshal(s)
	return b
}

func risk(l skill.Level) string {
	switch {
	case l <= skill.L1Read:
		return "low"
	case l == skill.L2Modify:
		return "medium"
	}
	return "high"
}

// Build composes the library name.
func Build(name string) (*skill.Library, error) {
	for _, mk := range domains {
		if d := mk(); d.name == name {
			return d.build()
		}
	}
	return nil, fmt.Errorf("fortisgen: unknown library %q", name)
}

type composer struct {
	d    *domain
	l    *skill.Library
	r    *rand.Rand
	used map[string]bool
	n    map[skill.Task]int
	// banned are the library's skill and tool names as written and with
	// their separators as spaces: no request may contain them.
	banned []string
}

func (d *domain) build() (*skill.Library, error) {
	l := &skill.Library{Name: d.name, Domain: d.domain, Description: d.description}
	for _, t := range d.tools {
		l.Tools = append(l.Tools, skill.Tool{Name: t.name, Description: t.desc, Parameters: params(t.params),
			Privilege: t.lvl, Risk: risk(t.lvl), Provides: t.provides, Resource: t.resource})
	}
	byName := map[string]*tool{}
	for i := range d.tools {
		byName[d.tools[i].name] = &d.tools[i]
	}
	for _, s := range d.skills {
		lvl := skill.Level(0)
		for _, t := range s.tools {
			if byName[t] == nil {
				return nil, fmt.Errorf("fortisgen: %s: skill %s names unknown tool %s", d.name, s.name, t)
			}
			lvl = max(lvl, byName[t].lvl)
		}
		var doc strings.Builder
		fmt.Fprintf(&doc, "# %s\n\n%s\n\n## Scope\n\n%s\n\n## Allows\n\n%s\n\n## Does not allow\n\n%s\n\n## Tools\n\n", s.name, s.desc, s.scope, s.allows, s.not)
		for _, t := range s.tools {
			fmt.Fprintf(&doc, "- `%s`: %s\n", t, byName[t].desc)
		}
		l.Skills = append(l.Skills, skill.Skill{Name: s.name, Description: s.desc, Document: doc.String(), Privilege: lvl, Tools: s.tools})
	}
	h := fnv.New64a()
	h.Write([]byte(d.name))
	c := &composer{d: d, l: l, r: rand.New(rand.NewPCG(Seed, h.Sum64())), used: map[string]bool{}, n: map[skill.Task]int{}}
	for _, t := range l.Tools {
		c.banned = append(c.banned, t.Name, strings.ReplaceAll(t.Name, "_", " "))
	}
	for _, s := range l.Skills {
		c.banned = append(c.banned, s.Name, strings.ReplaceAll(s.Name, "-", " "))
	}
	// Touch the index before any query is checked.
	_ = l.Tool("")
	for _, set := range skill.SkillSettings {
		if err := c.setting(skill.TaskSkill, set, SkillPerSetting); err != nil {
			return nil, err
		}
	}
	for _, set := range skill.ToolSettings {
		if err := c.setting(skill.TaskTools, set, ToolsPerSetting); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// pool is the intents a task and setting draws from.
func (c *composer) pool(task skill.Task, set skill.Setting) []intent {
	if task == skill.TaskTools && set == skill.BroadActionJustified {
		return c.d.multi
	}
	var out []intent
	for _, in := range c.d.intents {
		steps := len(in.calls)
		switch {
		case task == skill.TaskTools && set == skill.CleanBaseline && steps > 2:
		case task == skill.TaskTools && set == skill.ConvenienceSensitive && steps < 2:
		default:
			out = append(out, in)
		}
	}
	return out
}

// setting writes n queries of one task and setting, cycling through the
// pool's intents in a seeded order.
func (c *composer) setting(task skill.Task, set skill.Setting, n int) error {
	pool := c.pool(task, set)
	if len(pool) == 0 {
		return fmt.Errorf("fortisgen: %s: no intents for %s/%s", c.d.name, task, set)
	}
	order := c.r.Perm(len(pool))
	var problems []string
	for i := 0; i < n; i++ {
		in := pool[order[i%len(pool)]]
		q, err := c.query(task, set, in)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		c.l.Queries = append(c.l.Queries, *q)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		problems = compact(problems)
		return fmt.Errorf("fortisgen: %s %s/%s:\n  %s", c.d.name, task, set, strings.Join(problems, "\n  "))
	}
	return nil
}

func compact(xs []string) []string {
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

var slotRef = regexp.MustCompile(`\{([a-z]+)(\*?)\}`)

// fill is one query's slot values: the text a request shows and the
// argument a call takes (the same words, or the bare id).
type fill struct {
	text map[string]string
	arg  map[string]string
	list map[string][]string // arguments of a list slot's items
}

func (c *composer) pick(xs []string) string { return xs[c.r.IntN(len(xs))] }

// ref is how a request names one item: by id in one of its kind's forms
// (about two in five) or by description.
func (c *composer) ref(kind string, it itemT) (text, arg string) {
	if forms := c.d.idForms[kind]; len(forms) > 0 && c.r.IntN(5) < 2 {
		return fmt.Sprintf(c.pick(forms), it.id), it.id
	}
	return it.desc, strings.TrimPrefix(strings.TrimPrefix(it.desc, "the "), "my ")
}

func (c *composer) fillFor(phr string, in intent) (fill, error) {
	f := fill{text: map[string]string{}, arg: map[string]string{}, list: map[string][]string{}}
	need := map[string]bool{}
	for _, m := range slotRef.FindAllStringSubmatch(phr, -1) {
		need[m[1]+m[2]] = true
	}
	for _, ct := range in.calls {
		for _, v := range ct.args {
			for _, m := range slotRef.FindAllStringSubmatch(v, -1) {
				if !need[m[1]] && !need[m[1]+"*"] {
					return f, fmt.Errorf("call argument %s: slot not in phrasing %q", v, phr)
				}
			}
		}
	}
	keys := make([]string, 0, len(need))
	for k := range need {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kind, many := strings.CutSuffix(k, "*")
		if items := c.d.items[kind]; len(items) > 0 {
			if many {
				n := 2 + c.r.IntN(3)
				idx := c.r.Perm(len(items))
				if n > len(idx) {
					n = len(idx)
				}
				var texts []string
				for _, j := range idx[:n] {
					t, a := c.ref(kind, items[j])
					texts = append(texts, t)
					f.list[kind] = append(f.list[kind], a)
				}
				f.text[k] = listText(texts)
				continue
			}
			t, a := c.ref(kind, items[c.r.IntN(len(items))])
			f.text[k], f.arg[kind] = t, a
			continue
		}
		vs := c.d.values[kind]
		if len(vs) == 0 {
			return f, fmt.Errorf("slot {%s} has no items or values", k)
		}
		v := c.pick(vs)
		f.text[k], f.arg[kind] = v, v
	}
	return f, nil
}

func listText(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func subst(s string, vals map[string]string) string {
	return slotRef.ReplaceAllStringFunc(s, func(m string) string {
		sm := slotRef.FindStringSubmatch(m)
		if v, ok := vals[sm[1]+sm[2]]; ok {
			return v
		}
		return m
	})
}

// query composes one query of an intent, retrying until its request is
// new and names no skill or tool.
func (c *composer) query(task skill.Task, set skill.Setting, in intent) (*skill.Query, error) {
	l := c.l
	min, _ := l.MinimalSkills(in.needs)
	if len(min) != 1 {
		return nil, fmt.Errorf("needs %v: minimal skills %v", in.needs, min)
	}
	gt := l.Skill(min[0])
	sets := l.MinimalToolSets(in.needs)
	if len(sets) != 1 {
		return nil, fmt.Errorf("needs %v: minimal tool sets %v", in.needs, sets)
	}
	var lastErr error
	for try := 0; try < 200; try++ {
		phr := c.pick(in.say)
		f, err := c.fillFor(phr, in)
		if err != nil {
			return nil, err
		}
		body := question(subst(phr, f.text))
		req, err := c.frame(task, set, gt, in, body)
		if err != nil {
			return nil, err
		}
		if c.r.IntN(100) < 14 {
			req = c.typo(req)
		}
		if c.used[req] {
			lastErr = fmt.Errorf("needs %v: no new request in 200 tries (last %q)", in.needs, req)
			continue
		}
		if bad := c.bannedIn(req); bad != "" {
			lastErr = fmt.Errorf("request %q names %q", req, bad)
			continue
		}
		if w := skill.PrivilegeWording(req); w != "" {
			return nil, fmt.Errorf("request %q has privilege wording %q", req, w)
		}
		c.used[req] = true
		q := &skill.Query{Task: task, Setting: set, Request: req, Needs: append([]string(nil), in.needs...), Skill: gt.Name, Tools: sets[0]}
		data := map[string]bool{}
		for _, ct := range in.calls {
			reps := 1
			var listKind string
			if ct.each {
				for _, v := range ct.args {
					if m := slotRef.FindStringSubmatch(v); m != nil && len(f.list[m[1]]) > 0 {
						listKind = m[1]
						reps = len(f.list[m[1]])
					}
				}
			}
			for r := 0; r < reps; r++ {
				args := map[string]any{}
				for k, v := range ct.args {
					vals := f.arg
					if listKind != "" {
						vals = map[string]string{}
						for kk, vv := range f.arg {
							vals[kk] = vv
						}
						vals[listKind] = f.list[listKind][r]
					}
					args[k] = c.typed(ct.tool, k, subst(v, vals))
				}
				call := skill.Call{Tool: ct.tool, Args: args}
				q.Calls = append(q.Calls, call)
				if res, ok := skill.RenderResource(l.Tool(ct.tool).Resource, args); ok {
					data[res] = true
				}
			}
		}
		if got := skill.SetOf(q.Calls); strings.Join(got, ",") != strings.Join(q.Tools, ",") {
			return nil, fmt.Errorf("needs %v: calls use %v, the minimal tool set is %v", in.needs, got, q.Tools)
		}
		for d := range data {
			q.Data = append(q.Data, d)
		}
		sort.Strings(q.Data)
		c.n[task]++
		q.ID = fmt.Sprintf("%s-%s-%04d", c.d.name, map[skill.Task]string{skill.TaskSkill: "t1", skill.TaskTools: "t2"}[task], c.n[task])
		return q, nil
	}
	return nil, lastErr
}

// typed converts an argument to its parameter's JSON type.
func (c *composer) typed(toolName, param, v string) any {
	for _, t := range c.d.tools {
		if t.name != toolName {
			continue
		}
		for _, p := range t.params {
			if p.name == param && p.typ == "integer" {
				var n int
				if _, err := fmt.Sscan(v, &n); err == nil {
					return n
				}
			}
		}
	}
	return v
}

// bannedIn returns the skill or tool name a request contains, or "".
func (c *composer) bannedIn(req string) string {
	low := strings.ToLower(req)
	for _, b := range c.banned {
		if containsWord(low, strings.ToLower(b)) {
			return b
		}
	}
	return ""
}

// containsWord reports whether s holds w with no letter on either side.
func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(w)
		if (a == 0 || !isLetter(s[a-1])) && (b == len(s) || !isLetter(s[b])) {
			return true
		}
		i = a + 1
	}
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

// covers reports whether the skill's tools provide every capability.
func covers(l *skill.Library, s *skill.Skill, caps []string) bool {
	return l.Covers(s.Tools, caps)
}

// beyond are the extras about the intent's resources whose capabilities
// the skill does not have.
func beyond(l *skill.Library, s *skill.Skill, in intent, xs []extra) []extra {
	var out []extra
	for _, x := range xs {
		if !covers(l, s, x.caps) && about(in, x) {
			out = append(out, x)
		}
	}
	return out
}

func about(in intent, x extra) bool {
	if len(x.on) == 0 {
		return true
	}
	for _, n := range in.needs {
		for _, o := range x.on {
			if strings.HasPrefix(n, o+".") {
				return true
			}
		}
	}
	return false
}

// frame puts a request body into its setting's framing, with an opener
// and a closer now and then.
func (c *composer) frame(task skill.Task, set skill.Setting, gt *skill.Skill, in intent, body string) (string, error) {
	d := c.d
	var s string
	switch {
	case set == skill.CleanBaseline:
		s = sentence(body)
	case set == skill.ScopeAmbiguous:
		s = fmt.Sprintf(c.pick(d.scope), body)
	case set == skill.LexicalAmbiguous:
		s = fmt.Sprintf(c.pick(d.lexical), body)
	case set == skill.ActionImplication:
		later := beyond(c.l, gt, in, d.later)
		if len(later) == 0 {
			return "", fmt.Errorf("needs %v: no later action beyond %s", in.needs, gt.Name)
		}
		s = sentence(body) + " " + later[c.r.IntN(len(later))].text
	case set == skill.ConvenienceSensitive:
		s = fmt.Sprintf(c.pick(d.convenience), body)
	case set == skill.BroadActionJustified:
		s = fmt.Sprintf(c.pick(d.justify), body)
	case set == skill.BoundarySensitive:
		xs := beyond(c.l, gt, in, d.extras)
		if len(xs) == 0 {
			return "", fmt.Errorf("needs %v: no optional extra beyond %s", in.needs, gt.Name)
		}
		s = sentence(body) + " " + xs[c.r.IntN(len(xs))].text
	}
	s = sentence(s)
	// An opener only where the request does not start with a frame's own
	// lead-in ("Quick one: in one go if you can: ..." reads badly).
	switch set {
	case skill.CleanBaseline, skill.ActionImplication, skill.BoundarySensitive:
		if c.r.IntN(3) == 0 {
			s = c.pick(d.openers) + " " + lowerFirst(s)
		}
	}
	if c.r.IntN(5) == 0 {
		if strings.HasSuffix(s, "\"") {
			s += "."
		}
		s = strings.TrimSpace(s + " " + c.pick(d.closers))
	}
	return s, nil
}

// questionWords open a question; question ends such a clause with "?".
var questionWords = map[string]bool{"what": true, "what's": true, "how": true, "has": true, "is": true, "are": true, "can": true,
	"could": true, "which": true, "when": true, "where": true, "where's": true, "who": true, "who's": true, "am": true, "were": true,
	"was": true, "did": true, "does": true, "do": true}

func question(s string) string {
	w := strings.Fields(strings.ToLower(s))
	if len(w) == 0 || !questionWords[strings.Trim(w[0], ",")] || strings.Contains(s, "?") {
		return s
	}
	return strings.TrimRight(s, ".") + "?"
}

// sentence capitalises and ends a clause with punctuation.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	// An address or a path keeps its case.
	if first := strings.Fields(s)[0]; !strings.ContainsAny(first, "@/") {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	switch s[len(s)-1] {
	case '.', '?', '!', ')':
		return s
	case '"':
		// A closing quote: end the sentence after it, unless the quote ends one.
		if len(s) > 1 && strings.ContainsRune(".?!", rune(s[len(s)-2])) {
			return s
		}
	}
	return s + "."
}

// lowerFirst lower-cases the first letter unless the first word looks
// like a name or an id (a capital letter after the first).
func lowerFirst(s string) string {
	w := strings.Fields(s)
	if len(w) == 0 {
		return s
	}
	first := w[0]
	if len(first) > 1 && strings.ToLower(first[1:]) != first[1:] || strings.ContainsAny(first, "0123456789@/") ||
		first == "I" || strings.HasPrefix(first, "I'") {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// misspellings are the typos users make most; typo applies one of them
// where it can, or else swaps two letters inside one plain word.
var misspellings = [][2]string{
	{"receive", "recieve"}, {"tomorrow", "tommorow"}, {"definitely", "definately"}, {"separate", "seperate"},
	{"address", "adress"}, {"calendar", "calender"}, {"necessary", "neccessary"}, {"which", "whcih"},
	{"because", "becuase"}, {"their", "thier"}, {"really", "realy"}, {"until", "untill"},
	{"appointment", "appointmnet"}, {"message", "mesage"}, {"folder", "foler"}, {"tonight", "tonite"},
	{"customer", "cusotmer"}, {"schedule", "schedlue"}, {"already", "alredy"}, {"invoice", "invocie"},
}

func (c *composer) typo(s string) string {
	words := strings.Split(s, " ")
	var cands []int
	for i, w := range words {
		for _, m := range misspellings {
			if strings.Trim(strings.ToLower(w), ".,?!:;") == m[0] {
				cands = append(cands, i)
			}
		}
	}
	if len(cands) > 0 && c.r.IntN(3) > 0 {
		i := cands[c.r.IntN(len(cands))]
		for _, m := range misspellings {
			if strings.Contains(words[i], m[0]) {
				words[i] = strings.Replace(words[i], m[0], m[1], 1)
				return strings.Join(words, " ")
			}
		}
	}
	// Swap two inner letters of a plain lower-case word of six or more.
	var plain []int
	for i, w := range words {
		if len(w) >= 6 && strings.ToLower(w) == w && strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
			plain = append(plain, i)
		}
	}
	if len(plain) == 0 {
		return s
	}
	i := plain[c.r.IntN(len(plain))]
	b := []byte(words[i])
	// Two different inner letters, so that the swap shows.
	var at []int
	for j := 1; j+2 < len(b); j++ {
		if b[j] != b[j+1] {
			at = append(at, j)
		}
	}
	if len(at) == 0 {
		return s
	}
	j := at[c.r.IntN(len(at))]
	b[j], b[j+1] = b[j+1], b[j]
	words[i] = string(b)
	return strings.Join(words, " ")
}
