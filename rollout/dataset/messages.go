package dataset

import (
	"encoding/json"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// wireToolCall is a tool call as trainers expect it: arguments as an object.
type wireToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	Reasoning  string         `json:"reasoning_content,omitempty"` // only with RenderOptions.Reasoning
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

// MessageJSON renders a recorded message for an export: a JSON object with
// absent keys omitted (never null), tool-call arguments as the parsed
// object, and none of the record's private fields. Arguments that never
// parsed as an object are exported as {"_raw": "<the text>"}, so the column
// keeps one shape and nothing the model wrote is lost.
//
// The model's reasoning (Message.Reasoning) is left out: trainers would
// otherwise learn from text the policy never showed as its answer. Use
// MessageJSONWith to include it.
func MessageJSON(m trajectory.Message) json.RawMessage {
	return MessageJSONWith(m, RenderOptions{})
}

// RenderOptions choose what a rendered message carries beyond the answer.
type RenderOptions struct {
	// Reasoning adds the model's reasoning as "reasoning_content" (the key
	// Qwen3 and DeepSeek-R1 chat templates read) on assistant messages.
	Reasoning bool
}

// MessageJSONWith is MessageJSON with options.
func MessageJSONWith(m trajectory.Message, o RenderOptions) json.RawMessage {
	w := wireMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	if o.Reasoning && m.Role == trajectory.RoleAssistant {
		w.Reasoning = m.Reasoning
	}
	for _, tc := range m.ToolCalls {
		args := json.RawMessage(tc.Function.Parsed)
		if len(args) == 0 {
			raw, _ := json.Marshal(map[string]string{"_raw": tc.Function.Arguments})
			args = raw
		}
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: tc.ID, Type: typ, Function: wireFunction{Name: tc.Function.Name, Arguments: args}})
	}
	if m.Role == trajectory.RoleAssistant && m.Content == "" && len(w.ToolCalls) == 0 && w.Reasoning == "" {
		// An empty assistant turn still needs a content key for chat templates.
		b, _ := json.Marshal(map[string]string{"role": m.Role, "content": ""})
		return b
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(err) // plain strings and parsed JSON always marshal
	}
	return b
}

// Messages renders a slice of recorded messages.
func Messages(ms []trajectory.Message) []json.RawMessage {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		out[i] = MessageJSON(m)
	}
	return out
}

// MessagesWith renders a slice of recorded messages with options.
func MessagesWith(ms []trajectory.Message, o RenderOptions) []json.RawMessage {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		out[i] = MessageJSONWith(m, o)
	}
	return out
}
