package hftok

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestText(t *testing.T) {
	tests := []struct {
		file, text string
		want       int64
	}{
		{"wordlevel.tokenizer.json", "", 0},
		{"wordlevel.tokenizer.json", "Hello world", 2},
		{"wordlevel.tokenizer.json", "hello unknownword", 2},
		{"wordlevel.tokenizer.json", `{"a":1}`, 5}, // {"  a  ":  1  }
		{"bpe.tokenizer.json", "abab", 1},
		{"bpe.tokenizer.json", "ab", 1},
		{"bpe.tokenizer.json", "aba", 2},
		{"bpe.tokenizer.json", "ba ab", 3},
	}
	for _, tc := range tests {
		c, err := Load(filepath.Join("testdata", tc.file))
		require.NoError(t, err)
		got, err := c.Text(tc.text)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s: %q", tc.file, tc.text)
	}
}

func TestMessagesAndPrompt(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "wordlevel.tokenizer.json"))
	require.NoError(t, err)
	assert.Equal(t, "wordlevel.tokenizer.json", c.Name())
	user := json.RawMessage(`{"role":"user","content":"Hello world"}`)
	call := json.RawMessage(`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"send_email","arguments":{"to":"x"}}}]}`)
	tool := json.RawMessage(`{"type":"function"}`)

	n, err := c.Messages([]json.RawMessage{user})
	require.NoError(t, err)
	assert.Equal(t, int64(1+2+TokensPerMessage), n) // user, hello world
	n, err = c.Messages([]json.RawMessage{call})
	require.NoError(t, err)
	assert.Equal(t, int64(1+0+1+5+TokensPerMessage), n) // assistant, send_email, {" to ":" x "}
	n, err = c.Prompt([]json.RawMessage{user}, []json.RawMessage{tool})
	require.NoError(t, err)
	assert.Equal(t, int64(1+2+TokensPerMessage+5+TokensPerTool+TokensPerPrompt), n)

	_, err = c.Messages([]json.RawMessage{json.RawMessage(`[1]`)})
	assert.ErrorContains(t, err, "message 0")
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"model":`), 0o644))
	for _, p := range []string{filepath.Join(dir, "missing.json"), bad} {
		_, err := Load(p)
		require.Error(t, err)
		assert.Contains(t, err.Error(), p)
	}
}

// Qwen2/2.5/3 and Llama-3 tokenizer.json files split with a lookahead
// pattern Go's regexp cannot compile: a clear error, never a panic.
func TestLookaheadPatternIsAClearError(t *testing.T) {
	p := filepath.Join("testdata", "lookahead-split.tokenizer.json")
	_, err := Load(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), p)
	assert.Contains(t, err.Error(), "(RE2) cannot compile")
}
