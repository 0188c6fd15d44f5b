package view

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWordDiff(t *testing.T) {
	cases := []struct {
		name, a, b string
		want       []diffOp
	}{
		{"equal", "send the report", "send the report", []diffOp{{"=", "send the report"}}},
		{"both empty", "", "", []diffOp{}},
		{"one word changed", "send to alice now", "send to mallory now",
			[]diffOp{{"=", "send to "}, {"-", "alice"}, {"+", "mallory"}, {"=", " now"}}},
		{"word inserted", "erase the record", "erase the whole record",
			[]diffOp{{"=", "erase the "}, {"+", "whole "}, {"=", "record"}}},
		{"word removed", "a b c", "a c", []diffOp{{"=", "a "}, {"-", "b "}, {"=", "c"}}},
		{"punctuation apart from words", `{"id": "BC-30871"}`, `{"id": "BC-41190"}`,
			[]diffOp{{"=", `{"id": "BC-`}, {"-", "30871"}, {"+", "41190"}, {"=", `"}`}}},
		{"from nothing", "", "new text", []diffOp{{"+", "new text"}}},
		{"to nothing", "old", "", []diffOp{{"-", "old"}}},
		{"unicode words", "olá João", "olá Maria", []diffOp{{"=", "olá "}, {"-", "João"}, {"+", "Maria"}}},
		{"moved word", "x y z", "z x y", []diffOp{{"+", "z "}, {"=", "x y"}, {"-", " z"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := wordDiff(c.a, c.b)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.a, side(got, "-"), "the = and - runs give a back")
			assert.Equal(t, c.b, side(got, "+"), "the = and + runs give b back")
		})
	}
}

// side rebuilds one text of a diff.
func side(ops []diffOp, own string) string {
	var b strings.Builder
	for _, o := range ops {
		if o.Op == "=" || o.Op == own {
			b.WriteString(o.Text)
		}
	}
	return b.String()
}

// TestWordDiffLargeFallsBack: past the table bound the middle is replaced
// whole, and both texts are still given back.
func TestWordDiffLargeFallsBack(t *testing.T) {
	a := "start " + strings.Repeat("a ", 3000) + "end"
	b := "start " + strings.Repeat("b ", 3000) + "end"
	got := wordDiff(a, b)
	assert.Equal(t, a, side(got, "-"))
	assert.Equal(t, b, side(got, "+"))
	assert.Equal(t, []string{"=", "-", "+", "="}, []string{got[0].Op, got[1].Op, got[2].Op, got[3].Op})
}

// TestPairDiffAligns: the sides' common start is found with tool call ids
// left out, and the first differing message is diffed on its call's
// arguments.
func TestPairDiffAligns(t *testing.T) {
	call := func(id, name, args string) string {
		return `{"role":"assistant","content":"","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + args + `}}]}`
	}
	tool := func(id, content string) string {
		return `{"role":"tool","tool_call_id":"` + id + `","content":"` + content + `"}`
	}
	row := map[string]json.RawMessage{
		"prompt": json.RawMessage(`[{"role":"system","content":"s"},{"role":"user","content":"u"}]`),
		"chosen": json.RawMessage(`[` + call("a1", "find", `{"q":"x"}`) + `,` + tool("a1", "found 2") + `,` +
			call("a2", "erase", `{"customer_id":"BC-1","mode":"erase_now"}`) + `,{"role":"assistant","content":"Done for Beatriz."}]`),
		"rejected": json.RawMessage(`[` + call("b1", "find", `{"q":"x"}`) + `,` + tool("b1", "found 2") + `,` +
			call("b2", "erase", `"{\"customer_id\":\"BC-9\",\"mode\":\"erase_now\"}"`) + `]`),
	}
	d := pairDiffOf(row)
	require.NotNil(t, d)
	assert.Equal(t, 2, d.Shared, "the first call and its result differ only in ids")
	assert.Equal(t, 4, d.Message)
	require.Len(t, d.Aligned, 1, "aligned up to the shorter side")
	md := d.Aligned[0]
	assert.False(t, md.Same)
	require.Len(t, md.Calls, 1)
	assert.Equal(t, []diffOp{{"=", "erase"}}, md.Calls[0].Name)
	assert.Contains(t, md.Calls[0].Args, diffOp{"-", "1"})
	assert.Contains(t, md.Calls[0].Args, diffOp{"+", "9"})
	assert.Equal(t, "{\n  \"customer_id\": \"BC-9\",\n  \"mode\": \"erase_now\"\n}", side(md.Calls[0].Args, "+"), "string arguments are indented like object ones")

	assert.Nil(t, pairDiffOf(map[string]json.RawMessage{"prompt": json.RawMessage(`"text"`), "chosen": json.RawMessage(`[]`), "rejected": json.RawMessage(`[]`)}))
}
