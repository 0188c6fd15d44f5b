// Package chattemplate renders exported rows through real models' chat
// templates (templates/, sources in its README), as Hugging Face's
// apply_chat_template renders them, so that a check can say whether a
// trainer would split a row's completion where it starts: the prompt
// rendered with add_generation_prompt must be a prefix of prompt +
// completion. The export tests render every row through them, and
// `antidrift inspect --trainer` does the same on a user's folder.
package chattemplate

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ardanlabs/jinja"

	"github.com/antidrift/antidrift/rollout/dataset"
)

//go:embed templates/*.jinja
var files embed.FS

// Template is one model's chat template and the rules it imposes on rows.
type Template struct {
	Name string
	File string
	// Vars are the special tokens the tokenizer passes in.
	Vars map[string]jinja.Value
	// CallFormat is how the template writes one tool call, with %s for the
	// name and %s for the arguments as tojson renders them; "" when the
	// template renders no tool calls at all.
	CallFormat string
	// OneCallPerTurn: the template raises on an assistant turn that
	// carries a tool_calls key with anything but exactly one call.
	OneCallPerTurn bool
	// RenderTools: the template writes the tools list into the prompt.
	RenderTools bool
	// ToolKeysSorted: the rendered tool block has its keys sorted, so it
	// cannot show a re-ordered tools list. Llama-3.x write tools with
	// tojson(indent=4), which ardanlabs/jinja v1.8.0 encodes with sorted
	// keys where Python's json.dumps keeps them in order.
	ToolKeysSorted bool
	// Family is the --template-compat layout the template's rows need
	// (CompatNone for the default OpenAI layout).
	Family dataset.Compat
	// ArgsText: the template writes a call's arguments as the text the row
	// holds (a JSON string), not through tojson (DeepSeek-V3).
	ArgsText bool
	// TurnMarker counts the assistant turns of a content-only template
	// (Phi-3.5, Gemma), and UserMarker its user turns.
	TurnMarker, UserMarker string

	once sync.Once
	tmpl *jinja.Template
	err  error
}

func str(s string) jinja.Value { return jinja.NewString(s) }

// All are the templates known, in a fixed order.
var All = []*Template{
	{Name: "Qwen2.5", File: "qwen2.5-instruct.jinja", CallFormat: "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", RenderTools: true},
	{Name: "Qwen3", File: "qwen3.jinja", CallFormat: "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", RenderTools: true},
	{Name: "Llama-3.1", File: "llama-3.1-instruct.jinja", Vars: map[string]jinja.Value{"bos_token": str("<|begin_of_text|>")},
		CallFormat: "{\"name\": \"%s\", \"parameters\": %s}<|eot_id|>", OneCallPerTurn: true, RenderTools: true, ToolKeysSorted: true},
	{Name: "Llama-3.2", File: "llama-3.2-instruct.jinja", Vars: map[string]jinja.Value{"bos_token": str("<|begin_of_text|>")},
		CallFormat: "{\"name\": \"%s\", \"parameters\": %s}<|eot_id|>", OneCallPerTurn: true, RenderTools: true, ToolKeysSorted: true},
	// Phi-3.5-mini-instruct renders system, user and assistant content
	// only: tool calls, tool results and the tools list vanish.
	{Name: "Phi-3.5", File: "phi-3.5-mini-instruct.jinja", Vars: map[string]jinja.Value{"eos_token": str("<|endoftext|>")},
		TurnMarker: "<|assistant|>\n", UserMarker: "<|user|>\n"},
	// Mistral's tool templates add the system message to the last user
	// turn only and require 9-character call ids: --template-compat mistral.
	{Name: "Mistral-7B-v0.3", File: "mistral-7b-instruct-v0.3.jinja", Family: dataset.CompatMistral, RenderTools: true,
		Vars:       map[string]jinja.Value{"bos_token": str("<s>"), "eos_token": str("</s>")},
		CallFormat: "{\"name\": \"%s\", \"arguments\": %s, \"id\": \""},
	{Name: "Mistral-Nemo", File: "mistral-nemo-instruct-2407.jinja", Family: dataset.CompatMistral, RenderTools: true,
		Vars:       map[string]jinja.Value{"bos_token": str("<s>"), "eos_token": str("</s>")},
		CallFormat: "{\"name\": \"%s\", \"arguments\": %s, \"id\": \""},
	// Gemma has no system, tool or tool-call rendering: --template-compat gemma.
	{Name: "Gemma-2", File: "gemma-2-it.jinja", Family: dataset.CompatGemma, Vars: map[string]jinja.Value{"bos_token": str("<bos>")},
		TurnMarker: "<start_of_turn>model\n", UserMarker: "<start_of_turn>user\n"},
	{Name: "Gemma-3", File: "gemma-3-it.jinja", Family: dataset.CompatGemma, Vars: map[string]jinja.Value{"bos_token": str("<bos>")},
		TurnMarker: "<start_of_turn>model\n", UserMarker: "<start_of_turn>user\n"},
	// DeepSeek-V3 concatenates arguments as text: --template-compat deepseek.
	{Name: "DeepSeek-V3", File: "deepseek-v3-0324.jinja", Family: dataset.CompatDeepSeek, ArgsText: true,
		Vars:       map[string]jinja.Value{"bos_token": str("<｜begin▁of▁sentence｜>")},
		CallFormat: "<｜tool▁sep｜>%s\n```json\n%s\n```<｜tool▁call▁end｜>"},
}

// For are the templates rows of a layout are checked against: the
// family's own, and Qwen2.5 besides for the mistral and gemma layouts
// (whose rows stay readable by the default templates; deepseek's string
// arguments would be double-encoded by Qwen's tojson).
func For(f dataset.Compat) []*Template {
	var out []*Template
	for _, t := range All {
		if t.Family == f || ((f == dataset.CompatMistral || f == dataset.CompatGemma) && t.Name == "Qwen2.5") {
			out = append(out, t)
		}
	}
	return out
}

// Compile parses the template once (Render calls it).
func (t *Template) Compile() error {
	t.once.Do(func() {
		src, err := files.ReadFile("templates/" + t.File)
		if err != nil {
			t.err = err
			return
		}
		t.tmpl, t.err = jinja.Compile(string(src))
		if t.err != nil {
			t.err = fmt.Errorf("chat template %s: %w", t.File, t.err)
		}
	})
	return t.err
}

// Render is apply_chat_template(messages, tools=tools,
// add_generation_prompt=gen, tokenize=False). tools is jinja.None() for
// none.
func (t *Template) Render(msgs []jinja.Value, tools jinja.Value, gen bool) (string, error) {
	if err := t.Compile(); err != nil {
		return "", err
	}
	data := map[string]jinja.Value{
		"messages":              jinja.NewList(msgs),
		"tools":                 tools,
		"add_generation_prompt": jinja.NewBool(gen),
	}
	for k, v := range t.Vars {
		data[k] = v
	}
	return t.tmpl.RenderValues(data)
}

// ErrSeveralCalls is the refusal of a one-call-per-turn template (Llama-3.x)
// to render an assistant turn with several tool calls: such rows cannot be
// trained on with that template.
var ErrSeveralCalls = errors.New("the template takes one tool call per assistant turn and raises on more")

// ErrNotPrefix says the prompt's rendering is not a prefix of the whole
// conversation's: a trainer that renders both splits the completion in
// the wrong place.
var ErrNotPrefix = errors.New("the prompt rendered with add_generation_prompt is not a prefix of prompt + completion")

// CheckPrefix renders prompt (with the generation prompt) and prompt +
// completion (without) and says whether the first is a prefix of the
// second; it returns the whole rendering for further checks.
func (t *Template) CheckPrefix(prompt, completion []jinja.Value, tools jinja.Value) (string, error) {
	full := append(append([]jinja.Value{}, prompt...), completion...)
	f, ferr := t.Render(full, tools, false)
	if t.OneCallPerTurn && ferr != nil && severalCalls(full) {
		return "", fmt.Errorf("%s: %w (%v)", t.Name, ErrSeveralCalls, ferr)
	}
	if ferr != nil {
		return "", fmt.Errorf("%s: prompt + completion: %w", t.Name, ferr)
	}
	p, perr := t.Render(prompt, tools, true)
	if perr != nil {
		return "", fmt.Errorf("%s: prompt: %w", t.Name, perr)
	}
	if !strings.HasPrefix(f, p) {
		return f, fmt.Errorf("%s: %w", t.Name, ErrNotPrefix)
	}
	return f, nil
}

// severalCalls reports whether an assistant turn holds a tool_calls list
// with other than one call.
func severalCalls(msgs []jinja.Value) bool {
	for _, m := range msgs {
		if !m.IsDict() {
			continue
		}
		tc, ok := m.AsDict().Get("tool_calls")
		if ok && tc.IsList() && len(tc.AsList().Items) != 1 {
			return true
		}
	}
	return false
}

// Decode decodes JSON into a template value keeping object key order, as
// Python's json.loads does: a re-ordered key would show in the rendering.
func Decode(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jinja.Undefined(), fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", tok)
	default:
		return jinja.FromGoValue(tok), nil
	}
}
