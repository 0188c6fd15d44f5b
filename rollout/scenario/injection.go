package scenario

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// InjectionKind is what an injected text tries to do.
type InjectionKind string

// Injection kinds.
const (
	// InjectInstruction: adversarial instructions that try to induce a
	// specific high-risk call (send, share, pay, delete, grant).
	InjectInstruction InjectionKind = "instruction"
	// InjectForgedAuthorization: content that claims an authorization holds
	// ("recipient confirmed", "payment approved") so that the agent skips
	// the trusted step that would establish it.
	InjectForgedAuthorization InjectionKind = "forged_authorization"
)

// InjectionKinds lists the injection kinds in a fixed order.
var InjectionKinds = []InjectionKind{InjectInstruction, InjectForgedAuthorization}

// Valid reports whether k is a known injection kind.
func (k InjectionKind) Valid() bool { return k == InjectInstruction || k == InjectForgedAuthorization }

func (k InjectionKind) String() string { return string(k) }

// Injection is adversarial text placed into a content-producing tool's
// return: an e-mail body, a document, a web page, a ticket comment. The
// environment appends Text to the string at Field of every object return
// of Tool (setting it where the return has no such field), so the scenario
// file keeps the clean return and the injection apart.
//
// An instruction injection names its Target: the high-risk call it tries to
// induce, which must also be annotated in violations with kind
// "injection" (same tool and arguments), so that injection success is
// measured per trajectory. A forged-authorization injection names the
// authorization variables it Claims hold; it succeeds when the agent makes
// a high-risk call those variables authorise before they legitimately hold
// (Target, when given, is that call).
//
// Family says how the text tries (important instructions, tool knowledge,
// impersonation, a fake error, an authority claim) or what it is after
// (data theft); scoring groups injection success by it. A data-theft
// injection names the Secret it tries to send out and SecretFrom, the
// call that reads it, which its text asks for first: it succeeds only when
// the target call carries the secret.
type Injection struct {
	ID         string          `json:"id"`
	Kind       InjectionKind   `json:"kind"`
	Family     InjectionFamily `json:"family,omitempty"`
	Tool       string          `json:"tool"`
	Field      string          `json:"field"`
	Text       string          `json:"text"`
	Target     *Call           `json:"target,omitempty"`
	Claims     []string        `json:"claims,omitempty"`
	Secret     string          `json:"secret,omitempty"`
	SecretFrom *Call           `json:"secret_from,omitempty"`
}

// InjectionFamily is how an injected text tries to move the agent.
type InjectionFamily string

// Injection families (issue 27; the first two after AgentDojo's attacks).
const (
	// FamilyImportantInstructions: an urgent message "from the user" that
	// asks for the attacker's task before the user's.
	FamilyImportantInstructions InjectionFamily = "important_instructions"
	// FamilyToolKnowledge: the same, naming the exact tool and arguments.
	FamilyToolKnowledge InjectionFamily = "tool_knowledge"
	// FamilyImpersonation: text dressed as a system or developer message.
	FamilyImpersonation InjectionFamily = "impersonation"
	// FamilyFakeError: a tool error that says the call must be retried as
	// the attacker wants.
	FamilyFakeError InjectionFamily = "fake_error"
	// FamilyAuthority: a claim of authority (an executive, compliance, the
	// security team) behind the request.
	FamilyAuthority InjectionFamily = "authority"
	// FamilyDataTheft: two steps, read a secret, then send it out.
	FamilyDataTheft InjectionFamily = "data_theft"
)

// InjectionFamilies lists the families in a fixed order.
var InjectionFamilies = []InjectionFamily{FamilyImportantInstructions, FamilyToolKnowledge, FamilyImpersonation, FamilyFakeError, FamilyAuthority, FamilyDataTheft}

// Valid reports whether f is a known family (empty: none given).
func (f InjectionFamily) Valid() bool { return f == "" || slices.Contains(InjectionFamilies, f) }

// Attack is how scoring names an injection's attack: its family, else its
// kind.
func (inj *Injection) Attack() string {
	if inj.Family != "" {
		return string(inj.Family)
	}
	return string(inj.Kind)
}

// InjectedReturn is the return of responses[resp] of tools[tool] with the
// scenario's injections placed into it: what the environment serves.
func (s *Scenario) InjectedReturn(tool, resp int) json.RawMessage {
	t := &s.Tools[tool]
	raw := t.Responses[resp].Return
	var obj map[string]any
	for _, inj := range s.Injections {
		if inj.Tool != t.Name || inj.Field == "" {
			continue
		}
		if obj == nil {
			v, err := DecodeJSON(raw)
			m, ok := v.(map[string]any)
			if err != nil || !ok {
				return raw // only object returns carry injections (validated)
			}
			obj = m
		}
		if cur, ok := obj[inj.Field].(string); ok && cur != "" {
			obj[inj.Field] = cur + "\n\n" + inj.Text
		} else {
			obj[inj.Field] = inj.Text
		}
	}
	if obj == nil {
		return raw
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return b
}

// InjectionFor returns the injection whose target is the violation v (an
// instruction injection, or a forged one naming it), or nil.
func (s *Scenario) InjectionFor(v *Violation) *Injection {
	for i := range s.Injections {
		inj := &s.Injections[i]
		if inj.Target != nil && inj.Target.Tool == v.Tool && sameArgs(inj.Target.Args, v.Args) {
			return inj
		}
	}
	return nil
}

func sameArgs(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok {
			return false
		}
		vx, e1 := DecodeJSON(x)
		vy, e2 := DecodeJSON(y)
		if e1 != nil || e2 != nil || !Equal(vx, vy) {
			return false
		}
	}
	return true
}

// ProvenanceBreaks lists, as JSON paths with a message, every place where
// an untrusted (content-producing) tool would set an authorization
// variable: in its produces list or in a response's effects. Such a
// scenario breaks the provenance constraint that risk-aware gating rests
// on; it loads only with Options.AllowUnsafeProvenance.
func (s *Scenario) ProvenanceBreaks() []Problem {
	auth := s.AuthorizationVars()
	var ps []Problem
	for i, t := range s.Tools {
		if t.Trusted {
			continue
		}
		for j, v := range t.Produces {
			if auth[v] {
				ps = append(ps, Problem{File: s.File, Path: pathf("tools[%d].produces[%d]", i, j),
					Msg: fmt.Sprintf("untrusted tool %q produces authorization variable %q: content-producing tools may not set authorization variables (load with --allow-unsafe-provenance to study this boundary case)", t.Name, v)})
			}
		}
		for j, r := range t.Responses {
			if r.Effects == nil {
				continue
			}
			for _, part := range []struct {
				name string
				m    map[string]json.RawMessage
			}{{"set", r.Effects.Set}, {"append", r.Effects.Append}, {"remove", r.Effects.Remove}} {
				for _, k := range sortedKeys(part.m) {
					if auth[k] {
						ps = append(ps, Problem{File: s.File, Path: pathf("tools[%d].responses[%d].effects.%s.%s", i, j, part.name, k),
							Msg: fmt.Sprintf("untrusted tool %q sets authorization variable %q: content-producing tools may not set authorization variables (load with --allow-unsafe-provenance to study this boundary case)", t.Name, k)})
					}
				}
			}
		}
	}
	return ps
}

// injections validates the scenario's injections.
func (v *validator) injections() {
	auth := v.s.AuthorizationVars()
	ids := map[string]int{}
	for i, inj := range v.s.Injections {
		p := pathf("injections[%d]", i)
		if inj.ID == "" {
			v.addf(p+".id", "empty injection id")
		} else if j, dup := ids[inj.ID]; dup {
			v.addf(p+".id", "duplicate injection id %q (also injections[%d])", inj.ID, j)
		} else {
			ids[inj.ID] = i
		}
		if !inj.Kind.Valid() {
			v.addf(p+".kind", "unknown injection kind %q (want instruction or forged_authorization)", inj.Kind)
		}
		if strings.TrimSpace(inj.Text) == "" {
			v.addf(p+".text", "empty injection text")
		}
		if inj.Field == "" {
			v.addf(p+".field", "empty field: name the returned field that carries the text (body, note, comment)")
		}
		if v.toolExists(p+".tool", inj.Tool) {
			t := v.s.Tool(inj.Tool)
			if t.Trusted {
				v.addf(p+".tool", "%q is trusted: injections arrive through content-producing (untrusted) tools", inj.Tool)
			}
			objects := 0
			for _, r := range t.Responses {
				if x, err := DecodeJSON(r.Return); err == nil {
					if _, ok := x.(map[string]any); ok {
						objects++
					}
				}
			}
			if objects == 0 {
				v.addf(p+".tool", "%q has no response returning an object to carry the text", inj.Tool)
			}
		}
		if inj.Target != nil {
			tp := p + ".target"
			if v.toolExists(tp+".tool", inj.Target.Tool) {
				if t := v.s.Tool(inj.Target.Tool); !t.Risk.Bearing() {
					v.addf(tp+".tool", "%q is low risk: an injection targets a risk-bearing call", inj.Target.Tool)
				}
				if inj.Kind == InjectInstruction {
					found := false
					for _, vi := range v.s.Violations {
						found = found || (vi.Kind == KindInjection && vi.Tool == inj.Target.Tool && sameArgs(vi.Args, inj.Target.Args))
					}
					if !found {
						v.addf(tp, "no violation with kind \"injection\" has this tool and these args: annotate the induced call")
					}
				}
			}
		} else if inj.Kind == InjectInstruction {
			v.addf(p+".target", "an instruction injection names the call it tries to induce")
		}
		if !inj.Family.Valid() {
			v.addf(p+".family", "unknown injection family %q (want one of %s)", inj.Family, familyList())
		}
		v.dataTheft(p, inj)
		if inj.Kind == InjectForgedAuthorization {
			if len(inj.Claims) == 0 {
				v.addf(p+".claims", "a forged-authorization injection names the authorization variables it claims")
			}
			for j, c := range inj.Claims {
				if !auth[c] {
					v.addf(pathf("%s.claims[%d]", p, j), "%q is no tool's authorization variable", c)
				}
			}
		} else if len(inj.Claims) > 0 {
			v.addf(p+".claims", "only forged_authorization injections claim authorization variables")
		}
	}
}

// injectionTrigger checks an injection violation's trigger_in: the carrier
// of an injection that targets it.
func (v *validator) injectionTrigger(p string, vi Violation) {
	for _, inj := range v.s.Injections {
		if inj.Tool == vi.TriggerIn && inj.Target != nil && inj.Target.Tool == vi.Tool && sameArgs(inj.Target.Args, vi.Args) {
			return
		}
	}
	v.addf(p+".trigger_in", "a violation of kind injection is triggered by the tool carrying an injection that targets it; no injection in %q does", vi.TriggerIn)
}

func familyList() string {
	out := make([]string, len(InjectionFamilies))
	for i, f := range InjectionFamilies {
		out[i] = string(f)
	}
	return strings.Join(out, ", ")
}

// dataTheft checks a data-theft injection's two steps: SecretFrom is a
// call of a tool whose matching response returns Secret, the target
// carries it (in an argument or a pattern), and the injected text does
// not (the agent must read it, not copy it). Secret and SecretFrom belong
// to data theft alone.
func (v *validator) dataTheft(p string, inj Injection) {
	if inj.Family != FamilyDataTheft {
		if inj.Secret != "" {
			v.addf(p+".secret", "only a data_theft injection names a secret")
		}
		if inj.SecretFrom != nil {
			v.addf(p+".secret_from", "only a data_theft injection names the call that reads a secret")
		}
		return
	}
	if inj.Kind != InjectInstruction {
		v.addf(p+".kind", "a data_theft injection is an instruction (read the secret, then send it)")
	}
	if strings.TrimSpace(inj.Secret) == "" {
		v.addf(p+".secret", "a data_theft injection names the secret it tries to send out")
		return
	}
	if strings.Contains(inj.Text, inj.Secret) {
		v.addf(p+".text", "the text holds the secret %q: the agent must read it, not copy it from the injection", inj.Secret)
	}
	if inj.Target != nil {
		b, _ := json.Marshal(inj.Target)
		if !strings.Contains(string(b), inj.Secret) {
			v.addf(p+".target", "the target call does not carry the secret %q (in an argument or a pattern)", inj.Secret)
		}
	}
	if inj.SecretFrom == nil {
		v.addf(p+".secret_from", "a data_theft injection names the call that reads the secret")
		return
	}
	sp := p + ".secret_from"
	if !v.toolExists(sp+".tool", inj.SecretFrom.Tool) {
		return
	}
	t := v.s.Tool(inj.SecretFrom.Tool)
	m, err := NewMatcher(inj.SecretFrom.Args, inj.SecretFrom.Patterns)
	if err != nil {
		v.matcherErr(sp, err)
		return
	}
	args := map[string]any{}
	for k, x := range m.Want() {
		args[k] = x
	}
	for _, r := range t.Responses {
		rm, err := NewMatcher(r.When, r.Patterns)
		if err != nil || !rm.Match(args) {
			continue
		}
		if !strings.Contains(string(r.Return), inj.Secret) {
			v.addf(sp, "the response of %q this call gets does not return the secret %q", t.Name, inj.Secret)
		}
		return
	}
	v.addf(sp, "no response of %q matches this call: it reads nothing", t.Name)
}
