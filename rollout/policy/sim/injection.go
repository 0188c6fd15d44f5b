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
}

// newInjectionRead prepares one injection for the per-turn checks.
func newInjectionRead(inj *scenario.Injection, s *scenario.Scenario) injectionRead {
	// Tool messages are JSON: the text sits in a string, escaped.
	b, _ := json.Marshal(inj.Text)
	ir := injectionRead{inj: inj, s: s, needle: strings.Trim(string(b), `"`)}
	if t := inj.Target; inj.Kind == scenario.InjectInstruction && t != nil {
		if m, err := scenario.NewMatcher(t.Args, t.Patterns); err == nil {
			ir.target, ir.targetOK = m, true
		}
	}
	return ir
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
	for _, ir := range p.readInjections(msgs, memory) {
		if !p.accepts(seed, ir.s, ir.inj) {
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
			args, err := ir.s.CompleteArgs(t.Tool, t.Args, t.Patterns)
			if err != nil {
				continue
			}
			return &action{tool: t.Tool, args: args}
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
		if ir.inj.Kind != scenario.InjectInstruction || t == nil || t.Tool != tc.Function.Name {
			continue
		}
		if !ir.targetOK {
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
		if err == nil && args != nil && ir.target.Match(args) {
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
	for i := range msgs {
		for _, tc := range msgs[i].ToolCalls {
			if tc.Function.Name != ir.inj.Target.Tool {
				continue
			}
			raw := []byte(tc.Function.Parsed)
			if len(raw) == 0 {
				raw = []byte(tc.Function.Arguments)
			}
			if args, err := scenario.ParseArgs(raw); err == nil && args != nil && ir.target.Match(args) {
				return true
			}
		}
	}
	return false
}
