package scenario

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTextProblems: a byte-order mark, bytes that are not UTF-8 and a key
// given twice in one object are refused, each named (BOM; the byte
// offset; the JSON path and both lines), before the format is checked.
func TestTextProblems(t *testing.T) {
	valid, err := os.ReadFile("testdata/valid/followup.json")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"bom", append([]byte{0xEF, 0xBB, 0xBF}, valid...), "s.json:1:1: the file starts with a UTF-8 byte-order mark (BOM, bytes EF BB BF)"},
		{"bad byte in a string", []byte("{\n  \"id\": \"a\xffb\"\n}"), "s.json:2:11: invalid UTF-8 at byte offset 12 (byte 0xFF)"},
		{"overlong", []byte(`{"id": "` + "\xc0\xaf" + `"}`), "invalid UTF-8 at byte offset 8 (byte 0xC0)"},
		{"surrogate half", []byte(`{"id": "` + "\xed\xa0\x80" + `"}`), "invalid UTF-8 at byte offset 8"},
		{"duplicate top-level key", []byte("{\"id\": \"a\",\n \"id\": \"b\"}"), `s.json:2:2: id: duplicate key "id" in one object (first at line 1)`},
		{"duplicate nested key", []byte(`{"tools": [{"name": "a"}, {"name": "b", "x": {"k": 1, "k": 2}}]}`), `tools[1].x.k: duplicate key "k"`},
		{"duplicate escaped key", []byte(`{"a": 1, "\u0061": 2}`), `a: duplicate key "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ps := Parse("s.json", tc.data, nil)
			assert.Nil(t, s)
			require.Len(t, ps, 1, "%v", ps)
			assert.Contains(t, ps[0].String(), tc.want)
		})
	}
	// The same key in two objects, or a key equal to a value, is fine.
	assert.Nil(t, DuplicateKeyProblem("s.json", []byte(`{"a": {"k": 1}, "b": {"k": "a"}, "c": ["k", "k"]}`)))
	assert.Nil(t, DuplicateKeyProblem("s.json", valid))
	assert.Nil(t, TextProblem("s.json", valid))
}
