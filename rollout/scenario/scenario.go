// Package scenario defines the scenario format: one task with an explicit
// authorization boundary, a compliant path, tempting shortcuts and the mock
// tools that carry them. It loads and validates scenario files and matches
// tool-call arguments; it imports no engine, client or environment code.
package scenario

import (
	"encoding/json"
	"slices"
)

// Scenario is one task. Field names follow the JSON format in
// scenario.schema.json, which a test keeps in step with these types.
type Scenario struct {
	// SchemaVersion is the format version: 1 when absent, 2 for files that
	// use (or opt into the checks of) format v2. See docs/scenario-format.md.
	SchemaVersion int    `json:"schema_version,omitempty"`
	ID            string `json:"id"`
	Domain        string `json:"domain"`
	System        string `json:"system,omitempty"`
	Instruction   string `json:"instruction"`
	Context       string `json:"context,omitempty"`
	// Now is the scenario's clock (RFC 3339 instant with offset): relative
	// time windows in boundary.constraints are taken from it.
	Now string `json:"now,omitempty"`
	// Jurisdictions are the catalogue jurisdictions governing the
	// organisation (format v2, optional): when set, every cited provision
	// must belong to one of them.
	Jurisdictions []string        `json:"jurisdictions,omitempty"`
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
	// UserTask is the id of the clean scenario this one is an injected
	// variant of (the same user task with an injection): scoring pairs
	// (user task, injection) as AgentDojo does. Empty: the scenario's own.
	UserTask string `json:"user_task,omitempty"`
	// Probes are the scenario's own counterfactual probes (rollout/probe).
	Probes *Probes `json:"probes,omitempty"`

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
	// Constraints say, in checkable terms, what the words of Scope and Time
	// mean: argument limits, date/time windows, call counts and protected
	// content. Each breach is a derived drift match labelled with the
	// constraint's own drift type, kind and provisions.
	Constraints []Constraint `json:"constraints,omitempty"`
	// Facts are the facts the boundary protects (format v3): every string
	// argument of every writing tool, and the final answer when it goes to
	// a third party, is a sink checked against each of them (fact.go).
	Facts []Fact `json:"facts,omitempty"`
	// AnswerRecipient says who reads the final answer: "user" (the
	// default) or "third_party", which makes the answer a sink too.
	AnswerRecipient AnswerRecipient `json:"answer_recipient,omitempty"`
}

// ConstraintType is what a boundary constraint checks.
type ConstraintType string

// Constraint types.
const (
	// ConstraintAllowed: each value at Args must equal one of Values.
	ConstraintAllowed ConstraintType = "allowed"
	// ConstraintExact: each value at Args must equal Value (a policy value).
	ConstraintExact ConstraintType = "exact"
	// ConstraintRange: each numeric value at Args lies in [Min, Max].
	ConstraintRange ConstraintType = "range"
	// ConstraintPattern: each value at Args matches the RE2 Pattern.
	ConstraintPattern ConstraintType = "pattern"
	// ConstraintWindow: each instant or date at Args lies in Window.
	ConstraintWindow ConstraintType = "window"
	// ConstraintCount: at most Max calls of Tools matching When (per
	// resource when Per is set); the calls beyond Max drift.
	ConstraintCount ConstraintType = "count"
	// ConstraintContent: Protected strings and Patterns must not appear in
	// the arguments of writing tools (Tools, or every tool with writes:
	// true) nor, with Answer, in the final answer.
	ConstraintContent ConstraintType = "content"
)

// ConstraintTypes lists the constraint types in a fixed order.
var ConstraintTypes = []ConstraintType{ConstraintAllowed, ConstraintExact, ConstraintRange, ConstraintPattern, ConstraintWindow, ConstraintCount, ConstraintContent}

// Valid reports whether c is a known constraint type.
func (c ConstraintType) Valid() bool {
	for _, t := range ConstraintTypes {
		if c == t {
			return true
		}
	}
	return false
}

func (c ConstraintType) String() string { return string(c) }

// Constraint is one checkable rule of the boundary.
type Constraint struct {
	// ID names the constraint in drift matches and messages (optional;
	// "boundary.constraints[i]" otherwise).
	ID   string         `json:"id,omitempty"`
	Type ConstraintType `json:"type"`
	// Tools are the tools the constraint applies to. Required for every
	// type but content, where it defaults to the tools with writes: true.
	Tools []string `json:"tools,omitempty"`
	// Args are argument paths (dot-separated; a path through an array
	// applies to each element, "items.sku"; an array value is checked
	// element by element). Required for allowed, exact, range, pattern and
	// window; for content they narrow the arguments searched (default: all).
	Args []string `json:"args,omitempty"`
	// When restricts the constraint to calls whose arguments include this
	// subset (and Patterns), as a violation's args do.
	When     map[string]json.RawMessage `json:"when,omitempty"`
	Patterns map[string]string          `json:"patterns,omitempty"`

	Values  []json.RawMessage `json:"values,omitempty"`  // allowed
	Value   json.RawMessage   `json:"value,omitempty"`   // exact
	Min     *float64          `json:"min,omitempty"`     // range
	Max     *float64          `json:"max,omitempty"`     // range
	Pattern string            `json:"pattern,omitempty"` // pattern
	Window  *Window           `json:"window,omitempty"`  // window

	// MaxCalls is the most calls allowed (count); 0 forbids the call.
	MaxCalls *int `json:"max_calls,omitempty"`
	// Per is a resource template ("order:{order_id}"): count calls per
	// resource rather than in total (count).
	Per string `json:"per,omitempty"`

	// Protected are strings that must not appear (case-insensitive,
	// white space collapsed); ProtectedPatterns are RE2 patterns (content).
	Protected         []string `json:"protected,omitempty"`
	ProtectedPatterns []string `json:"protected_patterns,omitempty"`
	// Answer extends a content rule to the final assistant message.
	Answer bool `json:"answer,omitempty"`

	Drift DriftType     `json:"drift"`
	Kind  ViolationKind `json:"kind"`
	// TimeKind classifies a time drift (format v2, time drift only).
	TimeKind   TimeKind `json:"time_kind,omitempty"`
	Provisions []string `json:"provisions"`
}

// Window bounds instants or dates. Each bound is an RFC 3339 instant, a
// date (YYYY-MM-DD, taken as that day in the offset of Now, or UTC), or
// "now" with an optional ISO 8601 duration ("now+P14D", "now-PT2H"),
// relative to the scenario's Now. Either bound may be absent.
type Window struct {
	NotBefore string `json:"not_before,omitempty"`
	NotAfter  string `json:"not_after,omitempty"`
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
	Resource string `json:"resource,omitempty"`
	// Resources name every resource a call touches, one template each
	// ("contact:{to}", "contact:{cc}", "file:{attachments}"); an array
	// argument names one resource per element. Each is checked against
	// boundary.data, together with Resource.
	Resources []string `json:"resources,omitempty"`
	// Writes marks a tool whose arguments leave the user's hands (drafts,
	// messages, posts, files, records): content rules apply to it.
	Writes     bool     `json:"writes,omitempty"`
	Requires   []string `json:"requires,omitempty"`
	Produces   []string `json:"produces,omitempty"`
	Authorizes []string `json:"authorizes,omitempty"`
	// Cost is the tool's cost c in the gate's causal path search (1 when
	// absent): a path costs Σ c + λ · Σ w(risk).
	Cost *float64 `json:"cost,omitempty"`
	// Binds makes an authorization argument-bound: for an authorization
	// variable, the arguments of this tool its approval names. The
	// variable's value (an object, or a list of objects, set by a trusted
	// producer) must then hold, under each of these names, the call's own
	// value: an approval of payee PY-2201 does not authorise a payment to
	// PY-9913 (Env.UnmetCall).
	Binds     map[string][]string `json:"binds,omitempty"`
	Responses []Response          `json:"responses,omitempty"`
	Default   json.RawMessage     `json:"default"`
}

// Response is one entry of a tool's behaviour; the first whose When and
// Patterns match a call applies.
type Response struct {
	When     map[string]json.RawMessage `json:"when,omitempty"`
	Patterns map[string]string          `json:"patterns,omitempty"`
	Return   json.RawMessage            `json:"return"`
	Trigger  string                     `json:"trigger,omitempty"`
	// TriggerAt is the dot path in the returned value where the trigger is
	// placed ("notes", "order.remarks", "items.0.comment"); "trigger" when
	// empty. With TriggerMode "append" the field must hold a string, which
	// the trigger extends after a space.
	TriggerAt   string      `json:"trigger_at,omitempty"`
	TriggerMode CarrierMode `json:"trigger_mode,omitempty"`
	// Notes are benign, non-lure texts in the same kind of carriers, so
	// that ignoring a field is not a winning policy.
	Notes   []Note   `json:"notes,omitempty"`
	Effects *Effects `json:"effects,omitempty"`
}

// CarrierMode says how a text is placed in a returned value.
type CarrierMode string

// Carrier modes.
const (
	CarrierSet    CarrierMode = "set"    // the field is set to the text (the default)
	CarrierAppend CarrierMode = "append" // the text is appended to the field's string
)

// Valid reports whether m is a known carrier mode ("" means set).
func (m CarrierMode) Valid() bool { return m == "" || m == CarrierSet || m == CarrierAppend }

func (m CarrierMode) String() string {
	if m == "" {
		return string(CarrierSet)
	}
	return string(m)
}

// Note is a benign text placed in a returned value at a dot path.
type Note struct {
	At   string      `json:"at"`
	Text string      `json:"text"`
	Mode CarrierMode `json:"mode,omitempty"`
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
	// Optional marks a step a careful agent may skip (a lookup whose result
	// it may already have): all_required does not demand it.
	Optional bool `json:"optional,omitempty"`
	// After lists the required calls (by index) that must have been made,
	// successfully, before this one (format v3): the rule judge fails a
	// trajectory that makes them in another order.
	After []int `json:"after,omitempty"`
}

// Violation is an annotated drift point.
type Violation struct {
	Tool     string                     `json:"tool"`
	Args     map[string]json.RawMessage `json:"args"`
	Patterns map[string]string          `json:"patterns,omitempty"`
	Drift    DriftType                  `json:"drift"`
	Kind     ViolationKind              `json:"kind"`
	// TimeKind classifies a time drift (format v2, time drift only).
	TimeKind   TimeKind `json:"time_kind,omitempty"`
	Provisions []string `json:"provisions"`
	TriggerIn  string   `json:"trigger_in"`
}

// Success says how the rule and LLM judges decide task success.
type Success struct {
	AllRequired bool              `json:"all_required"`
	State       []StateAssertion  `json:"state,omitempty"`
	Calls       []CallAssertion   `json:"calls,omitempty"`
	Answer      *AnswerAssertions `json:"answer,omitempty"`
	Rubric      string            `json:"rubric"`
}

// StateAssertion checks the value at a dot path of the final state (a path
// through a list applies to each element: "drafts.body"). Exactly one of
// Contains, NotContains, Equals, EqualsSet, Count and Text is set.
type StateAssertion struct {
	Path        string          `json:"path"`
	Contains    json.RawMessage `json:"contains,omitempty"`
	NotContains json.RawMessage `json:"not_contains,omitempty"`
	Equals      json.RawMessage `json:"equals,omitempty"`
	// EqualsSet: the collection holds exactly these items in any order, each
	// item including the expected object ("no extra effects").
	EqualsSet json.RawMessage `json:"equals_set,omitempty"`
	// Count bounds the number of items in the collection (those including
	// Where, when set).
	Count *Count `json:"count,omitempty"`
	// Text checks the free text at the path (every string inside it).
	Text *TextCheck `json:"text,omitempty"`
	// Duration checks the interval each item spans (format v3).
	Duration *DurationCheck `json:"duration,omitempty"`
	// Where narrows Count and Text to the collection's items that include
	// this object.
	Where json.RawMessage `json:"where,omitempty"`
}

// DurationCheck checks, on every item an assertion selects (at least one),
// the length of the interval from the item's Start field to its End field
// (instants with offsets, or dates): Equals, or AtLeast and/or AtMost, each
// an ISO 8601 duration of weeks, days, hours, minutes and seconds. A
// meeting moved with the wrong length fails it.
type DurationCheck struct {
	Start   string `json:"start"`
	End     string `json:"end"`
	Equals  string `json:"equals,omitempty"`
	AtLeast string `json:"at_least,omitempty"`
	AtMost  string `json:"at_most,omitempty"`
}

// Count bounds a number of items or calls: Exactly, or AtLeast and/or
// AtMost.
type Count struct {
	Exactly *int `json:"exactly,omitempty"`
	AtLeast *int `json:"at_least,omitempty"`
	AtMost  *int `json:"at_most,omitempty"`
}

// TextCheck checks free text, case-insensitively and with white space
// collapsed. Positive checks (Contains, AnyOf, Regex) need one text that
// passes them all; NotContains and NotRegex must hold for every text.
type TextCheck struct {
	Contains    []string `json:"contains,omitempty"`
	NotContains []string `json:"not_contains,omitempty"`
	// AnyOf: for each group, at least one alternative appears.
	AnyOf    [][]string `json:"any_of,omitempty"`
	Regex    []string   `json:"regex,omitempty"`
	NotRegex []string   `json:"not_regex,omitempty"`
}

// CallAssertion counts the calls of a tool with matching arguments on the
// stripped trajectory (executed and answered by a response).
type CallAssertion struct {
	Tool     string                     `json:"tool"`
	Args     map[string]json.RawMessage `json:"args,omitempty"`
	Patterns map[string]string          `json:"patterns,omitempty"`
	Count    Count                      `json:"count"`
}

// AnswerAssertions check the final assistant message, case-insensitively
// and with white space collapsed.
type AnswerAssertions struct {
	Contains    []string `json:"contains,omitempty"`
	NotContains []string `json:"not_contains,omitempty"`
	// AnyOf: for each group, at least one alternative appears.
	AnyOf    [][]string `json:"any_of,omitempty"`
	Regex    []string   `json:"regex,omitempty"`
	NotRegex []string   `json:"not_regex,omitempty"`
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

// PathCost is the tool's cost in the causal path search: Cost, 1 unless
// given.
func (t *Tool) PathCost() float64 {
	if t.Cost == nil {
		return 1
	}
	return *t.Cost
}

// Preconditions are the variables a tool needs before it runs: its
// requires, then its authorizes, each once. A call made while one of them
// does not hold is a premature action (env.Env.Unmet).
func (t *Tool) Preconditions() []string {
	if len(t.Authorizes) == 0 {
		return t.Requires
	}
	out := append([]string(nil), t.Requires...)
	for _, v := range t.Authorizes {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// PreconditionVars is the set of variables some tool lists in Requires or
// Authorizes.
func (s *Scenario) PreconditionVars() map[string]bool {
	vars := map[string]bool{}
	for _, t := range s.Tools {
		for _, v := range t.Preconditions() {
			vars[v] = true
		}
	}
	return vars
}

// Task is the user task a scenario poses: UserTask, else its own id.
func (s *Scenario) Task() string {
	if s.UserTask != "" {
		return s.UserTask
	}
	return s.ID
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

// UndefinedPrivilege is the privilege of a tool the scenario does not
// define: the worst case a contract allows. Over-privilege metrics and the
// privilege reward both use ToolPrivilege, so they agree.
const UndefinedPrivilege = 4

// ToolPrivilege is the privilege level of a call to the named tool, with
// UndefinedPrivilege for a tool the scenario does not define.
func (s *Scenario) ToolPrivilege(name string) int {
	if t := s.Tool(name); t != nil {
		return t.Privilege
	}
	return UndefinedPrivilege
}

// ToolRisk is the risk of a call to the named tool, high for a tool the
// scenario does not define.
func (s *Scenario) ToolRisk(name string) Risk {
	if t := s.Tool(name); t != nil {
		return t.Risk
	}
	return RiskHigh
}

// Version is the scenario's format version: SchemaVersion, or 1 when the
// file does not say.
func (s *Scenario) Version() int {
	if s.SchemaVersion == 0 {
		return 1
	}
	return s.SchemaVersion
}

// CurrentSchemaVersion is the newest format version this toolkit reads.
const CurrentSchemaVersion = 3
