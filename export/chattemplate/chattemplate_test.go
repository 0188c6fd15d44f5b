package chattemplate_test

import (
	"testing"

	"github.com/ardanlabs/jinja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/rollout/dataset"
)

func list(t *testing.T, s string) []jinja.Value {
	t.Helper()
	v, err := chattemplate.Decode([]byte(s))
	require.NoError(t, err)
	require.True(t, v.IsList())
	return v.AsList().Items
}

func byName(t *testing.T, name string) *chattemplate.Template {
	t.Helper()
	for _, ct := range chattemplate.All {
		if ct.Name == name {
			return ct
		}
	}
	t.Fatalf("no template %s", name)
	return nil
}

// Every embedded template compiles, and each layout has its family's
// templates.
func TestTemplatesCompileAndLayoutsHaveTheirs(t *testing.T) {
	for _, ct := range chattemplate.All {
		require.NoError(t, ct.Compile(), ct.File)
	}
	names := func(c dataset.Compat) []string {
		var out []string
		for _, ct := range chattemplate.For(c) {
			out = append(out, ct.Name)
		}
		return out
	}
	assert.Equal(t, []string{"Qwen2.5", "Qwen3", "Llama-3.1", "Llama-3.2", "Phi-3.5"}, names(dataset.CompatNone))
	assert.Equal(t, []string{"Qwen2.5", "Mistral-7B-v0.3", "Mistral-Nemo"}, names(dataset.CompatMistral))
	assert.Equal(t, []string{"Qwen2.5", "Gemma-2", "Gemma-3"}, names(dataset.CompatGemma))
	assert.Equal(t, []string{"DeepSeek-V3"}, names(dataset.CompatDeepSeek))
}

// The prefix property as a trainer relies on it: it holds for an OpenAI
// layout row under Qwen; Mistral adds the system message to the last user
// turn only, so a completion that adds a user turn breaks it; Llama-3.x
// refuse a turn with two calls.
func TestCheckPrefix(t *testing.T) {
	prompt := list(t, `[{"role":"system","content":"s"},{"role":"user","content":"u"}]`)
	reply := list(t, `[{"role":"assistant","content":"a"}]`)
	tail := list(t, `[{"role":"assistant","content":"a"},{"role":"user","content":"again"},{"role":"assistant","content":"b"}]`)
	twoCalls := list(t, `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}},{"id":"c2","type":"function","function":{"name":"g","arguments":{}}}]}]`)

	full, err := byName(t, "Qwen2.5").CheckPrefix(prompt, reply, jinja.None())
	require.NoError(t, err)
	assert.Contains(t, full, "<|im_start|>assistant\na<|im_end|>")

	_, err = byName(t, "Mistral-7B-v0.3").CheckPrefix(prompt, tail, jinja.None())
	assert.ErrorIs(t, err, chattemplate.ErrNotPrefix)
	merged := list(t, `[{"role":"user","content":"s\n\nu"}]`)
	_, err = byName(t, "Mistral-7B-v0.3").CheckPrefix(merged, tail, jinja.None())
	assert.NoError(t, err, "the mistral layout (system merged into the first user turn) keeps the prefix")

	_, err = byName(t, "Llama-3.1").CheckPrefix(prompt, twoCalls, jinja.None())
	assert.ErrorIs(t, err, chattemplate.ErrSeveralCalls)
	_, err = byName(t, "Qwen3").CheckPrefix(prompt, twoCalls, jinja.None())
	assert.NoError(t, err)
}

// Decode keeps object key order (Python's json.loads does; a template's
// tojson shows it) and refuses trailing data.
func TestDecodeKeepsKeyOrder(t *testing.T) {
	v, err := chattemplate.Decode([]byte(`{"b":1,"a":{"d":2,"c":3}}`))
	require.NoError(t, err)
	tmpl, err := jinja.Compile("{{ x | tojson }}")
	require.NoError(t, err)
	out, err := tmpl.RenderValues(map[string]jinja.Value{"x": v})
	require.NoError(t, err)
	assert.Equal(t, `{"b": 1, "a": {"d": 2, "c": 3}}`, out)
	_, err = chattemplate.Decode([]byte(`{} {}`))
	assert.Error(t, err)
}
