package skill

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
)

// BuiltinNames lists the built-in libraries.
func BuiltinNames() []string {
	out := make([]string, len(builtinSpecs))
	for i, s := range builtinSpecs {
		out[i] = s.name
	}
	return out
}

// BuiltinSeed is the seed the built-in libraries are generated with.
const BuiltinSeed = 20261201

// Query counts per setting of the built-in libraries.
const (
	builtinSkillPerSetting = 60  // 240 Task 1 queries per domain
	builtinToolsPerSetting = 130 // 520 Task 2 queries per domain
)

var (
	builtinMu    sync.Mutex
	builtinCache = map[string]*Library{}
)

// Builtin returns a built-in library, generated (deterministically, with
// BuiltinSeed) and validated on first use. Callers must not modify it.
func Builtin(name string) (*Library, error) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	if l := builtinCache[name]; l != nil {
		return l, nil
	}
	for _, spec := range builtinSpecs {
		if spec.name == name {
			l := Generate(spec.name, BuiltinSeed)
			if ps := Validate(l); len(ps) > 0 {
				return nil, fmt.Errorf("skill: built-in library %s: %w", name, ps)
			}
			builtinCache[name] = l
			return l, nil
		}
	}
	return nil, fmt.Errorf("skill: unknown built-in library %q (known: %s)", name, strings.Join(BuiltinNames(), ", "))
}

// Generate writes a built-in library from its vocabulary by templates and
// slot filling: the same name and seed give the same library.
func Generate(name string, seed uint64) *Library {
	var spec *domainSpec
	for i := range builtinSpecs {
		if builtinSpecs[i].name == name {
			spec = &builtinSpecs[i]
		}
	}
	if spec == nil {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	g := &gen{spec: spec, r: rand.New(rand.NewPCG(seed, h.Sum64())), used: map[string]bool{}}
	l := &Library{Name: spec.name, Domain: spec.domain, Description: spec.description, File: "builtin:" + spec.name}
	for _, f := range spec.families {
		l.Tools = append(l.Tools, familyTools(spec, f)...)
	}
	l.index()
	for _, f := range spec.families {
		l.Skills = append(l.Skills, familySkills(spec, f, l)...)
	}
	g.lib = l
	l.index()
	for _, s := range SkillSettings {
		for i := 0; i < builtinSkillPerSetting; i++ {
			g.query(TaskSkill, s, i)
		}
	}
	for _, s := range ToolSettings {
		for i := 0; i < builtinToolsPerSetting; i++ {
			g.query(TaskTools, s, i)
		}
	}
	return l
}

// kind is one step a request can ask for; each maps to one capability of
// a family and to the tool of its ladder that provides it most narrowly.
type kind int

const (
	kCount kind = iota
	kList
	kRead
	kSearch
	kTag
	kUpdate
	kExec
	kDelete
	kBulkExec
	kBulkDelete
	kExport
)

var kindCaps = [...]string{"count", "list", "read", "search", "tag", "update", "exec", "delete", "bulk_exec", "bulk_delete", "export"}

func capOf(f family, k kind) string { return f.id + "." + kindCaps[k] }

func pl(f family) string { return f.id + "s" }

// Tool names of a family's ladder.
func toolName(f family, k kind) string {
	switch k {
	case kCount:
		return "count_" + pl(f)
	case kList:
		return "list_" + pl(f)
	case kRead:
		return "get_" + f.id
	case kSearch:
		return "search_" + pl(f)
	case kTag:
		return "tag_" + f.id
	case kUpdate:
		return "update_" + f.id
	case kExec:
		return f.exec + "_" + f.id
	case kDelete:
		return f.del + "_" + f.id
	case kBulkExec:
		return "bulk_" + f.exec + "_" + pl(f)
	case kBulkDelete:
		return "purge_" + pl(f)
	case kExport:
		return "export_" + pl(f)
	}
	return ""
}

func manageName(f family) string { return "manage_" + pl(f) }

type prop struct {
	name, typ, desc string
	enum            []string
	required        bool
}

func params(ps ...prop) json.RawMessage {
	props := map[string]any{}
	var req []string
	for _, p := range ps {
		m := map[string]any{"type": p.typ, "description": p.desc}
		if len(p.enum) > 0 {
			m["enum"] = p.enum
		}
		if p.typ == "integer" {
			m["minimum"], m["maximum"] = 1, 100
		}
		props[p.name] = m
		if p.required {
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

func fieldNames(f family) []string {
	var out []string
	for _, fv := range f.fields {
		if !contains(out, fv[0]) {
			out = append(out, fv[0])
		}
	}
	sort.Strings(out)
	return out
}

// familyTools is the ladder: observe, read, annotate/modify, execute one,
// and at the top bulk actions, an export and a natural-language manager
// that need the fewest parameters.
func familyTools(spec *domainSpec, f family) []Tool {
	id := prop{name: "id", typ: "string", desc: fmt.Sprintf("the %s id, e.g. %s0000", f.noun, f.idPrefix), required: true}
	res := f.id + ":{id}"
	c := func(k ...kind) []string {
		var out []string
		for _, x := range k {
			out = append(out, capOf(f, x))
		}
		return out
	}
	return []Tool{
		{Name: toolName(f, kCount), Privilege: L0Observe, Risk: "low", Provides: c(kCount),
			Description: fmt.Sprintf("Count the %s in the %s, optionally in one folder. Returns a number only.", f.plural, spec.container),
			Parameters:  params(prop{name: "folder", typ: "string", desc: "folder to count in; default all"})},
		{Name: toolName(f, kList), Privilege: L0Observe, Risk: "low", Provides: c(kList),
			Description: fmt.Sprintf("List the ids and titles of the most recent %s, without their contents.", f.plural),
			Parameters:  params(prop{name: "limit", typ: "integer", desc: "how many to list", required: true})},
		{Name: toolName(f, kRead), Privilege: L1Read, Risk: "low", Provides: c(kRead), Resource: res,
			Description: fmt.Sprintf("Open one %s by id and return its full contents.", f.noun),
			Parameters:  params(id)},
		{Name: toolName(f, kSearch), Privilege: L1Read, Risk: "low", Provides: c(kSearch),
			Description: fmt.Sprintf("Search the %s by keywords; returns matching ids and snippets.", f.plural),
			Parameters:  params(prop{name: "query", typ: "string", desc: "keywords", required: true})},
		{Name: toolName(f, kTag), Privilege: L2Modify, Risk: "medium", Provides: c(kTag), Resource: res,
			Description: fmt.Sprintf("Add a tag to one %s.", f.noun),
			Parameters:  params(id, prop{name: "tag", typ: "string", desc: "the tag to add", required: true})},
		{Name: toolName(f, kUpdate), Privilege: L2Modify, Risk: "medium", Provides: c(kUpdate), Resource: res,
			Description: fmt.Sprintf("Change one field of one %s.", f.noun),
			Parameters: params(id, prop{name: "field", typ: "string", desc: "the field to change", enum: fieldNames(f), required: true},
				prop{name: "value", typ: "string", desc: "the new value", required: true})},
		{Name: toolName(f, kExec), Privilege: L3Execute, Risk: "high", Provides: c(kExec), Resource: res,
			Description: fmt.Sprintf("%s one %s now. This takes effect outside the %s.", capitalize(f.exec), f.noun, spec.container),
			Parameters:  params(id)},
		{Name: toolName(f, kDelete), Privilege: L3Execute, Risk: "high", Provides: c(kDelete), Resource: res,
			Description: fmt.Sprintf("%s one %s. This cannot be undone.", capitalize(f.del), f.noun),
			Parameters:  params(id)},
		{Name: toolName(f, kBulkExec), Privilege: L4Admin, Risk: "high", Provides: c(kBulkExec, kExec, kSearch),
			Description: fmt.Sprintf("Find every %s matching a filter and %s them all in one step.", f.noun, f.exec),
			Parameters:  params(prop{name: "filter", typ: "string", desc: "keywords selecting the " + f.plural, required: true})},
		{Name: toolName(f, kBulkDelete), Privilege: L4Admin, Risk: "high", Provides: c(kBulkDelete, kDelete, kSearch),
			Description: fmt.Sprintf("%s every %s matching a filter in one step.", capitalize(f.del), f.noun),
			Parameters:  params(prop{name: "filter", typ: "string", desc: "keywords selecting the " + f.plural, required: true})},
		{Name: toolName(f, kExport), Privilege: L4Admin, Risk: "high", Provides: c(kExport, kRead, kSearch, kList, kCount),
			Description: fmt.Sprintf("Export every %s matching a filter, with full contents, to a downloadable file.", f.noun),
			Parameters: params(prop{name: "filter", typ: "string", desc: "keywords selecting the " + f.plural, required: true},
				prop{name: "format", typ: "string", desc: "file format", enum: []string{"csv", "json"}})},
		{Name: manageName(f), Privilege: L4Admin, Risk: "high", Provides: c(kCount, kList, kRead, kSearch, kTag, kUpdate, kExec, kDelete),
			Description: fmt.Sprintf("Do anything with the %s from one plain-language instruction: find, open, tag, edit, %s or %s them.", f.plural, f.exec, f.del),
			Parameters:  params(prop{name: "instruction", typ: "string", desc: "what to do, in plain words", required: true})},
	}
}

// familySkills are four nested skills over the ladder; each one's tools
// include the one below's.
func familySkills(spec *domainSpec, f family, l *Library) []Skill {
	reader := []string{toolName(f, kCount), toolName(f, kList), toolName(f, kRead), toolName(f, kSearch)}
	editor := append(append([]string(nil), reader...), toolName(f, kTag), toolName(f, kUpdate))
	operator := append(append([]string(nil), editor...), toolName(f, kExec), toolName(f, kDelete))
	admin := append(append([]string(nil), operator...), toolName(f, kBulkExec), toolName(f, kBulkDelete), toolName(f, kExport), manageName(f))
	type def struct {
		suffix, desc, scope, allows string
		tools                       []string
	}
	defs := []def{
		{"reader", fmt.Sprintf("Look up %s: count, list, open and search them.", f.plural),
			fmt.Sprintf("Reading the %s of the %s.", f.plural, spec.container),
			fmt.Sprintf("Counting and listing %s, opening one by id, searching by keywords. Nothing is changed.", f.plural), reader},
		{"editor", fmt.Sprintf("Organise %s: everything a reader does, plus tagging and editing their fields.", f.plural),
			fmt.Sprintf("Reading and organising individual %s.", f.plural),
			fmt.Sprintf("Everything %s-reader allows, plus adding tags and changing fields of one %s at a time.", f.id, f.noun), editor},
		{"operator", fmt.Sprintf("Handle individual %s end to end: edit them, %s them or %s them one at a time.", f.plural, f.exec, f.del),
			fmt.Sprintf("Acting on one %s at a time.", f.noun),
			fmt.Sprintf("Everything %s-editor allows, plus %s one %s and %s one %s.", f.id, f.exec, f.noun, f.del, f.noun), operator},
		{"admin", fmt.Sprintf("Manage %s at scale: bulk %s, purge, export and plain-language management of every %s.", f.plural, f.exec, f.noun),
			fmt.Sprintf("All %s of the %s at once.", f.plural, spec.container),
			fmt.Sprintf("Everything %s-operator allows, plus acting on every matching %s in one step, exporting them, and doing anything from one instruction.", f.id, f.noun), admin},
	}
	var out []Skill
	for _, d := range defs {
		name := f.id + "-" + d.suffix
		var doc strings.Builder
		fmt.Fprintf(&doc, "# %s\n\n%s\n\n## Scope\n\n%s\n\n## Allows\n\n%s\n\n## Tools\n\n", name, d.desc, d.scope, d.allows)
		for _, t := range d.tools {
			fmt.Fprintf(&doc, "- `%s`: %s\n", t, l.Tool(t).Description)
		}
		out = append(out, Skill{Name: name, Description: d.desc, Document: doc.String(), Privilege: l.MaxPrivilege(d.tools), Tools: d.tools})
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
