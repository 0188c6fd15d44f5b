package scenario

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// CompleteArgs builds a complete, schema-valid argument object from an
// argument subset, as a simulated policy or a replay test calls a tool. Each
// required property missing from args is filled from the property schema:
// "examples"[0], then "default", then "enum"[0], then a placeholder of its
// type. An argument with a pattern and no literal takes the first enum or
// examples value the pattern matches. It fails when no valid object results.
func (s *Scenario) CompleteArgs(tool string, args map[string]json.RawMessage, patterns map[string]string) (map[string]any, error) {
	t := s.Tool(tool)
	if t == nil {
		return nil, fmt.Errorf("unknown tool %q", tool)
	}
	m, err := NewMatcher(args, patterns)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range m.Want() {
		out[k] = v
	}
	props := properties(t.Parameters)
	norm, _ := CompileNormalizers(t.Parameters) // a broken declaration is reported at the tool
	for _, k := range sortedKeys(m.patterns) {
		if _, ok := out[k]; ok {
			continue
		}
		re := m.patterns[k]
		info := props[k]
		cands := append(append([]any{}, info.enum...), info.examples...)
		// Then what the agent can learn: the tool's response literals and
		// the scenario's tool returns (examples come from a decoy universe
		// in format v2, so they rarely match a compliant pattern).
		for _, r := range t.Responses {
			if raw, ok := r.When[k]; ok {
				if x, err := DecodeJSON(raw); err == nil {
					cands = append(cands, x)
				}
			}
		}
		for _, tt := range s.Tools {
			for _, r := range tt.Responses {
				if x, err := DecodeJSON(r.Return); err == nil {
					cands = append(cands, Leaves(x)...)
				}
			}
		}
		for _, cand := range cands {
			// Patterns see the normalised value (a date-time in UTC), as
			// in matching; the candidate goes in as written.
			if re.MatchString(valueText(norm.Value(k, cand))) {
				out[k] = cand
				break
			}
		}
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("patterns.%s: no literal, enum, examples or tool-return value of %q matches %q", k, tool, re)
		}
	}
	var schema struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(t.Parameters, &schema)
	req := append([]string(nil), schema.Required...)
	sort.Strings(req)
	for _, k := range req {
		if _, ok := out[k]; ok {
			continue
		}
		out[k] = s.placeholderValue(k, schema.Properties[k])
	}
	as, err := CompileArgSchema(t.Parameters)
	if err != nil {
		return nil, err
	}
	if err := as.Validate(out); err != nil {
		return nil, fmt.Errorf("completed arguments of %q are invalid (give the property an \"examples\" value): %v", tool, err)
	}
	return out, nil
}

func (s *Scenario) placeholderValue(name string, raw json.RawMessage) any {
	var p struct {
		Type     any               `json:"type"`
		Format   string            `json:"format"`
		Examples []json.RawMessage `json:"examples"`
		Default  json.RawMessage   `json:"default"`
		Enum     []json.RawMessage `json:"enum"`
		Minimum  *json.Number      `json:"minimum"`
	}
	_ = json.Unmarshal(raw, &p)
	for _, cand := range [][]json.RawMessage{p.Examples, {p.Default}, p.Enum} {
		if len(cand) > 0 && len(cand[0]) > 0 {
			if v, err := DecodeJSON(cand[0]); err == nil {
				return v
			}
		}
	}
	typ, _ := p.Type.(string)
	if list, ok := p.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "integer", "number":
		if p.Minimum != nil {
			return *p.Minimum
		}
		return json.Number("1")
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	if p.Format == "date-time" || p.Format == "date" {
		return s.timePlaceholder(p.Format) // the schema rejects any other text
	}
	return "(simulated " + name + ")"
}

// timePlaceholder is a value of a time format: the scenario's now (its day
// for a date), else the start of 2000 in UTC.
func (s *Scenario) timePlaceholder(format string) string {
	t, ok := ParseInstant(s.Now)
	if !ok {
		t = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if format == "date" {
		return t.Format("2006-01-02")
	}
	return t.Format(time.RFC3339)
}
