package sim

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// SelectionProfile parameterises a simulated selection policy: a
// behavioural model of how a checkpoint picks skills and tools, not a
// language model. Its answers are labelled simulations like every sim:
// policy's.
type SelectionProfile struct {
	Name string
	// ConvenienceBias scales the chance of taking the convenient broad path
	// (a higher-privilege skill, or the broad tool needing fewest
	// parameters) instead of the minimal one. Each setting multiplies it by
	// its pressure, and each query by a latent every profile shares.
	ConvenienceBias float64
	// Slip is the chance of an insufficient (under-privileged) choice.
	Slip float64
	// Caution is the chance of declining, and the extra chance of falling
	// short where the broad action is the justified one.
	Caution float64
	// Malformed is the chance of an answer that cannot be parsed.
	Malformed float64
	// ArgSlip is the chance that a Task 2 answer with the right tools gets
	// an item id wrong: exact by tool set, drift once executed.
	ArgSlip float64
	// Baseline names a reference selector that needs no model
	// (baseline.go); its answers ignore every other field.
	Baseline string
}

// SelectionProfiles share the names of the rollout family (base, sft,
// dpo-1, dpo-2, overcautious), so that one checkpoint name stands for one
// simulated model in both kinds of run; training lowers the bias, and so
// the fail rate.
var SelectionProfiles = []SelectionProfile{
	{Name: "base", ArgSlip: 0.12, ConvenienceBias: 0.50, Slip: 0.06, Caution: 0.02, Malformed: 0.02},
	{Name: "sft", ArgSlip: 0.10, ConvenienceBias: 0.38, Slip: 0.05, Caution: 0.02, Malformed: 0.015},
	{Name: "dpo-1", ArgSlip: 0.07, ConvenienceBias: 0.22, Slip: 0.05, Caution: 0.02, Malformed: 0.01},
	{Name: "dpo-2", ArgSlip: 0.05, ConvenienceBias: 0.10, Slip: 0.04, Caution: 0.02, Malformed: 0.01},
	{Name: "overcautious", ArgSlip: 0.04, ConvenienceBias: 0.03, Slip: 0.10, Caution: 0.30, Malformed: 0.01},
}

// settingPressure is how strongly a setting pulls toward the broad path,
// per task. A setting of the other task (Task 2's stage of the pipeline
// runs on Task 1's queries) exerts the neutral pressure 1: then the two
// stages share nothing and are independent.
var settingPressure = map[skill.Task]map[skill.Setting]float64{
	skill.TaskSkill: {
		skill.CleanBaseline:     0.3,
		skill.ScopeAmbiguous:    1.0,
		skill.LexicalAmbiguous:  1.2,
		skill.ActionImplication: 1.0,
	},
	skill.TaskTools: {
		skill.CleanBaseline:        0.3,
		skill.ConvenienceSensitive: 1.5,
		// Several named items seem to justify the bulk tool (the paper's
		// failure: a cross-resource tool instead of the narrow one per item).
		skill.BroadActionJustified: 1.2,
		skill.BoundarySensitive:    1.1,
	},
}

func pressure(task skill.Task, q *skill.Query) float64 {
	if q.Task != task {
		return 1
	}
	return settingPressure[task][q.Setting]
}

// LookupSelection finds a selection profile by name, with or without "sim:".
func LookupSelection(name string) (SelectionProfile, error) {
	name = strings.TrimPrefix(strings.TrimPrefix(name, "sim:"), "sim-")
	var names []string
	for _, p := range append(append([]SelectionProfile(nil), SelectionProfiles...), BaselineProfiles...) {
		if p.Name == name {
			return p, nil
		}
		names = append(names, "sim:"+p.Name)
	}
	return SelectionProfile{}, fmt.Errorf("unknown simulated selection policy %q (known: %s)", name, strings.Join(names, ", "))
}

// SelectionPolicy answers the prompts of skill.SkillPrompt and
// skill.ToolsPrompt for the queries of its libraries. Like Policy it is
// stateless: an answer is a function of the profile, the query recognised
// from the prompt, the task and the request seed, so it answers the same
// in-process and behind sim-server. The two tasks draw from independent
// streams, so that the pipeline's stages are independent.
type SelectionPolicy struct {
	profile SelectionProfile
	libs    map[string]*skill.Library
	queries map[string]*skill.Query // by library and request
}

// NewSelection returns the simulated selection policy of a profile over libraries.
func NewSelection(p SelectionProfile, libs ...*skill.Library) *SelectionPolicy {
	sp := &SelectionPolicy{profile: p, libs: map[string]*skill.Library{}, queries: map[string]*skill.Query{}}
	for _, l := range libs {
		sp.libs[l.Name] = l
		for i := range l.Queries {
			sp.queries[l.Name+"\x00"+l.Queries[i].Request] = &l.Queries[i]
		}
	}
	return sp
}

// Name is the policy's label, marked as a simulation.
func (p *SelectionPolicy) Name() string { return "sim:" + p.profile.Name }

// Recognise reports the selection prompt of a request, when it is one of
// this policy's.
func (p *SelectionPolicy) Recognise(req policy.Request) (skill.Prompt, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == trajectory.RoleUser {
			pr, ok := skill.ParsePrompt(req.Messages[i].Content)
			return pr, ok && p.queries[pr.Library+"\x00"+pr.Request] != nil
		}
	}
	return skill.Prompt{}, false
}

// Complete answers a selection prompt.
func (p *SelectionPolicy) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	if err := ctx.Err(); err != nil {
		return policy.Response{}, err
	}
	pr, ok := p.Recognise(req)
	if !ok {
		return policy.Response{}, fmt.Errorf("sim: not a selection prompt of the libraries %s: %w", strings.Join(p.libNames(), ", "), policy.ErrModel)
	}
	l, q := p.libs[pr.Library], p.queries[pr.Library+"\x00"+pr.Request]
	var text string
	if b := p.profile.Baseline; b != "" {
		if pr.Task == skill.TaskSkill {
			text = BaselineSkill(b, l, q)
		} else {
			text = skill.ToolsAnswer(skill.CallsFor(l, q, BaselineTools(b, l, q)))
		}
	} else if pr.Task == skill.TaskSkill {
		text = p.answerSkill(l, q, req.Seed)
	} else {
		text = p.answerTools(l, q, req.Seed)
	}
	msg := trajectory.Message{Role: trajectory.RoleAssistant, Content: text}
	return policy.Response{Message: msg, FinishReason: "stop", Usage: usage(req, msg)}, nil
}

func (p *SelectionPolicy) libNames() []string {
	var out []string
	for n := range p.libs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// choice is what an answer does.
type choice int

const (
	chooseExact choice = iota
	chooseOver
	chooseUnder
	chooseNone
	chooseMalformed
)

// selectionLatent is the query's temptation in one task, shared by every
// profile: a multiplier with mean 1.
func selectionLatent(task skill.Task, queryID string) float64 {
	u := float64(hash64("selection-latent", task, queryID)>>11) / (1 << 53)
	return 0.4 + 1.2*u
}

func uniform(parts ...any) float64 { return float64(hash64(parts...)>>11) / (1 << 53) }

// decide draws one answer's choice. The draw depends on the query, the
// task and the seed, never on the profile, so that across a family a lower
// bias turns over-reaching answers into exact ones query by query.
func (p *SelectionPolicy) decide(q *skill.Query, task skill.Task, seed int64, canOver bool) choice {
	u := uniform("selection", task, q.ID, seed)
	pr := p.profile
	pOver := 0.0
	if canOver {
		pOver = math.Min(0.9, pr.ConvenienceBias*pressure(task, q)*selectionLatent(task, q.ID))
	}
	pUnder := pr.Slip
	if q.Setting == skill.BroadActionJustified {
		pUnder += pr.Caution
	}
	for _, c := range []struct {
		p float64
		c choice
	}{{pr.Malformed, chooseMalformed}, {pr.Caution / 2, chooseNone}, {pOver, chooseOver}, {pUnder, chooseUnder}} {
		if u < c.p {
			return c.c
		}
		u -= c.p
	}
	return chooseExact
}

func (p *SelectionPolicy) answerSkill(l *skill.Library, q *skill.Query, seed int64) string {
	gt := l.Skill(q.Skill)
	var higher []*skill.Skill
	for _, s := range l.SufficientSkills(q.Needs) {
		if s.Privilege > gt.Privilege {
			higher = append(higher, s)
		}
	}
	switch p.decide(q, skill.TaskSkill, seed, len(higher) > 0) {
	case chooseMalformed:
		return "It depends on how far you want me to go with this."
	case chooseNone:
		return "none"
	case chooseOver:
		// Lexical lures pull to the top; otherwise one step or more up.
		if q.Setting == skill.LexicalAmbiguous {
			return higher[len(higher)-1].Name
		}
		return higher[int(uniform("over", q.ID, seed)*float64(len(higher)))].Name
	case chooseUnder:
		if s := underSkill(l, gt); s != nil {
			return s.Name
		}
	}
	return q.Skill
}

// underSkill is the closest insufficient skill: the one sharing most tools
// with the ground truth among those below it, else beside it.
func underSkill(l *skill.Library, gt *skill.Skill) *skill.Skill {
	var best *skill.Skill
	bestKey := [2]int{-1, -1}
	for i := range l.Skills {
		s := &l.Skills[i]
		if s.Name == gt.Name || s.Privilege > gt.Privilege {
			continue
		}
		shared := 0
		for _, t := range s.Tools {
			for _, g := range gt.Tools {
				if t == g {
					shared++
				}
			}
		}
		key := [2]int{shared, int(s.Privilege)}
		if key[0] > bestKey[0] || (key[0] == bestKey[0] && key[1] > bestKey[1]) {
			best, bestKey = s, key
		}
	}
	return best
}

func (p *SelectionPolicy) answerTools(l *skill.Library, q *skill.Query, seed int64) string {
	alt := l.ConvenientAlternative(q)
	var calls []skill.Call
	switch p.decide(q, skill.TaskTools, seed, alt != nil) {
	case chooseMalformed:
		return "I would first look the item up and then make the change."
	case chooseNone:
		return "[]"
	case chooseOver:
		calls = skill.CallsFor(l, q, alt)
	case chooseUnder:
		calls = underCalls(l, q)
	default:
		calls = q.Calls
		if uniform("args", q.ID, seed) < p.profile.ArgSlip {
			calls = slipItem(l, calls)
		}
	}
	return skill.ToolsAnswer(calls)
}

// underCalls replaces the highest-privilege ground-truth call by the
// lower-privilege tools that provide part of what it does, or by a
// lower tool on the same resource.
func underCalls(l *skill.Library, q *skill.Query) []skill.Call {
	top := q.Calls[0]
	for _, c := range q.Calls {
		if l.Tool(c.Tool).Privilege > l.Tool(top.Tool).Privilege {
			top = c
		}
	}
	tt := l.Tool(top.Tool)
	var repl []string
	for _, t := range l.Tools {
		if t.Privilege >= tt.Privilege {
			continue
		}
		for _, c := range t.Provides {
			if containsStr(tt.Provides, c) && !containsStr(repl, t.Name) {
				repl = append(repl, t.Name)
			}
		}
	}
	if len(repl) == 0 && tt.Resource != "" {
		for _, t := range l.Tools {
			if t.Privilege < tt.Privilege && t.Resource == tt.Resource {
				repl = []string{t.Name}
			}
		}
	}
	var out []skill.Call
	for _, c := range q.Calls {
		if c.Tool != top.Tool {
			out = append(out, c)
		}
	}
	for _, t := range repl {
		out = append(out, skill.Call{Tool: t, Args: skill.FillArgs(l.Tool(t), q)})
	}
	return out
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// slipItem copies calls with the item of the first call that names one
// (its tool's resource argument) changed to another item the library's
// queries name for that tool: the right tool on the wrong item.
func slipItem(l *skill.Library, calls []skill.Call) []skill.Call {
	out := append([]skill.Call(nil), calls...)
	for i, c := range calls {
		t := l.Tool(c.Tool)
		if t == nil {
			continue
		}
		m := resourceArg.FindStringSubmatch(t.Resource)
		if m == nil {
			continue
		}
		cur, ok := c.Args[m[1]]
		if !ok {
			continue
		}
		for _, q := range l.Queries {
			for _, qc := range q.Calls {
				other, has := qc.Args[m[1]]
				if qc.Tool != c.Tool || !has || other == cur {
					continue
				}
				args := map[string]any{}
				for k, v := range c.Args {
					args[k] = v
				}
				args[m[1]] = other
				out[i].Args = args
				return out
			}
		}
	}
	return out
}

var resourceArg = regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)
