package store_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestWalkedMessagesTakeTheWorkload: the fast path decodes the messages
// of every record of the demo's workload itself (none is left to the
// reference, which would be as right and slower), as encoding/json does.
func TestWalkedMessagesTakeTheWorkload(t *testing.T) {
	lines := corpus.DemoLines(t)
	require.NotEmpty(t, lines)
	taken := 0
	for _, l := range lines {
		if store.NeedsStd(l) {
			continue // a seed past what the fast decoder reads exactly
		}
		taken++
		var fast trajectory.Record
		require.NoError(t, store.DecodeFast(l, &fast), "%.200s", l)
		var ref trajectory.Record
		require.NoError(t, json.Unmarshal(l, &ref))
		require.Equal(t, ref.Messages, fast.Messages)
		for _, m := range ref.Messages {
			b, err := json.Marshal(m)
			require.NoError(t, err)
			got, err := store.DecodeMessage(b)
			require.NoError(t, err)
			require.Equal(t, m, got)
		}
	}
	require.Greater(t, taken, len(lines)*3/4, "most lines take the fast path")
}

// TestWalkedMessagesMatchEncodingJSON: messages the walker takes decode
// as encoding/json decodes them, empty and null lists, null members and
// spaced values included; what it leaves to the reference it refuses.
func TestWalkedMessagesMatchEncodingJSON(t *testing.T) {
	for _, v := range []string{
		`[]`, `null`, `[null]`, `[{}]`, `[{"role":"user","content":null}]`, `[{"role":"user","content":""}]`,
		`[{"role":"assistant","tool_calls":[]}]`, `[{"role":"assistant","tool_calls":null}]`,
		`[{"role":"assistant","tool_calls":[null,{"function":null},{}]}]`,
		`[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","recovered":"hermes","server_id":"call_0","function":{"name":"f","arguments":"{\"a\": \"\\u00e9\"}","parsed_arguments": { "a" : [1, 2.5e3, "\u00e9"] } ,"arguments_error":"","arguments_repair":"empty"}}]}]`,
		`[{"role":"tool","tool_call_id":"c1","name":"f","content":"{\"ok\":true,\"note\":\"caf\u00e9 \\ud83d\\ude00\"}"}]`,
		`[{"role":"assistant","reasoning":"r\n","content":"\u003cb\u003e"} , {"role":"user","content":"\ud800x"}]`,
	} {
		line := []byte(`{"traj_id":"a","scenario_id":"s","messages":` + v + `}`)
		var want trajectory.Record
		require.NoError(t, json.Unmarshal(line, &want), v)
		var got trajectory.Record
		require.NoError(t, store.DecodeFast(line, &got), v)
		require.Equal(t, want.Messages, got.Messages, v)
		require.Equal(t, want.Messages == nil, got.Messages == nil, v)
		for i := range want.Messages {
			require.Equal(t, want.Messages[i].ToolCalls == nil, got.Messages[i].ToolCalls == nil, v)
		}
	}
	for _, v := range []string{ // left to the reference
		`[{"Role":"user"}]`, `[{"r\u006fle":"user"}]`, `[{"role":"user","role":"tool"}]`,
		`[{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":null}}]}]`,
		`[{"role":"assistant","tool_calls":[{"function":{"name":"f"},"function":{"arguments":"{}"}}]}]`,
		`[{"role":"assistant","tool_calls":[{"id":"a","id":"b"}]}]`, `[{"role":5}]`, `{}`,
	} {
		line := []byte(`{"traj_id":"a","scenario_id":"s","messages":` + v + `}`)
		var got trajectory.Record
		require.Error(t, store.DecodeFast(line, &got), v)
	}
}
