package dataset_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// longRecord is a chat record of n call turns over twelve tools, the
// visible set changing with the turn, with one tool that does not decode
// as a function and one whose function name differs only in case from a
// visible one.
func longRecord(n int) *trajectory.Record {
	r := &trajectory.Record{TrajID: "long", Success: true,
		Messages: []trajectory.Message{{Role: "system", Content: "You are an operations agent."}, {Role: "user", Content: "Close the quarter's open tickets."}}}
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("tool_%d", i))
		r.Tools = append(r.Tools, json.RawMessage(fmt.Sprintf(`{"type":"function","function":{"name":"tool_%d","description":"does %d","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}}`, i, i)))
	}
	r.Tools = append(r.Tools, json.RawMessage(`{"type":"function","function":"tool_9"}`), // not a function object: never visible
		json.RawMessage(`{"type":"function","function":{"NAME":"tool_3","parameters":{}}}`)) // encoding/json reads NAME as name
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		name := names[i%len(names)]
		r.Steps = append(r.Steps, trajectory.Step{Turn: len(r.Messages), Visible: names[:1+i%len(names)]})
		r.Messages = append(r.Messages,
			trajectory.Message{Role: "assistant", Content: "Looking at ticket " + id, ToolCalls: []trajectory.ToolCall{call(id, name, `{"id":"T-`+id+`"}`)}},
			trajectory.Message{Role: "tool", Content: `{"status":"open","owner":"ops","notes":"ticket ` + id + ` waits on a reply"}`, ToolCallID: id})
	}
	r.Messages = append(r.Messages, trajectory.Message{Role: "assistant", Content: "All closed."}) // no step note: every tool
	return r
}

// TestTurnsEqualPerTurnRendering: Turns (the conversation rendered once,
// tool names read once) gives what rendering each turn's cut and reading
// each tool's name at each turn gave.
func TestTurnsEqualPerTurnRendering(t *testing.T) {
	rec := longRecord(12)
	for _, o := range []dataset.RenderOptions{{}, {Compat: dataset.CompatMistral}, {Compat: dataset.CompatGemma}, {ToolsInSystem: true}} {
		t.Run(string(o.Compat), func(t *testing.T) {
			got := dataset.Turns(rec, o)
			assert.Len(t, got, 13)
			for _, tr := range got {
				k := tr.Index
				want := dataset.Turn{Index: k, Prompt: dataset.RenderWith(rec, rec.Messages[:k], o),
					Completion: dataset.RenderWith(rec, rec.Messages[k:k+1], o), Tools: toolsAtByDecoding(rec, k)}
				want.Prompt, want.Tools = dataset.FinishRow(o, want.Prompt, want.Tools, &want.Completion)
				assert.Equal(t, flat(want), flat(tr), "turn %d", k)
			}
		})
	}
	assert.Len(t, dataset.ToolsAt(rec, 2), 1)
	assert.Len(t, dataset.ToolsAt(rec, 2+2*3), 5, "tool_0..tool_3 and the NAME spelling of tool_3")
	assert.Len(t, dataset.ToolsAt(rec, len(rec.Messages)-1), 12, "a turn without a step note: every tool")
}

// toolsAtByDecoding is ToolsAt as it was: each tool decoded at each turn.
func toolsAtByDecoding(rec *trajectory.Record, turn int) []json.RawMessage {
	all := dataset.Tools(rec)
	for _, s := range rec.Steps {
		if s.Turn != turn {
			continue
		}
		out := []json.RawMessage{}
		for _, tl := range all {
			var w struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if json.Unmarshal(tl, &w) == nil && slices.Contains(s.Visible, w.Function.Name) {
				out = append(out, tl)
			}
		}
		return out
	}
	return all
}

// flat spells a turn out, each column's messages one a line.
func flat(t dataset.Turn) string {
	s := fmt.Sprintf("turn %d\n", t.Index)
	for _, col := range [][]json.RawMessage{t.Prompt, t.Completion, t.Tools} {
		s += fmt.Sprintf("%d messages\n", len(col))
		for _, m := range col {
			s += string(m) + "\n"
		}
	}
	return s
}

// BenchmarkTurns cuts a 40-turn record into its per-turn rows (the rewards
// table's default layout).
func BenchmarkTurns(b *testing.B) {
	rec := longRecord(40)
	b.ReportAllocs()
	for b.Loop() {
		if len(dataset.Turns(rec, dataset.RenderOptions{})) != 41 {
			b.Fatal("turns")
		}
	}
}
