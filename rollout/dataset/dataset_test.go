package dataset_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func call(id, name, args string) trajectory.ToolCall {
	tc := trajectory.ToolCall{ID: id, Type: "function", Function: trajectory.FunctionCall{Name: name, Arguments: args}}
	if json.Valid([]byte(args)) {
		tc.Function.Parsed = json.RawMessage(args)
	}
	return tc
}

func TestMessageJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    trajectory.Message
		want string
	}{
		{"tool-call turn has content", trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{call("c1", "f", `{"a":1}`)}},
			`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]}`},
		{"empty assistant turn", trajectory.Message{Role: "assistant"}, `{"role":"assistant","content":""}`},
		{"tool result", trajectory.Message{Role: "tool", Content: "ok", ToolCallID: "c1", Name: "f"},
			`{"role":"tool","content":"ok","tool_call_id":"c1","name":"f"}`},
		{"system", trajectory.Message{Role: "system", Content: "s"}, `{"role":"system","content":"s"}`},
		{"unparsed arguments", trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{call("c2", "f", `{"a":`)}},
			`{"role":"assistant","content":"","tool_calls":[{"id":"c2","type":"function","function":{"name":"f","arguments":{"_raw":"{\"a\":"}}}]}`},
		{"arguments not an object", trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{call("c3", "f", `[1]`)}},
			`{"role":"assistant","content":"","tool_calls":[{"id":"c3","type":"function","function":{"name":"f","arguments":{"_raw":"[1]"}}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.JSONEq(t, tc.want, string(dataset.MessageJSON(tc.m)))
			assert.Equal(t, tc.want, string(dataset.MessageJSON(tc.m)), "key order")
		})
	}
}

func TestRawArguments(t *testing.T) {
	ok := []trajectory.Message{{Role: "assistant", ToolCalls: []trajectory.ToolCall{call("c1", "f", `{}`)}}}
	bad := []trajectory.Message{{Role: "assistant", ToolCalls: []trajectory.ToolCall{call("c1", "f", `nope`)}}}
	assert.False(t, dataset.RawArguments(ok))
	assert.True(t, dataset.RawArguments(bad))
	assert.False(t, dataset.RawArguments(nil))
}

func TestToolsInWireOrder(t *testing.T) {
	// The agent records tools as a map encodes them (keys sorted); the
	// OpenAI client sends type first, then name, description, parameters,
	// with the parameters' own key order kept.
	params := `{"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}},"required":["to"]}`
	recorded := `{"function":{"description":"Send <mail> & more","name":"send","parameters":` + params + `},"type":"function"}`
	rec := &trajectory.Record{Framework: "normal", Tools: []json.RawMessage{json.RawMessage(recorded),
		json.RawMessage(`{"function":{"description":"","name":"bare","parameters":null},"type":"function"}`),
		json.RawMessage(`{"type":"function","function":{"name":"x","parameters":{},"strict":true}}`)}}
	got := dataset.Tools(rec)
	require.Len(t, got, 3)
	assert.Equal(t, `{"type":"function","function":{"name":"send","description":"Send \u003cmail\u003e \u0026 more","parameters":`+params+`}}`, string(got[0]))
	assert.Equal(t, `{"type":"function","function":{"name":"bare","parameters":{"type":"object","properties":{}}}}`, string(got[1]))
	assert.Equal(t, `{"type":"function","function":{"name":"x","parameters":{},"strict":true}}`, string(got[2]), "unknown keys: kept as recorded")
	assert.Equal(t, []json.RawMessage{}, dataset.Tools(&trajectory.Record{}), "never null")
}

func TestTextFrameworkRendersWhatTheModelSaw(t *testing.T) {
	dataset.RegisterTextView("react-test", protocol.View)
	rec := &trajectory.Record{Framework: "react-test", Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{}}}`)}}
	ms := []trajectory.Message{
		{Role: "system", Content: "tools: f"},
		{Role: "user", Content: "do it"},
		{Role: "assistant", Content: "Thought: go\nAction: f\nAction Input: {\"a\":1}", ToolCalls: []trajectory.ToolCall{call("r1", "f", `{"a":1}`)}},
		{Role: "tool", Content: "done", ToolCallID: "r1", Name: "f"},
		{Role: "assistant", Content: "Thought: ok\nFinal Answer: done"},
	}
	assert.Equal(t, dataset.ToolsText, dataset.FormatOf("react-test"))
	assert.Equal(t, dataset.ToolsNative, dataset.FormatOf("normal"))
	assert.Empty(t, dataset.Tools(rec), "a text-protocol model was sent no tools")
	got := dataset.Render(rec, ms)
	require.Len(t, got, 5)
	assert.Equal(t, `{"role":"assistant","content":"Thought: go\nAction: f\nAction Input: {\"a\":1}"}`, string(got[2]), "no tool_calls: the model wrote text")
	assert.Equal(t, `{"role":"user","content":"Observation: done"}`, string(got[3]))
	// Cut at a turn boundary, the parts render as the whole does.
	p, c := dataset.SplitPrompt(ms)
	assert.Equal(t, got, append(dataset.Render(rec, p), dataset.Render(rec, c)...))
}

func TestSplitPrompt(t *testing.T) {
	ms := []trajectory.Message{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "tool"}, {Role: "user"}}
	p, c := dataset.SplitPrompt(ms)
	assert.Len(t, p, 2)
	assert.Len(t, c, 3)
	p, c = dataset.SplitPrompt([]trajectory.Message{{Role: "system"}, {Role: "assistant"}})
	assert.Len(t, p, 1)
	assert.Len(t, c, 1)
}

func TestSplits(t *testing.T) {
	r, err := dataset.ParseRatios("0.5, 0.25,0.25")
	require.NoError(t, err)
	for _, bad := range []string{"0.5,0.5", "a,b,c", "0.5,0.6,-0.1", "0.2,0.2,0.2"} {
		_, err := dataset.ParseRatios(bad)
		assert.Error(t, err, bad)
	}
	counts := map[string]int{}
	for i := range 4000 {
		id := fmt.Sprintf("scenario-%d", i)
		s := dataset.SplitOf(id, r, 7)
		assert.Equal(t, s, dataset.SplitOf(id, r, 7), "a pure function of id and seed")
		counts[s]++
	}
	assert.InDelta(t, 2000, counts["train"], 150)
	assert.InDelta(t, 1000, counts["validation"], 120)
	assert.InDelta(t, 1000, counts["test"], 120)
	all := dataset.Ratios{1, 0, 0}
	assert.Equal(t, "train", dataset.SplitOf("x", all, 1))
}
