package dataset_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/internal/racetest"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// messages are the messages of the lines that are records (the hostile
// corpus holds some that are not).
func messages(lines [][]byte) []trajectory.Message {
	var out []trajectory.Message
	for _, l := range lines {
		var rec trajectory.Record
		if store.DecodeRecord(l, &rec) == nil {
			out = append(out, rec.Messages...)
		}
	}
	return out
}

// hostileMessages put strings and argument values that take every path of
// encoding/json's escaping and compaction into every field.
func hostileMessages() []trajectory.Message {
	strs := []string{"", "plain", `"q"\`, "tab\tnl\ncr\r\b\f\x00\x1f\x7f", "<b>&amp;</b>", "\u2028\u2029", "bad\xff\xc3",
		"\xe2\x80", "\xed\xa0\x80 surrogate", "😀 é ü", "\ufffd", "\u00a0"}
	args := []string{`{"a":1}`, ` { "a" : [ 1 , 2 ] ,"b":"<&>\u2028" } `, `{"n":123456789012345678901234567890,"f":-1.5e-300}`,
		"{\"s\":\"\\u003c raw \xe2\x80\xa8 and \xff\"}", `{}`, `[1]`, `"str"`, `null`, `{"a":`, `{bad}`, ``, " ", "\u00a0{}", `{"a":1}x`}
	var out []trajectory.Message
	for i, s := range strs {
		for j, a := range args {
			tc := trajectory.ToolCall{ID: strs[(i+j)%len(strs)], Type: strs[(i+2*j)%len(strs)],
				Function: trajectory.FunctionCall{Name: s, Arguments: a}}
			if j%2 == 0 {
				tc.Function.Parsed = json.RawMessage(a) // even when not valid: a caller's in-memory record
			}
			out = append(out, trajectory.Message{Role: trajectory.RoleAssistant, Content: s, Reasoning: strs[(i+j)%len(strs)],
				ToolCalls: []trajectory.ToolCall{tc, {Function: trajectory.FunctionCall{Name: "g", Parsed: json.RawMessage(args[(i+j)%len(args)])}}}})
		}
		out = append(out, trajectory.Message{Role: s, Content: s, ToolCallID: s, Name: s, Reasoning: s})
	}
	return out
}

// The message rendering writes exactly json.Marshal's bytes for its wire
// types, with and without reasoning, and falls back to it (panicking as it
// does) where json.Marshal fails.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	racetest.SingleThreaded(t)
	demo := messages(corpus.DemoLines(t))
	require.Greater(t, len(demo), 1000)
	sets := map[string][]trajectory.Message{"demo": demo, "fixtures": messages(corpus.FixtureLines(t)), "hostile": hostileMessages()}
	for name, ms := range sets {
		failed := 0
		for _, o := range []dataset.RenderOptions{{}, {Reasoning: true}} {
			for i, m := range ms {
				want, panicked := dataset.MarshalMessageForTest(m, o)
				got, ok := dataset.AppendMessageForTest(m, o)
				if ok == panicked {
					t.Fatalf("%s message %d (%+v): fast path ok=%v, json.Marshal panicked=%v", name, i, m, ok, panicked)
				}
				if !ok {
					failed++
					continue
				}
				require.True(t, len(got) > 0 && got[0] == '{' && dataset.ValidJSON(got), "%s message %d: a JSON object", name, i)
				if !bytes.Equal(got, want) {
					t.Fatalf("%s message %d (reasoning %v):\n got %s\nwant %s", name, i, o.Reasoning, got, want)
				}
			}
			// the slice form shares one buffer and gives the same bytes
			if failed == 0 {
				for i, b := range dataset.MessagesWith(ms, o) {
					want, _ := dataset.MarshalMessageForTest(ms[i], o)
					require.Equal(t, string(want), string(b), "%s MessagesWith[%d]", name, i)
					require.Equal(t, len(b), cap(b), "a message's capacity ends at its length")
				}
			}
		}
		if name == "hostile" {
			require.Positive(t, failed, "the hostile set has arguments json.Marshal refuses")
		}
	}
}
