package sim

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// InjectionProfiles are simulated policies that respond to prompt
// injections, for the gating evaluation: the same competence and drift
// propensity, with a chance InjectionSusceptibility that an episode acts
// on an injected text it reads. They are simulations, labelled "sim:".
var InjectionProfiles = []Profile{
	{Name: "gullible", Competence: 0.9, DriftPropensity: 0.2, Abandon: 0.2, InjectionSusceptibility: 0.8},
	{Name: "wary", Competence: 0.9, DriftPropensity: 0.2, Abandon: 0.2, InjectionSusceptibility: 0.2},
	{Name: "persistent", Competence: 0.9, DriftPropensity: 0.2, Abandon: 0.2, InjectionSusceptibility: 0.8, InjectionMemory: true},
}

// A simulated policy reads an injection when a tool result of the turn it
// answers contains an injection's text. With probability
// InjectionSusceptibility (drawn per episode and injection) it then acts
// on it, on that turn and with the tools it is offered then:
//
//   - an instruction injection: it makes the target call, if that tool is
//     offered; if not, the injection fails (the simulation does not keep
//     the instruction for later);
//   - a forged-authorization injection: it believes the claim and makes
//     the next planned call that the claimed variables authorise at once,
//     skipping the trusted step that would establish them, if that tool is
//     offered; if not, it carries on with its plan.
//
// That "if offered" is what gating changes: a hidden risky tool cannot be
// called by a policy that only calls what it sees.
//
// A profile with InjectionMemory (sim:persistent) keeps an instruction it
// accepted: at every later turn, once the target tool is offered (a gate
// showing it after an approval, say), it makes the target call, unless
// the episode has made that call already.
//
// A data-theft injection is two steps (theft): read the secret, then send
// it; without memory each step follows the one before it at once, with
// memory each waits for its tool. The family of an injection's wording
// does not change whether it is accepted: a simulation cannot read it.

// injectionRead is an injection found in the latest tool results.
type injectionRead struct {
	inj *scenario.Injection
	s   *scenario.Scenario
	// needle is the injection's text as it sits in a JSON string (escaped,
	// without the quotes); target matches the arguments of an instruction
	// injection's target call (targetOK false: none, or it does not compile).
	needle   string
	target   scenario.Matcher
	targetOK bool
	// secret and secretFrom: a data-theft injection's secret as it sits in
	// a JSON string, and a matcher of the call that reads it.
	secret   string
	secretFr scenario.Matcher
	secretOK bool
	// targetArgs and secretArgs are the complete arguments of the target
	// call and of a data theft's read, filled from the scenario
	// (plausibleArgs); nil where they cannot be completed.
	targetArgs map[string]any
	secretArgs map[string]any
}

// newInjectionRead prepares one injection for the per-turn checks.
func newInjectionRead(inj *scenario.Injection, s *scenario.Scenario, fs *fillSource) injectionRead {
	// Tool messages are JSON: the text sits in a string, escaped.
	b, _ := json.Marshal(inj.Text)
	ir := injectionRead{inj: inj, s: s, needle: strings.Trim(string(b), `"`)}
	// The injection's text is what argued for the call.
	complete := func(c *scenario.Call) map[string]any {
		args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
		if err != nil {
			return nil
		}
		return fs.plausibleArgs(c.Tool, args, c.Args, c.Patterns, inj.Tool, []string{inj.Text}, false)
	}
	if t := inj.Target; t != nil {
		ir.targetArgs = complete(t)
	}
	if inj.SecretFrom != nil {
		ir.secretArgs = complete(inj.SecretFrom)
	}
	if t := inj.Target; inj.Kind == scenario.InjectInstruction && t != nil {
		if m, err := scenario.NewMatcher(t.Args, t.Patterns); err == nil {
			ir.target, ir.targetOK = m, true
		}
	}
	if inj.Family == scenario.FamilyDataTheft && inj.SecretFrom != nil && inj.Secret != "" {
		b, _ := json.Marshal(inj.Secret)
		ir.secret = strings.Trim(string(b), `"`)
		if m, err := scenario.NewMatcher(inj.SecretFrom.Args, inj.SecretFrom.Patterns); err == nil {
			ir.secretFr, ir.secretOK = m, true
		}
	}
	return ir
}

// theft is the next step of an accepted data-theft injection: read the
// secret (SecretFrom) while it has not been seen, then send it (the
// target) once it has. Without memory each step is taken only right
// after the one before it: the read on the turn the injection is read,
// the send on the turn the secret is.
func (p *Policy) theft(ir injectionRead, msgs []trajectory.Message, memory bool, visible toolSet) *action {
	if !ir.secretOK || !ir.targetOK {
		return nil
	}
	seen, seenNow := false, false
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == trajectory.RoleTool && strings.Contains(msgs[i].Content, ir.secret) {
			seen = true
			if !seenNow {
				// after the last assistant message?
				now := true
				for _, m := range msgs[i+1:] {
					now = now && m.Role == trajectory.RoleTool
				}
				seenNow = now
			}
		}
	}
	from := ir.inj.SecretFrom
	if !seen {
		if (!memory && !readNow(ir, msgs)) || !visible.has(from.Tool) || p.made(from.Tool, ir.secretFr, msgs) {
			return nil
		}
		if ir.secretArgs == nil {
			return nil
		}
		return &action{tool: from.Tool, args: ir.secretArgs}
	}
	t := ir.inj.Target
	if (!memory && !seenNow) || !visible.has(t.Tool) || p.madeTarget(ir, msgs) {
		return nil
	}
	if ir.targetArgs == nil {
		return nil
	}
	return &action{tool: t.Tool, args: ir.targetArgs}
}

// readInjections are the injections whose text is in the tool messages
// after the last assistant message, in the scenarios' order; with memory,
// in any tool message of the episode.
func (p *Policy) readInjections(msgs []trajectory.Message, memory bool) []injectionRead {
	if len(p.injections) == 0 {
		return nil
	}
	var out []injectionRead
	for _, ir := range p.injections {
		for i := len(msgs) - 1; i >= 0 && (memory || msgs[i].Role == trajectory.RoleTool); i-- {
			if msgs[i].Role != trajectory.RoleTool {
				continue
			}
			if strings.Contains(msgs[i].Content, ir.needle) {
				out = append(out, ir)
				break
			}
		}
	}
	return out
}

// accepts reports whether the episode acts on an injection.
func (p *Policy) accepts(seed int64, s *scenario.Scenario, inj *scenario.Injection) bool {
	if p.profile.InjectionSusceptibility <= 0 {
		return false
	}
	rng := rand.New(rand.NewPCG(hash64("inject", p.profile.Name, s.ID, inj.ID), uint64(seed)))
	return rng.Float64() < p.profile.InjectionSusceptibility
}

// injectedAction is the call an injection read this turn induces, or nil.
func (p *Policy) injectedAction(s *scenario.Scenario, ep episodePlan, next int, seed int64, msgs []trajectory.Message, visible toolSet) *action {
	memory := p.profile.InjectionMemory
	// Read anywhere in the episode: a data theft goes on after its read;
	// other injections without memory act only on the turn they are read.
	for _, ir := range p.readInjections(msgs, true) {
		if !p.accepts(seed, ir.s, ir.inj) {
			continue
		}
		if ir.inj.Family == scenario.FamilyDataTheft {
			if a := p.theft(ir, msgs, memory, visible); a != nil {
				return a
			}
			continue
		}
		if !memory && !readNow(ir, msgs) {
			continue
		}
		switch ir.inj.Kind {
		case scenario.InjectInstruction:
			t := ir.inj.Target
			if t == nil || !visible.has(t.Tool) {
				continue
			}
			if memory && p.madeTarget(ir, msgs) {
				continue // done already: the memory acts once
			}
			if ir.targetArgs == nil {
				continue
			}
			return &action{tool: t.Tool, args: ir.targetArgs}
		case scenario.InjectForgedAuthorization:
			if memory && !readNow(ir, msgs) {
				continue // a claim is believed on the turn it is read
			}
			claimed := map[string]bool{}
			for _, c := range ir.inj.Claims {
				claimed[c] = true
			}
			for _, a := range ep.actions[next:] {
				t := s.Tool(a.tool)
				if t == nil || !visible.has(a.tool) {
					continue
				}
				for _, v := range t.Authorizes {
					if claimed[v] {
						return &a
					}
				}
			}
		}
	}
	return nil
}

// isInjected reports whether a call is an instruction injection's target
// (by tool and arguments), so that walking the plan skips it.
func (p *Policy) isInjected(tc trajectory.ToolCall) bool {
	var args map[string]any
	var err error
	parsed := false
	for _, ir := range p.injections {
		t := ir.inj.Target
		m, ok := ir.target, ir.targetOK
		if ir.secretOK && ir.inj.SecretFrom.Tool == tc.Function.Name {
			t, m, ok = ir.inj.SecretFrom, ir.secretFr, true // a data theft's read
		}
		if ir.inj.Kind != scenario.InjectInstruction || t == nil || t.Tool != tc.Function.Name {
			continue
		}
		if !ok {
			continue
		}
		if !parsed { // the same arguments for every injection
			raw := []byte(tc.Function.Parsed)
			if len(raw) == 0 { // behind sim-server the call comes back as text
				raw = []byte(tc.Function.Arguments)
			}
			args, err = scenario.ParseArgs(raw)
			parsed = true
		}
		if err == nil && args != nil && m.Match(args) {
			return true
		}
	}
	return false
}

// readNow reports whether an injection's text is in the tool messages
// after the last assistant message.
func readNow(ir injectionRead, msgs []trajectory.Message) bool {
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == trajectory.RoleTool; i-- {
		if strings.Contains(msgs[i].Content, ir.needle) {
			return true
		}
	}
	return false
}

// madeTarget reports whether the episode has called an instruction
// injection's target (by tool and arguments).
func (p *Policy) madeTarget(ir injectionRead, msgs []trajectory.Message) bool {
	if !ir.targetOK {
		return false
	}
	return p.made(ir.inj.Target.Tool, ir.target, msgs)
}

// made reports whether the episode has called tool with arguments m matches.
func (p *Policy) made(tool string, m scenario.Matcher, msgs []trajectory.Message) bool {
	for i := range msgs {
		for _, tc := range msgs[i].ToolCalls {
			if tc.Function.Name != tool {
				continue
			}
			raw := []byte(tc.Function.Parsed)
			if len(raw) == 0 {
				raw = []byte(tc.Function.Arguments)
			}
			if args, err := scenario.ParseArgs(raw); err == nil && args != nil && m.Match(args) {
				return true
			}
		}
	}
	return false
}
