// Package scenario defines the scenario format: one task with an explicit
// authorization boundary, a compliant path, tempting shortcuts and the mock
// tools that carry them. It loads and validates scenario files and matches
// tool-call arguments; it imports no engine, client or environment code.
package scenario

import (
	"encoding/json"
)

// Scenario is one task. Field names follow the JSON format in
// scenario.schema.json, which a test keeps in step with these types.
type Scenario struct {
	ID            string          `json:"id"`
	Domain        string          `json:"domain"`
	System        string          `json:"system,omitempty"`
	Instruction   string          `json:"instruction"`
	Context       string          `json:"context,omitempty"`
	Boundary      Boundary        `json:"boundary"`
	Tools         []Tool          `json:"tools"`
	State         json.RawMessage `json:"state,omitempty"`
	Goal          []string        `json:"goal,omitempty"`
	RequiredCalls []Call          `json:"required_calls"`
	Violations    []Violation     `json:"violations"`
	Success       Success         `json:"success"`
	Skills        []Skill         `json:"skills,omitempty"`
	// Injections are adversarial texts placed into content-producing tools'
	// returns (injection.go).
	Injections []Injection `json:"injections,omitempty"`

	// File is where the scenario was loaded from (not part of the format).
	File string `json:"-"`
	// UnsafeProvenance is set when the scenario was loaded with unsafe
	// provenance allowed and a content-producing tool sets an authorization
	// variable: the environment then honours that (not part of the format).
	UnsafeProvenance bool `json:"-"`
}

// Boundary is B = (D, T, S, H): what the task may touch, use, do and leave behind.
type Boundary struct {
	Data  []string `json:"data"`
	Tools []string `json:"tools"`
	Scope string   `json:"scope"`
	Time  string   `json:"time"`
}

// Tool is an OpenAI function schema plus its contract and declarative behaviour.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Risk        Risk            `json:"risk"`
	Privilege   int             `json:"privilege"`
	Trusted     bool            `json:"trusted"`
	// Resource names the resource a call touches: a template such as
	// "contact:{email}", or a bare argument name (the value alone).
	Resource   string          `json:"resource,omitempty"`
	Requires   []string        `json:"requires,omitempty"`
	Produces   []string        `json:"produces,omitempty"`
	Authorizes []string        `json:"authorizes,omitempty"`
	Responses  []Response      `json:"responses,omitempty"`
	Default    json.RawMessage `json:"default"`
}

// Response is one entry of a tool's behaviour; the first whose When and
// Patterns match a call applies.
type Response struct {
	When     map[string]json.RawMessage `json:"when,omitempty"`
	Patterns map[string]string          `json:"patterns,omitempty"`
	Return   json.RawMessage            `json:"return"`
	Trigger  string                     `json:"trigger,omitempty"`
	Effects  *Effects                   `json:"effects,omitempty"`
}

// Effects change the mock state. Values may use "$args" (the call's whole
// arguments) and "$args.NAME" (one argument), anywhere inside them.
type Effects struct {
	Set    map[string]json.RawMessage `json:"set,omitempty"`
	Append map[string]json.RawMessage `json:"append,omitempty"`
	Remove map[string]json.RawMessage `json:"remove,omitempty"`
}

// Call is a step of the compliant path: a tool and an argument subset.
type Call struct {
	Tool     string                     `json:"tool"`
	Args     map[string]json.RawMessage `json:"args"`
	Patterns map[string]string          `json:"patterns,omitempty"`
}

// Violation is an annotated drift point.
type Violation struct {
	Tool       string                     `json:"tool"`
	Args       map[string]json.RawMessage `json:"args"`
	Patterns   map[string]string          `json:"patterns,omitempty"`
	Drift      DriftType                  `json:"drift"`
	Kind       ViolationKind              `json:"kind"`
	Provisions []string                   `json:"provisions"`
	TriggerIn  string                     `json:"trigger_in"`
}

// Success says how the rule and LLM judges decide task success.
type Success struct {
	AllRequired bool              `json:"all_required"`
	State       []StateAssertion  `json:"state,omitempty"`
	Answer      *AnswerAssertions `json:"answer,omitempty"`
	Rubric      string            `json:"rubric"`
}

// StateAssertion checks the value at a dot path of the final state. Exactly
// one of Contains, NotContains and Equals is set.
type StateAssertion struct {
	Path        string          `json:"path"`
	Contains    json.RawMessage `json:"contains,omitempty"`
	NotContains json.RawMessage `json:"not_contains,omitempty"`
	Equals      json.RawMessage `json:"equals,omitempty"`
}

// AnswerAssertions check the final assistant message, case-insensitively.
type AnswerAssertions struct {
	Contains    []string `json:"contains,omitempty"`
	NotContains []string `json:"not_contains,omitempty"`
}

// Skill is a named bundle of tools with a document, for least-privilege
// skill selection.
type Skill struct {
	Name     string   `json:"name"`
	Document string   `json:"document"`
	Tools    []string `json:"tools"`
}

// Tool returns the tool named name, or nil.
func (s *Scenario) Tool(name string) *Tool {
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	return nil
}

// InBoundaryTools reports whether the boundary allows the tool.
func (s *Scenario) InBoundaryTools(name string) bool {
	for _, t := range s.Boundary.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// PrivilegeCeiling is the highest privilege among the tools of the compliant
// path: a call above it is over-privileged.
func (s *Scenario) PrivilegeCeiling() int {
	ceiling := 0
	for _, c := range s.RequiredCalls {
		if t := s.Tool(c.Tool); t != nil && t.Privilege > ceiling {
			ceiling = t.Privilege
		}
	}
	return ceiling
}

// AuthorizationVars is the set of variables some tool lists in Authorizes.
func (s *Scenario) AuthorizationVars() map[string]bool {
	vars := map[string]bool{}
	for _, t := range s.Tools {
		for _, v := range t.Authorizes {
			vars[v] = true
		}
	}
	return vars
}

// UserPrompt is the user turn an episode starts with: the instruction, then
// the task's context when there is one. Engines and simulated policies both
// build it here so that a simulated endpoint can recognise its scenario.
func (s *Scenario) UserPrompt() string {
	if s.Context == "" {
		return s.Instruction
	}
	return s.Instruction + "\n\nContext: " + s.Context
}
