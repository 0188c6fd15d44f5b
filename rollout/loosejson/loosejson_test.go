package loosejson_test

import (
	"encoding/json"
	"testing"

	"github.com/antidrift/antidrift/rollout/loosejson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestObjects(t *testing.T) {
	hasID := func(m map[string]any) bool { _, ok := m["id"]; return ok }
	cases := []struct {
		name, text string
		want       []string // Raw of each object found
	}{
		{"bare", `{"id": "a", "n": 2}`, []string{`{"id": "a", "n": 2}`}},
		{"fenced", "Here it is:\n```json\n{\"id\":\"a\",\"z\":1,\"b\":2}\n```\nDone.", []string{`{"id":"a","z":1,"b":2}`}},
		{"prose both sides", `I propose {"id": "x"} as the answer, and nothing else.`, []string{`{"id": "x"}`}},
		{"loose is re-encoded", `{id: 'a', ok: True, v: None, xs: [1, 2,],}`, []string{`{"id":"a","ok":true,"v":null,"xs":[1,2]}`}},
		{"inner object when the outer is refused", `{"wrapper": {"id": "in"}}`, []string{`{"id": "in"}`}},
		{"two objects", `{"id": 1} then {"id": 2}`, []string{`{"id": 1}`, `{"id": 2}`}},
		{"truncated is not repaired", `{"id": "a", "tools": [{"name": "x"`, nil},
		{"no object", `I cannot help with that.`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := loosejson.Objects(c.text, hasID)
			var raws []string
			for _, o := range got {
				raws = append(raws, string(o.Raw))
				assert.Equal(t, byte('{'), c.text[o.Start])
				assert.Equal(t, byte('}'), c.text[o.End-1])
			}
			assert.Equal(t, c.want, raws)
		})
	}
}

func TestParseKeepsOffsets(t *testing.T) {
	v, end, ok := loosejson.Parse(`xx{'a': "b\nc"} tail`, 2)
	require.True(t, ok)
	assert.Equal(t, map[string]any{"a": "b\nc"}, v)
	assert.Equal(t, 15, end)
}

// TestEmptyArraysAndObjectsKept: every repair path (a strict object found in
// prose, a loose one re-encoded, a value read with JSON or Parse) keeps []
// and {} as the model wrote them, never null, and keeps the key order and
// number spelling.
func TestEmptyArraysAndObjectsKept(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"trailing comma", `{"id": 1, "a": [], "b": {},}`, `{"id":1,"a":[],"b":{}}`},
		{"prose around, trailing comma", "Here is the scenario:\n{\"id\": \"s\", \"provisions\": [], \"tools\": [{\"name\": \"x\", \"args\": {}},],}\nLet me know.", `{"id":"s","provisions":[],"tools":[{"name":"x","args":{}}]}`},
		{"fenced, single quotes", "```json\n{'id': 'q', 'list': [ ], 'obj': { }, 'nested': [[], {}],}\n```", `{"id":"q","list":[],"obj":{},"nested":[[],{}]}`},
		{"bare keys, Python literals", `{id: None, flags: [], ok: True, more: {x: [],},}`, `{"id":null,"flags":[],"ok":true,"more":{"x":[]}}`},
		{"key order and numbers as written", `{"z": 1.50, "id": 2, "a": -0.0, "e": 1e3, "b": [],}`, `{"z":1.50,"id":2,"a":-0.0,"e":1e3,"b":[]}`},
		{"numbers JSON cannot spell", `{"id": .5, "b": +2, "c": 5.,}`, `{"id":0.5,"b":2,"c":5}`},
		{"strict in prose is kept byte for byte", `I think {"id": "a", "xs": []} fits.`, `{"id": "a", "xs": []}`},
		{"strings re-escaped, HTML kept", `{'id': 'a<b>&"q"', 'n': 'line\nnext',}`, `{"id":"a<b>&\"q\"","n":"line\nnext"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := loosejson.Objects(tc.text, func(m map[string]any) bool { _, ok := m["id"]; return ok })
			require.Len(t, objs, 1)
			assert.Equal(t, tc.want, string(objs[0].Raw))
			assert.True(t, json.Valid(objs[0].Raw))
			var strict map[string]any
			require.NoError(t, json.Unmarshal(objs[0].Raw, &strict))
			assert.Equal(t, strict, objs[0].Value, "Value is what Raw decodes to")

			raw, end, ok := loosejson.JSON(tc.text, objs[0].Start)
			require.True(t, ok)
			assert.Equal(t, objs[0].End, end)
			assert.JSONEq(t, tc.want, string(raw))
		})
	}
	v, _, ok := loosejson.Parse(`{"a": [], "b": {},}`, 0)
	require.True(t, ok)
	assert.Equal(t, map[string]any{"a": []any{}, "b": map[string]any{}}, v)
	assert.NotNil(t, v.(map[string]any)["a"])
}
