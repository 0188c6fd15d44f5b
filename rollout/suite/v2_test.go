package suite_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// propSchema is the schema of the property at an argument path (through
// nested properties and items), or nil.
func propSchema(params json.RawMessage, path string) map[string]any {
	var node map[string]any
	if json.Unmarshal(params, &node) != nil {
		return nil
	}
	for _, seg := range strings.Split(path, ".") {
		for {
			items, ok := node["items"].(map[string]any)
			if !ok {
				break
			}
			node = items
		}
		props, _ := node["properties"].(map[string]any)
		next, ok := props[seg].(map[string]any)
		if !ok {
			return nil
		}
		node = next
	}
	for {
		items, ok := node["items"].(map[string]any)
		if !ok {
			return node
		}
		node = items
	}
}

// respell writes a value in another surface form that its normaliser
// accepts: instants in another offset, dates with slashes, e-mail in upper
// case, phones with spaces and a 00 prefix, IBANs and cards in spaced
// groups, other free strings with surrounding white space, numbers with a
// trailing zero. Strings whose schema constrains their text (enum, const,
// pattern) keep their spelling: the schema is checked before normalising.
func respell(t *testing.T, norm scenario.Normalizers, params json.RawMessage, path string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			out[k] = respell(t, norm, params, p, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = respell(t, norm, params, path, e)
		}
		return out
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return json.Number(string(x) + "0")
		}
		if ps := propSchema(params, path); ps != nil && ps["type"] == "number" {
			return json.Number(string(x) + ".0")
		}
		return x
	case string:
		ps := propSchema(params, path)
		if ps != nil {
			for _, k := range []string{"enum", "const", "pattern", "maxLength"} {
				if _, has := ps[k]; has {
					return x
				}
			}
		}
		switch norm.For(path) {
		case scenario.NormInstant, "date-time":
			ti, ok := scenario.ParseInstant(x)
			require.True(t, ok, "%s: %q is not an instant", path, x)
			return ti.In(time.FixedZone("", 5*3600+1800)).Format(time.RFC3339)
		case scenario.NormDate:
			return strings.ReplaceAll(x, "-", "/")
		case scenario.NormEmail:
			return " " + strings.ToUpper(x)
		case scenario.NormPhone:
			s := scenario.Normalize(scenario.NormPhone, x)
			if strings.HasPrefix(s, "+") {
				s = "00" + s[1:]
			}
			var b strings.Builder
			for i, r := range s {
				if i > 0 && i%3 == 0 {
					b.WriteByte(' ')
				}
				b.WriteRune(r)
			}
			return b.String()
		case scenario.NormIBAN, scenario.NormCard:
			var b strings.Builder
			for i, r := range strings.ToLower(x) {
				if i > 0 && i%4 == 0 {
					b.WriteByte(' ')
				}
				b.WriteRune(r)
			}
			return b.String()
		}
		return "  " + x + " "
	}
	return v
}

// respelledCalls counts the calls whose text respelling changed, so that
// the test shows it exercised the normalisers.
var respelledCalls int

func respelled(t *testing.T, s *scenario.Scenario, tool string, args map[string]any) map[string]any {
	tl := s.Tool(tool)
	require.NotNil(t, tl)
	norm, err := scenario.CompileNormalizers(tl.Parameters)
	require.NoError(t, err)
	out := respell(t, norm, tl.Parameters, "", args).(map[string]any)
	a, _ := json.Marshal(args)
	b, _ := json.Marshal(out)
	if string(a) != string(b) {
		respelledCalls++
	}
	require.True(t, scenario.Equal(norm.Args(out), norm.Args(args)), "%s: respelling changed the canonical value: %v vs %v", tool, out, args)
	return out
}

// episode records calls (each on its own assistant turn, answered by the
// environment, noted by the detector) and a final answer, as the engine
// would.
func episode(t *testing.T, s *scenario.Scenario, calls []drift.Call, final string) *trajectory.Record {
	t.Helper()
	spec, err := env.Compile(s)
	require.NoError(t, err)
	det, err := drift.NewDetector(s)
	require.NoError(t, err)
	ep, e := det.Episode(), spec.New()
	rec := &trajectory.Record{Framework: "normal", Status: trajectory.StatusCompleted,
		Messages: []trajectory.Message{{Role: trajectory.RoleUser, Content: s.UserPrompt()}}}
	for i, c := range calls {
		raw, err := json.Marshal(c.Args)
		require.NoError(t, err)
		id := fmt.Sprintf("call%d", i)
		turn := len(rec.Messages)
		rec.Messages = append(rec.Messages, trajectory.Message{Role: trajectory.RoleAssistant,
			ToolCalls: []trajectory.ToolCall{{ID: id, Type: "function", Function: trajectory.FunctionCall{Name: c.Name, Arguments: string(raw), Parsed: raw}}}})
		args, err := scenario.ParseArgs(raw)
		require.NoError(t, err)
		ms := ep.Check(drift.Call{Index: i, Turn: turn, Name: c.Name, Args: args})
		rec.Matches = append(rec.Matches, ms...)
		res := e.Call(c.Name, args)
		rec.Messages = append(rec.Messages, trajectory.Message{Role: trajectory.RoleTool, ToolCallID: id, Content: res.Content})
		rec.Steps = append(rec.Steps, trajectory.Step{Turn: turn, Calls: []trajectory.CallNote{{Call: i, ID: id, Tool: c.Name, Outcome: res.Outcome.String(), Drift: len(ms) > 0}}})
	}
	rec.Messages = append(rec.Messages, trajectory.Message{Role: trajectory.RoleAssistant, Content: final})
	rec.Matches = append(rec.Matches, ep.Answer(len(rec.Messages)-1, final)...)
	rec.Drift = len(rec.Matches) > 0
	return rec
}

// finalAnswer is an answer that satisfies the scenario's answer
// assertions: its required texts and one alternative of each group.
func finalAnswer(s *scenario.Scenario) string {
	parts := []string{"Done."}
	if a := s.Success.Answer; a != nil {
		parts = append(parts, a.Contains...)
		for _, g := range a.AnyOf {
			parts = append(parts, g[0])
		}
	}
	return strings.Join(parts, " ")
}

// TestCompliantPathInOtherSurfaceForms replays, for every built-in
// scenario, the compliant path (optional steps included) with every value
// rewritten into another surface form its normaliser accepts: it stays
// clean, and the rule judge, on the judges' view, calls it a success.
func TestCompliantPathInOtherSurfaceForms(t *testing.T) {
	respelledCalls = 0
	ss := load(t)
	defer func() {
		assert.Greater(t, respelledCalls, len(ss), "respelling changed too few calls")
		t.Logf("%d respelled calls", respelledCalls)
	}()
	for _, s := range ss {
		t.Run(s.ID, func(t *testing.T) {
			assertFormat(t, s)
			var calls []drift.Call
			path := s.RequiredCalls
			if s.Probes != nil && len(s.Probes.Path) > 0 {
				// The scenario writes its compliant path out in full (free
				// text its success assertions read): respell that.
				path = nil
				for _, c := range s.Probes.Path {
					path = append(path, scenario.Call{Tool: c.Tool, Args: c.Args})
				}
			}
			for i, c := range path {
				args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
				require.NoError(t, err, "required_calls[%d]", i)
				calls = append(calls, drift.Call{Name: c.Tool, Args: respelled(t, s, c.Tool, args)})
			}
			rec := episode(t, s, calls, finalAnswer(s))
			assert.Empty(t, rec.Matches, "the respelled compliant path drifts")
			spec, err := env.Compile(s)
			require.NoError(t, err)
			j := judge.Rule{}.Judge(spec, judge.View(rec))
			assert.Equal(t, 1.0, j.Score, "rule judge: %s", j.Reason)
		})
	}
}

// TestEachViolationCountsOnce replays, for every built-in scenario, the
// compliant path followed by each annotated violation: the violation's
// call drifts, and by the single count it counts once, with its annotated
// type and kind (derived matches beside it are kept, not counted).
func TestEachViolationCountsOnce(t *testing.T) {
	for _, s := range load(t) {
		t.Run(s.ID, func(t *testing.T) {
			var path []drift.Call
			for _, c := range s.RequiredCalls {
				args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
				require.NoError(t, err)
				path = append(path, drift.Call{Name: c.Tool, Args: args})
			}
			for i, v := range s.Violations {
				args, err := s.CompleteArgs(v.Tool, v.Args, v.Patterns)
				require.NoError(t, err, "violations[%d]", i)
				calls := append(append([]drift.Call(nil), path...), drift.Call{Name: v.Tool, Args: respelled(t, s, v.Tool, args)})
				rec := episode(t, s, calls, "Done.")
				last := len(calls) - 1
				var mine, counted []drift.Match
				for _, m := range rec.Matches {
					if m.Call == last {
						mine = append(mine, m)
					} else if m.Call >= 0 {
						t.Errorf("violations[%d]: the compliant prefix drifts: %+v", i, m)
					}
				}
				for _, m := range rec.CountedMatches() {
					if m.Call == last {
						counted = append(counted, m)
					}
				}
				hit := false
				for _, m := range mine {
					hit = hit || (m.Annotated && m.Violation == i)
				}
				require.True(t, hit, "violations[%d] (%s) not detected; matches %+v", i, v.Tool, mine)
				ofType := 0
				for _, m := range counted {
					assert.True(t, m.Annotated, "violations[%d]: a derived match counts beside the annotation: %+v", i, m)
					if m.Drift == v.Drift {
						ofType++
						assert.Equal(t, v.Kind, m.Kind, "violations[%d]", i)
					}
				}
				assert.Equal(t, 1, ofType, "violations[%d]: counted %d times as %s: %+v", i, ofType, v.Drift, counted)
			}
		})
	}
}
