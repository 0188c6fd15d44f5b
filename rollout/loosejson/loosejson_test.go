package loosejson_test

import (
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
