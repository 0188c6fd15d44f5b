package dataset

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

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

// wireMessage always has content: chat templates read message.content on
// every turn (Qwen3's Hub template, Phi-3, Phi-3.5 and LFM2 fail on a
// tool-call turn without it), and TRL itself writes "" there.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Reasoning  string         `json:"reasoning_content,omitempty"` // only with RenderOptions.Reasoning
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

// MessageJSON renders a recorded message for an export: a JSON object with
// `content` always a string ("" when empty), other absent keys omitted
// (never null), tool-call arguments as the parsed object, and none of the
// record's private fields (reasoning stays in the record). Arguments that
// never parsed as an object are exported as {"_raw": "<the text>"}, so the
// column keeps one shape; training tables drop such rows (RawArguments).
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
	// Completion is the layout of multi-turn completion columns
	// (RenderCompletion): "" and CompletionRest keep every message,
	// CompletionModelTurns the assistant turns only; CompletionTurn is a
	// row layout (Turns) that the tables building rows read.
	Completion Completion
	// ToolsInSystem writes the tool schemas into the system message and
	// leaves the tools column empty (ToolsInSystem), for trainers that pass
	// no tools to the chat template.
	ToolsInSystem bool
	// Compat rewrites rows for a family of chat templates (FinishRow).
	Compat Compat
}

// MessageJSONWith is MessageJSON with options.
func MessageJSONWith(m trajectory.Message, o RenderOptions) json.RawMessage {
	if b, ok := appendMessage(make([]byte, 0, messageSize(&m, o)), &m, o); ok {
		return b
	}
	return marshalMessage(m, o)
}

// marshalMessage is the reference rendering: encoding/json over the wire
// types. appendMessage writes the same bytes (TestRenderMatchesEncodingJSON);
// it is kept for the values appendMessage leaves to it (parsed arguments
// that are not valid JSON, on which json.Marshal fails).
func marshalMessage(m trajectory.Message, o RenderOptions) json.RawMessage {
	w := wireMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	if o.Reasoning && m.Role == trajectory.RoleAssistant {
		w.Reasoning = m.Reasoning
	}
	for _, tc := range m.ToolCalls {
		args := json.RawMessage(tc.Function.Parsed)
		if !isObject(args) {
			raw, _ := json.Marshal(map[string]string{"_raw": tc.Function.Arguments})
			args = raw
		}
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: tc.ID, Type: typ, Function: wireFunction{Name: tc.Function.Name, Arguments: args}})
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(err) // plain strings and parsed JSON always marshal
	}
	return b
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// RawArguments reports whether a message of ms has a tool call whose
// arguments never parsed as a JSON object: exported, it would carry the
// {"_raw": …} fallback, which no training row may hold.
func RawArguments(ms []trajectory.Message) bool {
	for _, m := range ms {
		for _, tc := range m.ToolCalls {
			if !isObject(tc.Function.Parsed) {
				return true
			}
		}
	}
	return false
}

// Messages renders a slice of recorded messages as native tool-calling
// messages.
func Messages(ms []trajectory.Message) []json.RawMessage {
	out := make([]json.RawMessage, len(ms))
	for i, m := range ms {
		out[i] = MessageJSON(m)
	}
	return out
}

// ToolFormat says how a row's tools reached the model.
type ToolFormat string

const (
	// ToolsNative: the tools went in the request's tools list and the model
	// answered with tool_calls (frameworks normal, plan-exec, gated).
	ToolsNative ToolFormat = "native"
	// ToolsText: the tool descriptions were in the prompt text and the model
	// answered in a text protocol (framework react); rows carry that text
	// and an empty tools list.
	ToolsText ToolFormat = "text"
)

func (f ToolFormat) String() string { return string(f) }

// A TextView turns a recorded conversation into the messages a
// text-protocol model was sent (for ReAct: protocol.View).
type TextView func([]trajectory.Message) []trajectory.Message

var (
	viewsMu sync.RWMutex
	views   = map[string]TextView{}
)

// RegisterTextView declares that records of a framework were seen by the
// model as text, through view. The agent protocols live above this layer,
// so the binary registers them (cmd/antidrift: react → protocol.View).
// view must be safe for concurrent use: exports render rows on every core.
func RegisterTextView(framework string, view TextView) {
	viewsMu.Lock()
	defer viewsMu.Unlock()
	views[framework] = view
}

func textView(framework string) TextView {
	viewsMu.RLock()
	defer viewsMu.RUnlock()
	return views[framework]
}

// FormatOf is the tool format of a framework's records.
func FormatOf(framework string) ToolFormat {
	if textView(framework) != nil {
		return ToolsText
	}
	return ToolsNative
}

// Render renders messages of rec (the whole conversation or a part of it
// that starts and ends at turn boundaries) as the model saw them: native
// tool-calling messages, or the framework's text view.
func Render(rec *trajectory.Record, ms []trajectory.Message) []json.RawMessage {
	return RenderWith(rec, ms, RenderOptions{})
}

// RenderWith is Render with options (the model's reasoning on request).
func RenderWith(rec *trajectory.Record, ms []trajectory.Message, o RenderOptions) []json.RawMessage {
	if v := textView(rec.Framework); v != nil {
		ms = v(ms)
	}
	return MessagesWith(ms, o)
}

// wireTool is a tool as the OpenAI client sends it, key order included
// (rollout/policy/openai encodes this same layout).
type wireTool struct {
	Type     string           `json:"type"`
	Function wireToolFunction `json:"function"`
}

type wireToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Tools is a record's tools column: the tools exactly as the request sent
// them — {"type", "function": {"name", "description", "parameters"}} in
// that order, parameters as recorded (the scenario's key order) — or an
// empty list for a text-protocol framework, which sent none. A recorded
// tool with other keys is kept as recorded.
func Tools(rec *trajectory.Record) []json.RawMessage {
	if FormatOf(rec.Framework) == ToolsText {
		return []json.RawMessage{}
	}
	out := make([]json.RawMessage, 0, len(rec.Tools))
	for _, t := range rec.Tools {
		out = append(out, wireOrderCached(t))
	}
	return out
}

// wireOrders memoises wireOrder by the recorded bytes: every record of a
// scenario carries the same tools, so a run of thousands of records has
// only as many distinct tools as its scenarios. Bounded, so that a run of
// endlessly varied tools costs only the uncached work.
var wireOrders = struct {
	sync.RWMutex
	m map[string]json.RawMessage
}{m: map[string]json.RawMessage{}}

const wireOrdersMax = 8192

// wireOrderCached is wireOrder through wireOrders. The result may be shared
// between rows: it is capped at its length, so an append copies it.
func wireOrderCached(t json.RawMessage) json.RawMessage {
	wireOrders.RLock()
	w, ok := wireOrders.m[string(t)]
	wireOrders.RUnlock()
	if ok {
		return w
	}
	w = slices.Clip(bytes.Clone(wireOrder(t))) // not the record's own bytes, which a reader may reuse
	wireOrders.Lock()
	if len(wireOrders.m) < wireOrdersMax {
		wireOrders.m[string(t)] = w
	}
	wireOrders.Unlock()
	return w
}

var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

func wireOrder(t json.RawMessage) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(t, &top) != nil || len(top) != 2 || top["function"] == nil || string(top["type"]) != `"function"` {
		return t
	}
	var fn map[string]json.RawMessage
	if json.Unmarshal(top["function"], &fn) != nil || fn["name"] == nil {
		return t
	}
	for k := range fn {
		if k != "name" && k != "description" && k != "parameters" {
			return t
		}
	}
	var w wireTool
	if json.Unmarshal(t, &w) != nil {
		return t
	}
	w.Function.Parameters = fn["parameters"]
	if p := bytes.TrimSpace(w.Function.Parameters); len(p) == 0 || string(p) == "null" {
		w.Function.Parameters = emptyParameters // what the client sends for a tool without a schema
	}
	b, err := json.Marshal(w)
	if err != nil {
		return t
	}
	return b
}

// MessagesWith renders a slice of recorded messages with options. The
// messages share one buffer (each capped at its length, so that an append
// to one copies it).
func MessagesWith(ms []trajectory.Message, o RenderOptions) []json.RawMessage {
	out := make([]json.RawMessage, len(ms))
	n := 0
	for i := range ms {
		n += messageSize(&ms[i], o)
	}
	buf := make([]byte, 0, n)
	for i := range ms {
		start := len(buf)
		b, ok := appendMessage(buf, &ms[i], o)
		if !ok {
			out[i] = marshalMessage(ms[i], o)
			continue
		}
		buf = b
		out[i] = json.RawMessage(buf[start:len(buf):len(buf)])
	}
	return out
}
