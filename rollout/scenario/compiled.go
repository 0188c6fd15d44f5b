package scenario

import (
	"encoding/json"
	"fmt"
)

// Compiled is a scenario compiled once for everything that reads it: each
// tool's argument schema, normalisers and response matchers, the matchers
// of the violations, the required calls and the call assertions (literals
// normalised for their tool), the boundary constraints, and the protected
// facts with the ones the prompt already shows. The environment, the drift
// detector, the rule judge and the probe battery all take it (env.CompileFrom,
// drift.NewDetectorFrom), so that a scenario is compiled once per run and
// every consumer compares values the same way. It is read-only and safe
// for concurrent use.
type Compiled struct {
	S           *Scenario
	tools       map[string]*CompiledTool
	violations  []Matcher
	required    []Matcher
	calls       []Matcher
	Constraints []*CompiledConstraint
	Facts       []*CompiledFact
	// PromptFacts[i]: fact i appears in the system prompt or the user turn.
	PromptFacts []bool
}

// CompiledTool is one tool of a compiled scenario.
type CompiledTool struct {
	T      *Tool
	Schema *ArgSchema
	Norm   Normalizers
	// Responses are the matchers of T.Responses, in order.
	Responses []Matcher
}

// Compile compiles a scenario. A loaded (validated) scenario always
// compiles; an error names the part that does not.
func Compile(s *Scenario) (*Compiled, error) {
	c := &Compiled{S: s, tools: make(map[string]*CompiledTool, len(s.Tools))}
	for i := range s.Tools {
		t := &s.Tools[i]
		ct := &CompiledTool{T: t}
		var err error
		if ct.Schema, err = CompileArgSchema(t.Parameters); err != nil {
			return nil, fmt.Errorf("%s: tool %s: parameters: %w", s.ID, t.Name, err)
		}
		if ct.Norm, err = CompileNormalizers(t.Parameters); err != nil {
			return nil, fmt.Errorf("%s: tool %s: %w", s.ID, t.Name, err)
		}
		for j, r := range t.Responses {
			m, err := ct.Norm.Matcher(r.When, r.Patterns)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %s: responses[%d]: %w", s.ID, t.Name, j, err)
			}
			ct.Responses = append(ct.Responses, m)
		}
		c.tools[t.Name] = ct
	}
	matchers := func(what string, n int, at func(int) (string, map[string]json.RawMessage, map[string]string)) ([]Matcher, error) {
		out := make([]Matcher, n)
		for i := range n {
			tool, args, patterns := at(i)
			m, err := c.Norm(tool).Matcher(args, patterns)
			if err != nil {
				return nil, fmt.Errorf("%s: %s[%d]: %w", s.ID, what, i, err)
			}
			out[i] = m
		}
		return out, nil
	}
	var err error
	if c.violations, err = matchers("violations", len(s.Violations), func(i int) (string, map[string]json.RawMessage, map[string]string) {
		v := s.Violations[i]
		return v.Tool, v.Args, v.Patterns
	}); err != nil {
		return nil, err
	}
	if c.required, err = matchers("required_calls", len(s.RequiredCalls), func(i int) (string, map[string]json.RawMessage, map[string]string) {
		r := s.RequiredCalls[i]
		return r.Tool, r.Args, r.Patterns
	}); err != nil {
		return nil, err
	}
	if c.calls, err = matchers("success.calls", len(s.Success.Calls), func(i int) (string, map[string]json.RawMessage, map[string]string) {
		a := s.Success.Calls[i]
		return a.Tool, a.Args, a.Patterns
	}); err != nil {
		return nil, err
	}
	cs, ps := CompileConstraints(s)
	if len(ps) > 0 {
		return nil, fmt.Errorf("%s: %w", s.ID, ps)
	}
	c.Constraints = cs
	if len(s.Boundary.Facts) > 0 {
		prompt := PrepareFactText(s.System + "\n" + s.UserPrompt())
		for i := range s.Boundary.Facts {
			cf, err := CompileFact(&s.Boundary.Facts[i], i)
			if err != nil {
				return nil, fmt.Errorf("%s: boundary.facts[%d]: %w", s.ID, i, err)
			}
			c.Facts = append(c.Facts, cf)
			c.PromptFacts = append(c.PromptFacts, cf.Find(prompt) != "")
		}
	}
	return c, nil
}

// Tool is the compiled tool named name, or nil.
func (c *Compiled) Tool(name string) *CompiledTool { return c.tools[name] }

// Norm is the normalisers of a tool (none for a tool the scenario lacks).
func (c *Compiled) Norm(tool string) Normalizers {
	if t := c.tools[tool]; t != nil {
		return t.Norm
	}
	return Normalizers{}
}

// Violation is the matcher of violations[i].
func (c *Compiled) Violation(i int) Matcher { return c.violations[i] }

// Required is the matcher of required_calls[i].
func (c *Compiled) Required(i int) Matcher { return c.required[i] }

// Call is the matcher of success.calls[i].
func (c *Compiled) Call(i int) Matcher { return c.calls[i] }
