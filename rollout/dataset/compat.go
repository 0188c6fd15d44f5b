package dataset

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Compat names a family of chat templates whose rules the default rows
// break, and rewrites rows so that those templates render them correctly
// (the prompt a prefix of prompt + completion, every turn kept).
type Compat string

const (
	// CompatNone: the OpenAI message layout, as Qwen2.5/3, Llama-3.x and
	// Phi-3.5 templates read it (the default).
	CompatNone Compat = ""
	// CompatMistral (Mistral-7B-Instruct-v0.3, Mistral-Nemo tool
	// templates): the system message is merged into the first user turn
	// (the templates add it only when a user turn is last, so a prompt
	// would not be a prefix of prompt + completion), and tool-call ids are
	// rewritten to the 9 alphanumeric characters the templates require
	// (the same id for a call and its result).
	CompatMistral Compat = "mistral"
	// CompatGemma (Gemma-2, Gemma-3): no system, tool or tool-call
	// rendering and strict user/model alternation. The system message and
	// the tool schemas are merged into the first user turn, a turn's tool
	// calls are written into its content as JSON lines
	// ({"name": …, "arguments": {…}}), and the tool results that answer a
	// turn become one user turn; the tools column is left empty.
	CompatGemma Compat = "gemma"
	// CompatDeepSeek (DeepSeek-V3): the template concatenates tool-call
	// arguments as text, so arguments are written as JSON strings.
	CompatDeepSeek Compat = "deepseek"
)

// Compats lists the values of --template-compat.
var Compats = []Compat{CompatMistral, CompatGemma, CompatDeepSeek}

// ParseCompat reads a --template-compat value ("" or "none": no rewriting).
func ParseCompat(s string) (Compat, error) {
	switch c := Compat(s); c {
	case "", "none":
		return CompatNone, nil
	case CompatMistral, CompatGemma, CompatDeepSeek:
		return c, nil
	}
	return "", fmt.Errorf("template-compat %q: want mistral, gemma, deepseek or none", s)
}

// FinishRow applies the options that act on a whole row once its columns
// are rendered: the tool schemas into the system message
// (RenderOptions.ToolsInSystem, implied by CompatGemma), then the template
// rewriting of RenderOptions.Compat over the prompt and every completion
// column (comps, rewritten in place). It returns the prompt and tools.
func FinishRow(o RenderOptions, prompt, tools []json.RawMessage, comps ...*[]json.RawMessage) ([]json.RawMessage, []json.RawMessage) {
	if o.ToolsInSystem || o.Compat == CompatGemma {
		prompt, tools = ToolsInSystem(prompt, tools)
	}
	switch o.Compat {
	case CompatMistral, CompatGemma, CompatDeepSeek:
		prompt = compatMessages(o.Compat, prompt, true)
		for _, c := range comps {
			*c = compatMessages(o.Compat, *c, false)
		}
	}
	return prompt, tools
}

// compatMessages rewrites one column's messages; prompt says the column
// starts the conversation (where a system message can be).
func compatMessages(c Compat, msgs []json.RawMessage, prompt bool) []json.RawMessage {
	ws := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		var w wireMessage
		if json.Unmarshal(m, &w) != nil {
			return msgs // not ours: leave it as it is
		}
		ws = append(ws, w)
	}
	if prompt && c != CompatDeepSeek && len(ws) > 1 && ws[0].Role == trajectory.RoleSystem && ws[1].Role == trajectory.RoleUser {
		ws[1].Content = ws[0].Content + "\n\n" + ws[1].Content
		ws = ws[1:]
	}
	var out []json.RawMessage
	switch c {
	case CompatMistral:
		for i := range ws {
			ws[i].ToolCallID = mistralID(ws[i].ToolCallID)
			for j := range ws[i].ToolCalls {
				ws[i].ToolCalls[j].ID = mistralID(ws[i].ToolCalls[j].ID)
			}
		}
	case CompatGemma:
		var merged []wireMessage
		for _, w := range ws {
			switch {
			case w.Role == trajectory.RoleTool:
				if n := len(merged); n > 0 && merged[n-1].Role == trajectory.RoleUser && merged[n-1].Name == "\x00tool" {
					merged[n-1].Content += "\n" + w.Content
					continue
				}
				merged = append(merged, wireMessage{Role: trajectory.RoleUser, Content: w.Content, Name: "\x00tool"})
				continue
			case len(w.ToolCalls) > 0:
				var lines []string
				if strings.TrimSpace(w.Content) != "" {
					lines = append(lines, w.Content)
				}
				for _, tc := range w.ToolCalls {
					b, _ := json.Marshal(struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					}{tc.Function.Name, tc.Function.Arguments})
					lines = append(lines, string(b))
				}
				w = wireMessage{Role: w.Role, Content: strings.Join(lines, "\n"), Reasoning: w.Reasoning}
			}
			merged = append(merged, w)
		}
		for i := range merged {
			if merged[i].Name == "\x00tool" {
				merged[i].Name = ""
			}
		}
		ws = merged
	case CompatDeepSeek:
		for i := range ws {
			for j := range ws[i].ToolCalls {
				a := ws[i].ToolCalls[j].Function.Arguments
				s, _ := json.Marshal(string(a))
				ws[i].ToolCalls[j].Function.Arguments = s
			}
		}
	}
	for _, w := range ws {
		b, err := json.Marshal(w)
		if err != nil {
			panic(err) // strings and parsed JSON always marshal
		}
		out = append(out, b)
	}
	return out
}

// mistralID maps a tool-call id to 9 alphanumeric characters, the same for
// the call and its result ("" stays "").
func mistralID(id string) string {
	if id == "" {
		return ""
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	h := sha256.Sum256([]byte(id))
	b := make([]byte, 9)
	for i := range b {
		b[i] = alnum[int(h[i])%len(alnum)]
	}
	return string(b)
}
