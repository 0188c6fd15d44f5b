// Package trajectory holds the record of one finished episode and the chat
// messages it is made of. It imports nothing heavier than encoding/json, so
// that pairs, rewards and export depend on the data, never on the engine.
package trajectory

import "encoding/json"

// Message is one OpenAI chat message as the episode saw it.
//
// Content is a plain string: a null content from the server is recorded as
// absent (omitempty), never as null.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// Reasoning is the model's reasoning, kept apart from Content: the
	// server's reasoning_content / reasoning field, or a <think> block
	// taken out of the content. Never sent back, never parsed as an
	// action, a plan or a verdict, and left out of exports unless asked.
	Reasoning  string     `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
	// Recovered names the markup a call was recovered from when the server
	// left it in the content (hermes, mistral, phi, function_tag, json);
	// "" for a call the server parsed itself.
	Recovered string `json:"recovered,omitempty"`
	// ServerID is the id the server gave the call when it differs from ID:
	// antidrift gives every call its own id, unique in the episode (servers
	// and gateways reuse "call_0" every turn or omit ids), and sends that
	// one back. Kept for tracing a call to the server's logs.
	ServerID string `json:"server_id,omitempty"`
}

// FunctionCall keeps the arguments twice: Arguments exactly as the model
// produced them (a string, or an object's JSON text when the server sent an
// object), and Parsed as a JSON object when Arguments parses as one. Parsed is
// absent when the arguments were not a valid JSON object; ArgsError says why.
type FunctionCall struct {
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Parsed    json.RawMessage `json:"parsed_arguments,omitempty"`
	ArgsError string          `json:"arguments_error,omitempty"`
	// Repair names what was mended in the arguments: "empty" ("" read as
	// {}), "null" ("null" read as {}), "double_encoded" (a JSON string
	// holding the object, decoded); "" when nothing was.
	Repair string `json:"arguments_repair,omitempty"`
}

// Argument repairs (FunctionCall.Repair).
const (
	RepairEmpty         = "empty"
	RepairNull          = "null"
	RepairDoubleEncoded = "double_encoded"
)

// Usage counts tokens as the server reported them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}
