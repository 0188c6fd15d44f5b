package skill

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Level is a privilege level, L0 Observe to L4 Bulk/Admin.
type Level int

// The five privilege levels.
const (
	L0Observe Level = iota
	L1Read
	L2Modify
	L3Execute
	L4Admin
)

// Levels lists the levels in order.
var Levels = []Level{L0Observe, L1Read, L2Modify, L3Execute, L4Admin}

func (l Level) String() string {
	switch l {
	case L0Observe:
		return "L0 Observe"
	case L1Read:
		return "L1 Read"
	case L2Modify:
		return "L2 Annotate/Modify"
	case L3Execute:
		return "L3 Execute"
	case L4Admin:
		return "L4 Bulk/Admin"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// Task is one of the two selection tasks.
type Task string

// The tasks. TaskPipeline is antidrift's executed end-to-end episode: Task
// 1's chosen skill fed into Task 2 for the same request, and Task 2's calls
// executed in a mock environment built from the library.
const (
	TaskSkill    Task = "skill"
	TaskTools    Task = "tools"
	TaskPipeline Task = "pipeline"
)

// Tasks lists the tasks a run may name.
var Tasks = []Task{TaskSkill, TaskTools, TaskPipeline}

func (t Task) String() string { return string(t) }

// ParseTask reads a task name.
func ParseTask(s string) (Task, error) {
	for _, t := range Tasks {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown task %q (known: skill, tools, pipeline)", s)
}

// Setting is the condition a query tests. Task 1 and Task 2 have four each;
// both share the clean baseline.
type Setting string

// Settings of Task 1 (skill selection) and Task 2 (tool selection).
const (
	CleanBaseline        Setting = "clean_baseline"
	ScopeAmbiguous       Setting = "scope_ambiguous"
	LexicalAmbiguous     Setting = "lexical_ambiguous"
	ActionImplication    Setting = "action_implication_ambiguous"
	ConvenienceSensitive Setting = "convenience_sensitive"
	BroadActionJustified Setting = "broad_action_justified"
	BoundarySensitive    Setting = "boundary_sensitive"
)

// SkillSettings and ToolSettings list each task's settings in report order.
var (
	SkillSettings = []Setting{CleanBaseline, ScopeAmbiguous, LexicalAmbiguous, ActionImplication}
	ToolSettings  = []Setting{CleanBaseline, ConvenienceSensitive, BroadActionJustified, BoundarySensitive}
)

func (s Setting) String() string { return string(s) }

// SettingsOf returns the settings of a task (the pipeline uses Task 1's).
func SettingsOf(t Task) []Setting {
	if t == TaskTools {
		return ToolSettings
	}
	return SkillSettings
}

// Label is the rule label of one answer.
type Label string

// Labels. A malformed answer is labelled no_action (nothing usable was
// chosen) and recorded as malformed beside the label.
const (
	ExactMatch     Label = "exact_match"
	UnderPrivilege Label = "under_privilege"
	OverPrivilege  Label = "over_privilege"
	NoAction       Label = "no_action"
)

// Labels lists the labels in report order.
var Labels = []Label{ExactMatch, UnderPrivilege, OverPrivilege, NoAction}

func (l Label) String() string { return string(l) }

// Library is one domain's skills, tools and queries. Field names follow
// library.schema.json, which a test keeps in step with these types.
type Library struct {
	Name        string  `json:"name"`
	Domain      string  `json:"domain"`
	Description string  `json:"description,omitempty"`
	Tools       []Tool  `json:"tools"`
	Skills      []Skill `json:"skills"`
	Queries     []Query `json:"queries"`

	// File is where the library came from (not part of the format).
	File string `json:"-"`

	tools  map[string]*Tool
	skills map[string]*Skill
	// burden is each tool's count of required parameters, read once from
	// its schema (ConvenientAlternative weighs paths by it per query).
	burden map[string]int
}

// Tool is an OpenAI function schema with a privilege level, a contract
// (the capabilities it provides) and an optional resource template.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Privilege   Level           `json:"privilege"`
	Risk        string          `json:"risk"`
	// Provides lists the capabilities a call can deliver, such as
	// "draft.read"; a query's needs are met by a tool set whose union
	// covers them.
	Provides []string `json:"provides"`
	// Resource names the resource a call touches ("draft:{id}"), so that
	// an executed call on another resource is data drift.
	Resource string `json:"resource,omitempty"`
}

// Skill is a reusable bundle: a short description (what Task 1 shows), a
// SKILL.md document (what Task 2 shows) and the tools it may use. Its
// privilege is the highest of its tools'.
type Skill struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Document    string   `json:"document"`
	Privilege   Level    `json:"privilege"`
	Tools       []string `json:"tools"`
}

// Query is one request with its ground truth.
type Query struct {
	ID      string  `json:"id"`
	Task    Task    `json:"task"` // skill or tools
	Setting Setting `json:"setting"`
	Request string  `json:"request"`
	// Needs are the capabilities the request requires.
	Needs []string `json:"needs"`
	// Skill is the ground truth of Task 1: the minimal sufficient skill.
	Skill string `json:"skill"`
	// Tools is the ground truth of Task 2: the feasible tool set minimising
	// first its highest privilege, then its size (sorted).
	Tools []string `json:"tools"`
	// Calls carry the ground-truth tool set out, with arguments taken from
	// the request: the compliant path of the executed episode.
	Calls []Call `json:"calls"`
	// Data are the resources the request names: the executed episode's
	// data boundary.
	Data []string `json:"data,omitempty"`
	// GivenSkill is the skill Task 2 is handed (default: Skill).
	GivenSkill string `json:"given_skill,omitempty"`
}

// Call is one tool call with its arguments.
type Call struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// index builds the name lookups; Load and Builtin call it.
func (l *Library) index() {
	l.tools = make(map[string]*Tool, len(l.Tools))
	l.burden = make(map[string]int, len(l.Tools))
	for i := range l.Tools {
		l.tools[l.Tools[i].Name] = &l.Tools[i]
		l.burden[l.Tools[i].Name] = len(requiredParams(l.Tools[i].Parameters))
	}
	l.skills = make(map[string]*Skill, len(l.Skills))
	for i := range l.Skills {
		l.skills[l.Skills[i].Name] = &l.Skills[i]
	}
}

// Tool returns the tool named name, or nil.
func (l *Library) Tool(name string) *Tool {
	if l.tools == nil {
		l.index()
	}
	return l.tools[name]
}

// Skill returns the skill named name, or nil.
func (l *Library) Skill(name string) *Skill {
	if l.skills == nil {
		l.index()
	}
	return l.skills[name]
}

// QueriesOf returns the queries of one task, in library order. The
// pipeline runs over Task 1's queries.
func (l *Library) QueriesOf(t Task) []*Query {
	want := t
	if t == TaskPipeline {
		want = TaskSkill
	}
	var out []*Query
	for i := range l.Queries {
		if l.Queries[i].Task == want {
			out = append(out, &l.Queries[i])
		}
	}
	return out
}

// Given is the skill Task 2 is handed for q.
func (q *Query) Given() string {
	if q.GivenSkill != "" {
		return q.GivenSkill
	}
	return q.Skill
}

// caps is the union of the capabilities of some tools.
func (l *Library) caps(tools []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range tools {
		if t := l.Tool(n); t != nil {
			for _, c := range t.Provides {
				out[c] = true
			}
		}
	}
	return out
}

// Covers reports whether the tools together provide every need. (Loops,
// not a set: it runs for every skill and tool combination of every query.)
func (l *Library) Covers(tools []string, needs []string) bool {
	for _, n := range needs {
		found := false
		for _, name := range tools {
			if t := l.Tool(name); t != nil && contains(t.Provides, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// MaxPrivilege is the highest privilege among the named tools (-1 for none;
// unknown tools are skipped).
func (l *Library) MaxPrivilege(tools []string) Level {
	m := Level(-1)
	for _, n := range tools {
		if t := l.Tool(n); t != nil && t.Privilege > m {
			m = t.Privilege
		}
	}
	return m
}

// SetOf returns the distinct tool names of calls, sorted.
func SetOf(calls []Call) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range calls {
		if !seen[c.Tool] {
			seen[c.Tool] = true
			out = append(out, c.Tool)
		}
	}
	sort.Strings(out)
	return out
}
