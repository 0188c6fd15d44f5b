package dataset_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// turnsRecord: system, user, then three call turns with results and a
// final answer; the call at message 4 drifts when drifting is set.
func turnsRecord(success, drifting bool) *trajectory.Record {
	r := &trajectory.Record{TrajID: "t", Success: success, Drift: drifting,
		Messages: []trajectory.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}}
	for i, name := range []string{"read", "write", "send"} {
		id := "c" + name
		r.Messages = append(r.Messages,
			trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{call(id, name, `{"id":"A-7"}`)}},
			trajectory.Message{Role: "tool", Content: "ok " + name, ToolCallID: id})
		r.Steps = append(r.Steps, trajectory.Step{Turn: 2 + 2*i, Visible: []string{"read", "write", "send"}[:i+1]})
	}
	r.Messages = append(r.Messages, trajectory.Message{Role: "assistant", Content: "done"})
	r.Steps = append(r.Steps, trajectory.Step{Turn: 8, Visible: []string{"read", "write", "send"}})
	for _, n := range []string{"read", "write", "send"} {
		r.Tools = append(r.Tools, json.RawMessage(`{"type":"function","function":{"name":"`+n+`","parameters":{}}}`))
	}
	if drifting {
		r.Matches = []drift.Match{{Call: 1, Turn: 4, Tool: "write"}}
	}
	return r
}

func TestTurnsAndLabels(t *testing.T) {
	clean := turnsRecord(true, false)
	turns := dataset.Turns(clean, dataset.RenderOptions{})
	require.Len(t, turns, 4)
	for k, tr := range turns {
		assert.Equal(t, 2+2*k, tr.Index)
		assert.Len(t, tr.Prompt, 2+2*k, "the conversation before the turn, tool results included")
		require.Len(t, tr.Completion, 1)
		assert.Contains(t, string(tr.Completion[0]), `"role":"assistant"`)
	}
	assert.Len(t, turns[0].Tools, 1, "the tools visible at step 0")
	assert.Len(t, turns[2].Tools, 3)
	assert.Len(t, dataset.FirstRequestTools(clean), 1)

	drifting := turnsRecord(true, true)
	assert.Equal(t, 4, dataset.DriftOnset(drifting))
	assert.Equal(t, -1, dataset.DriftOnset(clean))
	failed := turnsRecord(false, false)
	for _, c := range []struct {
		name string
		rec  *trajectory.Record
		pre  dataset.PreOnset
		want []dataset.Unit
	}{
		{"clean success: every turn desirable", clean, dataset.PreOnsetDrop, []dataset.Unit{{2, true}, {4, true}, {6, true}, {8, true}}},
		{"drift, pre-onset dropped", drifting, dataset.PreOnsetDrop, []dataset.Unit{{4, false}, {6, false}, {8, false}}},
		{"drift, pre-onset desirable", drifting, dataset.PreOnsetDesirable, []dataset.Unit{{2, true}, {4, false}, {6, false}, {8, false}}},
		{"drift, pre-onset undesirable", drifting, dataset.PreOnsetUndesirable, []dataset.Unit{{2, false}, {4, false}, {6, false}, {8, false}}},
		{"failure without drift: undesirable", failed, dataset.PreOnsetDrop, []dataset.Unit{{2, false}, {4, false}, {6, false}, {8, false}}},
	} {
		assert.Equal(t, c.want, dataset.KTOUnits(c.rec, c.pre), c.name)
	}
	_, err := dataset.ParsePreOnset("sometimes")
	assert.Error(t, err)
	_, err = dataset.ParseCompletion("turn", dataset.CompletionRest)
	assert.NoError(t, err)
	_, err = dataset.ParseCompletion("all", dataset.CompletionRest)
	assert.Error(t, err)
	assert.Equal(t, []int64{1, 0, 1}, dataset.TrainMask(dataset.Messages(clean.Messages[2:5])))
}

func TestTemplateCompatRewrites(t *testing.T) {
	rec := turnsRecord(true, false)
	prompt := dataset.Messages(rec.Messages[:4])
	comp := dataset.Messages(rec.Messages[4:6])
	var roles func([]json.RawMessage) []string
	roles = func(ms []json.RawMessage) []string {
		var out []string
		for _, m := range ms {
			var w struct{ Role string }
			require.NoError(t, json.Unmarshal(m, &w))
			out = append(out, w.Role)
		}
		return out
	}

	// mistral: system merged, ids 9 alphanumerics, the same for a call and its result
	c := append([]json.RawMessage{}, comp...)
	p, tools := dataset.FinishRow(dataset.RenderOptions{Compat: dataset.CompatMistral}, prompt, dataset.Tools(rec), &c)
	assert.Equal(t, []string{"user", "assistant", "tool"}, roles(p))
	assert.Contains(t, string(p[0]), `"content":"s\n\nu"`)
	assert.Len(t, tools, 3)
	var call struct {
		ToolCalls []struct{ ID string } `json:"tool_calls"`
	}
	var result struct {
		ToolCallID string `json:"tool_call_id"`
	}
	require.NoError(t, json.Unmarshal(c[0], &call))
	require.NoError(t, json.Unmarshal(c[1], &result))
	assert.Regexp(t, `^[A-Za-z0-9]{9}$`, call.ToolCalls[0].ID)
	assert.Equal(t, call.ToolCalls[0].ID, result.ToolCallID)

	// gemma: no system, no tools column, calls as text, results as user turns
	c = append([]json.RawMessage{}, comp...)
	p, tools = dataset.FinishRow(dataset.RenderOptions{Compat: dataset.CompatGemma}, prompt, dataset.Tools(rec), &c)
	assert.Empty(t, tools)
	assert.Equal(t, []string{"user", "assistant", "user"}, roles(p))
	assert.Contains(t, string(p[0]), `\u003ctools\u003e`, "the schemas are in the first user turn")
	assert.Equal(t, []string{"assistant", "user"}, roles(c))
	assert.Contains(t, string(c[0]), `{\"name\":\"write\",\"arguments\":{\"id\":\"A-7\"}}`)
	assert.NotContains(t, string(c[0]), "tool_calls")

	// deepseek: arguments as a JSON string
	c = append([]json.RawMessage{}, comp...)
	p, _ = dataset.FinishRow(dataset.RenderOptions{Compat: dataset.CompatDeepSeek}, prompt, dataset.Tools(rec), &c)
	assert.Equal(t, []string{"system", "user", "assistant", "tool"}, roles(p))
	assert.True(t, strings.Contains(string(c[0]), `"arguments":"{\"id\":\"A-7\"}"`), string(c[0]))
	_, err := dataset.ParseCompat("llama")
	assert.Error(t, err)
}
