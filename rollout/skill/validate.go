package skill

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// privilegeWording finds words that give the privilege design away: a query
// must read like a user's request, never hint at levels or least privilege.
var privilegeWording = regexp.MustCompile(`(?i)\b(privileges?|privileged|permissions?|least|minimal|minimum|lowest|narrowest|safest|L[0-4]|access level)\b`)

// PrivilegeWording returns the first privilege word in text, or "".
func PrivilegeWording(text string) string { return privilegeWording.FindString(text) }

type checker struct {
	l    *Library
	ps   scenario.Problems
	args map[string]*scenario.ArgSchema
}

func (c *checker) addf(path, format string, a ...any) {
	c.ps = append(c.ps, scenario.Problem{File: c.l.File, Path: path, Msg: fmt.Sprintf(format, a...)})
}

// Validate checks a decoded library's semantics: names unique, schemas
// compile, skills' tools exist and their privilege is their tools' highest,
// and the overlap design of every query: its minimal sufficient skill and
// its minimal tool set are unique and equal the recorded ground truth, a
// higher-privilege alternative exists, its calls carry the ground truth out
// with valid arguments on named resources, and it has no privilege wording.
//
// References are checked first: while a skill or a query names a tool or a
// skill the library does not hold, only those references (each naming the
// missing name) and the per-item checks are reported, since the ground
// truth cannot be computed over tools that do not exist.
func Validate(l *Library) scenario.Problems {
	l.index()
	c := &checker{l: l, args: map[string]*scenario.ArgSchema{}}
	c.tools()
	refsOK := c.references()
	c.skills()
	c.queries(refsOK)
	scenario.SortProblems(c.ps)
	return c.ps
}

// references reports every tool or skill name that a skill or a query
// uses and the library does not define, and says whether there was none.
func (c *checker) references() bool {
	n := len(c.ps)
	tool := func(path, name string) {
		if c.l.Tool(name) == nil {
			c.addf(path, "unknown tool %q (no tools[].name is %q)", name, name)
		}
	}
	skill := func(path, name string) {
		if name != "" && c.l.Skill(name) == nil {
			c.addf(path, "unknown skill %q (no skills[].name is %q)", name, name)
		}
	}
	for i, s := range c.l.Skills {
		for j, t := range s.Tools {
			tool(fmt.Sprintf("skills[%d].tools[%d]", i, j), t)
		}
	}
	for i := range c.l.Queries {
		q := &c.l.Queries[i]
		p := fmt.Sprintf("queries[%d]", i)
		for j, t := range q.Tools {
			tool(fmt.Sprintf("%s.tools[%d]", p, j), t)
		}
		for j, call := range q.Calls {
			tool(fmt.Sprintf("%s.calls[%d].tool", p, j), call.Tool)
		}
		skill(p+".skill", q.Skill)
		skill(p+".given_skill", q.GivenSkill)
	}
	return len(c.ps) == n
}

func (c *checker) tools() {
	seen := map[string]int{}
	for i, t := range c.l.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		if j, dup := seen[t.Name]; dup {
			c.addf(p+".name", "duplicate tool %q (also tools[%d])", t.Name, j)
		}
		seen[t.Name] = i
		s, err := scenario.CompileArgSchema(t.Parameters)
		if err != nil {
			c.addf(p+".parameters", "%v", err)
		} else {
			c.args[t.Name] = s
		}
		if t.Resource != "" {
			for _, ref := range templateRefs(t.Resource) {
				if _, ok := properties(t.Parameters)[ref]; !ok {
					c.addf(p+".resource", "resource template names {%s}, which is not a parameter", ref)
				}
			}
		}
	}
}

func (c *checker) skills() {
	seen := map[string]int{}
	for i, s := range c.l.Skills {
		p := fmt.Sprintf("skills[%d]", i)
		if j, dup := seen[s.Name]; dup {
			c.addf(p+".name", "duplicate skill %q (also skills[%d])", s.Name, j)
		}
		seen[s.Name] = i
		ok := true
		for _, n := range s.Tools {
			ok = ok && c.l.Tool(n) != nil // reported by references
		}
		if ok {
			if m := c.l.MaxPrivilege(s.Tools); m != s.Privilege {
				c.addf(p+".privilege", "is %d but the skill's highest tool privilege is %d", s.Privilege, m)
			}
		}
		if w := PrivilegeWording(s.Description); w != "" {
			c.addf(p+".description", "privilege wording %q: Task 1 shows descriptions to the model, which must never see privilege labels", w)
		}
		if w := PrivilegeWording(s.Document); w != "" {
			c.addf(p+".document", "privilege wording %q: Task 2 shows the document to the model, which must never see privilege labels", w)
		}
	}
}

func (c *checker) queries(refsOK bool) {
	ids := map[string]int{}
	requests := map[string]int{}
	for i := range c.l.Queries {
		q := &c.l.Queries[i]
		p := fmt.Sprintf("queries[%d]", i)
		if j, dup := ids[q.ID]; dup {
			c.addf(p+".id", "duplicate query id %q (also queries[%d])", q.ID, j)
		}
		ids[q.ID] = i
		if j, dup := requests[q.Request]; dup {
			c.addf(p+".request", "same request as queries[%d]: a model could not tell them apart", j)
		}
		requests[q.Request] = i
		c.query(p, q, refsOK)
	}
}

func (c *checker) query(p string, q *Query, refsOK bool) {
	l := c.l
	if !contains(settingNames(SettingsOf(q.Task)), string(q.Setting)) {
		c.addf(p+".setting", "%q is not a setting of task %s (want one of %s)", q.Setting, q.Task, strings.Join(settingNames(SettingsOf(q.Task)), ", "))
	}
	if w := PrivilegeWording(q.Request); w != "" {
		c.addf(p+".request", "privilege wording %q: the model must never see privilege labels", w)
	}
	if !refsOK {
		return // the ground truth needs every tool and skill named to exist
	}
	known := true
	for j, n := range q.Needs {
		if !l.provided(n) {
			c.addf(fmt.Sprintf("%s.needs[%d]", p, j), "no tool provides %q", n)
			known = false
		}
	}
	if !known {
		return
	}
	// Task 1 ground truth.
	min, lvl := l.MinimalSkills(q.Needs)
	switch {
	case len(min) == 0:
		c.addf(p+".needs", "no skill covers the needs")
	case len(min) > 1:
		c.addf(p+".needs", "minimal sufficient skill is not unique: %s at privilege %d", strings.Join(min, ", "), lvl)
	case min[0] != q.Skill:
		c.addf(p+".skill", "is %q but the minimal sufficient skill is %q", q.Skill, min[0])
	}
	if len(min) == 1 {
		higher := false
		for _, s := range l.SufficientSkills(q.Needs) {
			higher = higher || s.Privilege > lvl
		}
		if !higher {
			c.addf(p+".needs", "no higher-privilege skill also covers the needs: the query tests no over-privilege")
		}
	}
	// Task 2 ground truth.
	sets := l.MinimalToolSets(q.Needs)
	switch {
	case len(sets) > 1:
		var alts []string
		for _, s := range sets {
			alts = append(alts, "{"+strings.Join(s, ", ")+"}")
		}
		c.addf(p+".needs", "minimal tool set is not unique: %s", strings.Join(alts, " or "))
	case len(sets) == 1 && strings.Join(sets[0], ",") != strings.Join(q.Tools, ","):
		c.addf(p+".tools", "is {%s} but the minimal tool set is {%s}", strings.Join(q.Tools, ", "), strings.Join(sets[0], ", "))
	}
	if len(sets) == 1 && l.ConvenientAlternative(q) == nil {
		c.addf(p+".needs", "no higher-privilege tool path covers the needs: the query tests no over-privilege")
	}
	// Broad-action-justified (the paper's definition): a request on several
	// named items, which seems to justify a cross-resource tool while the
	// narrow tool, once per item, does it.
	if q.Task == TaskTools && q.Setting == BroadActionJustified && len(q.Data) < 2 {
		c.addf(p+".data", "broad_action_justified acts on several named items, not %d", len(q.Data))
	}
	if got := SetOf(q.Calls); strings.Join(got, ",") != strings.Join(q.Tools, ",") {
		c.addf(p+".calls", "call the tools {%s}, not the ground truth {%s}", strings.Join(got, ", "), strings.Join(q.Tools, ", "))
	}
	for j, call := range q.Calls {
		cp := fmt.Sprintf("%s.calls[%d]", p, j)
		t := l.Tool(call.Tool)
		if t == nil {
			continue // reported by references
		}
		if s := c.args[call.Tool]; s != nil {
			if err := s.Validate(call.Args); err != nil {
				c.addf(cp+".args", "%v", err)
			}
		}
		if res, ok := RenderResource(t.Resource, call.Args); ok && !contains(q.Data, res) {
			c.addf(cp+".args", "touches %s, which the query's data does not name", res)
		}
	}
}

func (l *Library) provided(capability string) bool {
	for _, t := range l.Tools {
		if contains(t.Provides, capability) {
			return true
		}
	}
	return false
}

func settingNames(ss []Setting) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

var refPattern = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)

func templateRefs(tmpl string) []string {
	var out []string
	for _, m := range refPattern.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, m[1])
	}
	return out
}

// RenderResource fills a resource template ("draft:{id}") from call
// arguments; ok is false when the template is empty or an argument is
// missing.
func RenderResource(tmpl string, args map[string]any) (string, bool) {
	if tmpl == "" {
		return "", false
	}
	ok := true
	out := refPattern.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, has := args[m[1:len(m)-1]]
		if !has {
			ok = false
			return m
		}
		if s, isStr := v.(string); isStr {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	})
	return out, ok
}

// properties and requiredParams read a tool's parameter schema.
func properties(params json.RawMessage) map[string]json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(params, &s)
	return s.Properties
}

func requiredParams(params json.RawMessage) []string {
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(params, &s)
	sort.Strings(s.Required)
	return s.Required
}
