package sim

import (
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/skill"
)

// Baseline selectors are reference policies for skill selection that need
// no model: what a rule, word overlap or a fixed privilege preference
// scores on a library. Reported beside every model, they show how much of
// a model's score a library gives away: a library a keyword rule solves
// does not measure least-privilege judgement, and FR alone rewards picking
// low (under-privilege is not in FR), hence UPR beside it.
//
// They read what the prompt shows (the request, the skills' names and
// descriptions, the tools' names and descriptions), except lowest and
// highest, which also read the library's privilege levels (a prompt never
// shows them): they are the references for "always pick low" and "always
// pick high". Every answer is deterministic (no seed, no draw).
const (
	BaselineKeyword = "keyword" // verb classes of the request met by a skill's or tool's verbs
	BaselineOverlap = "overlap" // most content words shared with the request
	BaselineLowest  = "lowest"  // the lowest-privilege candidate on the request's object
	BaselineHighest = "highest" // the highest-privilege candidate on the request's object
)

// BaselineProfiles are the baseline selectors as selection profiles
// (sim:keyword, sim:overlap, sim:lowest, sim:highest).
var BaselineProfiles = []SelectionProfile{
	{Name: BaselineKeyword, Baseline: BaselineKeyword},
	{Name: BaselineOverlap, Baseline: BaselineOverlap},
	{Name: BaselineLowest, Baseline: BaselineLowest},
	{Name: BaselineHighest, Baseline: BaselineHighest},
}

// verbClasses are the keyword rule's verbs, by the kind of action they ask for.
var verbClasses = map[string][]string{
	"read":   {"read", "open", "show", "view", "see", "look", "check", "list", "find", "get", "fetch", "search", "review", "pull", "count", "number", "many", "tell", "latest"},
	"write":  {"edit", "change", "update", "modify", "rename", "retitle", "fix", "correct", "set", "move", "add", "create", "write", "make", "tag", "assign", "organise", "organize"},
	"delete": {"delete", "remove", "purge", "erase", "cancel", "drop", "clear", "archive", "trash", "discard"},
	"send":   {"send", "share", "forward", "email", "post", "publish", "notify", "invite", "reply"},
	"manage": {"manage", "anything", "every", "all", "admin", "bulk"},
}

var verbClassOf = func() map[string]string {
	m := map[string]string{}
	for c, ws := range verbClasses {
		for _, w := range ws {
			m[stem(w)] = c
		}
	}
	return m
}()

// classesOf are the verb classes of a text's words.
func classesOf(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range allWords(text) {
		if c, ok := verbClassOf[stem(w)]; ok {
			out[c] = true
		}
	}
	return out
}

// allWords are a text's lower-case words, underscores and hyphens split.
func allWords(text string) []string {
	return contentWords(strings.NewReplacer("_", " ", "-", " ").Replace(text))
}

// wordSet is the stems of a text's content words.
func wordSet(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range allWords(text) {
		out[stem(w)] = true
	}
	return out
}

// shared counts the stems two sets share.
func shared(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// candidate is a skill or tool as a baseline sees it.
type candidate struct {
	name      string
	words     map[string]bool // name and description
	classes   map[string]bool
	privilege skill.Level
	order     int // library order
}

func skillCandidates(l *skill.Library) []candidate {
	out := make([]candidate, len(l.Skills))
	for i, s := range l.Skills {
		text := s.Name + " " + s.Description
		out[i] = candidate{name: s.Name, words: wordSet(text), classes: classesOf(text), privilege: s.Privilege, order: i}
	}
	return out
}

func toolCandidates(l *skill.Library) []candidate {
	out := make([]candidate, len(l.Tools))
	for i, t := range l.Tools {
		text := t.Name + " " + t.Description
		out[i] = candidate{name: t.Name, words: wordSet(text), classes: classesOf(text), privilege: t.Privilege, order: i}
	}
	return out
}

// baselinePick chooses among candidates for a request; ok is false when
// there is no candidate. Task 1 takes the one pick; Task 2 takes every
// pick keywordTools returns for the keyword rule, else the one pick.
func baselinePick(kind string, cs []candidate, request string) (candidate, bool) {
	if len(cs) == 0 {
		return candidate{}, false
	}
	req := wordSet(request)
	// The request's object: the candidates sharing most words with it
	// (every candidate when none shares a word).
	best := 0
	for _, c := range cs {
		best = max(best, shared(req, c.words))
	}
	var on []candidate
	for _, c := range cs {
		if shared(req, c.words) == best {
			on = append(on, c)
		}
	}
	switch kind {
	case BaselineOverlap:
		// Most shared words, ties in library order.
		return on[0], true
	case BaselineLowest, BaselineHighest:
		// On the request's object (sharing any word), by privilege.
		var pool []candidate
		for _, c := range cs {
			if shared(req, c.words) > 0 {
				pool = append(pool, c)
			}
		}
		if len(pool) == 0 {
			pool = cs
		}
		sort.SliceStable(pool, func(i, j int) bool {
			if kind == BaselineLowest {
				return pool[i].privilege < pool[j].privilege
			}
			return pool[i].privilege > pool[j].privilege
		})
		return pool[0], true
	}
	// Keyword: the request's verb classes, met by the candidate with the
	// fewest classes that has them all (a reader for "show", an editor for
	// "change"), among those sharing a word with the request; failing
	// that, the one meeting most of them.
	rc := classesOf(request)
	pick, pickKey := candidate{}, [4]int{-1, 0, 0, 0}
	for _, c := range cs {
		if shared(req, c.words) == 0 && best > 0 {
			continue
		}
		met := 0
		for k := range rc {
			if c.classes[k] {
				met++
			}
		}
		all := 0
		if met == len(rc) {
			all = 1
		}
		// All classes met first, then most met, then most words of the
		// request (its object), then fewest classes beyond.
		key := [4]int{all, met, shared(req, c.words), -len(c.classes)}
		if better(key, pickKey) {
			pick, pickKey = c, key
		}
	}
	if pickKey[0] < 0 {
		return on[0], true
	}
	return pick, true
}

// keywordTools is the keyword rule's Task 2 answer: per verb class of the
// request, the tool on its object with that class and the fewest others.
func keywordTools(cs []candidate, request string) []string {
	req := wordSet(request)
	var out []string
	classes := make([]string, 0, len(verbClasses))
	for c := range classesOf(request) {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, k := range classes {
		var best *candidate
		for i := range cs {
			c := &cs[i]
			if !c.classes[k] || shared(req, c.words) == 0 {
				continue
			}
			if best == nil || len(c.classes) < len(best.classes) ||
				(len(c.classes) == len(best.classes) && shared(req, c.words) > shared(req, best.words)) {
				best = c
			}
		}
		if best != nil && !containsStr(out, best.name) {
			out = append(out, best.name)
		}
	}
	if len(out) == 0 {
		if c, ok := baselinePick(BaselineOverlap, cs, request); ok {
			out = []string{c.name}
		}
	}
	sort.Strings(out)
	return out
}

// BaselineSkill is a baseline's Task 1 answer for q: a skill name.
func BaselineSkill(kind string, l *skill.Library, q *skill.Query) string {
	c, ok := baselinePick(kind, skillCandidates(l), q.Request)
	if !ok {
		return "none"
	}
	return c.name
}

// BaselineTools is a baseline's Task 2 tool set for q.
func BaselineTools(kind string, l *skill.Library, q *skill.Query) []string {
	cs := toolCandidates(l)
	if kind == BaselineKeyword {
		return keywordTools(cs, q.Request)
	}
	c, ok := baselinePick(kind, cs, q.Request)
	if !ok {
		return nil
	}
	return []string{c.name}
}

// better compares keys lexicographically.
func better(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}
