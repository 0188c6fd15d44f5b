package openai

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// The types below are the chat-completions protocol as sent on the wire.
// They exist so that our private trajectory fields (parsed_arguments,
// arguments_error) can never leak into a request.

type chatRequest struct {
	Model      string            `json:"model"`
	Messages   []wireMessage     `json:"messages"`
	Tools      []json.RawMessage `json:"tools,omitempty"`
	ToolChoice string            `json:"tool_choice,omitempty"`
	// Temperature is sent unless the caller omits it: 0 means greedy, not
	// "server default".
	Temperature         *float64 `json:"temperature,omitempty"`
	Seed                int64    `json:"seed"`
	MaxTokens           int      `json:"max_tokens,omitempty"`
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"` // nil: see EmptyContent
	null       bool           // send "content": null instead of omitting it
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// MarshalJSON adds "content": null when asked; encoding/json cannot express
// "null here, absent there" with one field.
func (m wireMessage) MarshalJSON() ([]byte, error) {
	type plain wireMessage
	if !m.null {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		Role       string         `json:"role"`
		Content    *string        `json:"content"`
		Name       string         `json:"name,omitempty"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}{m.Role, nil, m.Name, m.ToolCalls, m.ToolCallID})
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON string, always: the protocol requires it
}

type wireTool struct {
	Type     string           `json:"type"`
	Function wireToolFunction `json:"function"`
}

type wireToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptyParameters is sent for a tool without a schema; several chat
// templates index into "parameters" unconditionally.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// EmptyContent says how an assistant message that has tool calls and no
// text is sent. The protocol allows null or absent content there, but
// servers disagree about which they accept (llama.cpp and LM Studio have
// rejected null, older llama.cpp rejected absent content).
type EmptyContent int

const (
	// ContentOmit leaves "content" out (the default; OpenAI, vLLM, SGLang,
	// Ollama and current llama.cpp accept it).
	ContentOmit EmptyContent = iota
	// ContentNull sends "content": null, as OpenAI itself returns it.
	ContentNull
	// ContentEmptyString sends "content": "".
	ContentEmptyString
)

// toolCache holds the wire encoding of tools already sent. A run offers the
// same few tools on every request of every episode, and encoding their
// schemas again each time was a tenth of the client's CPU. Entries are keyed
// by the tool's name, description and the identity of its parameters'
// bytes, which callers do not mutate; the cache is emptied when it grows
// past maxCachedTools, so callers that build tools afresh cannot grow it
// without bound.
type toolCache struct {
	mu sync.Mutex
	m  map[toolKey]json.RawMessage
}

type toolKey struct {
	name, description string
	params            *byte
	n                 int
}

const maxCachedTools = 4096

func (c *toolCache) encode(t policy.Tool) (json.RawMessage, error) {
	key := toolKey{name: t.Name, description: t.Description, n: len(t.Parameters)}
	if len(t.Parameters) > 0 {
		key.params = &t.Parameters[0]
	}
	if c != nil {
		c.mu.Lock()
		b, ok := c.m[key]
		c.mu.Unlock()
		if ok {
			return b, nil
		}
	}
	params := t.Parameters
	if len(bytes.TrimSpace(params)) == 0 {
		params = emptyParameters
	}
	b, err := json.Marshal(wireTool{Type: "function", Function: wireToolFunction{
		Name: t.Name, Description: t.Description, Parameters: params,
	}})
	if err != nil || c == nil {
		return b, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedTools {
		c.m = map[toolKey]json.RawMessage{}
	}
	c.m[key] = b
	c.mu.Unlock()
	return b, nil
}

func encodeRequest(model string, req policy.Request, empty EmptyContent, tools *toolCache, completionTokens bool) ([]byte, error) {
	wr := chatRequest{
		Model:    model,
		Messages: make([]wireMessage, 0, len(req.Messages)),
		Seed:     req.Seed,
	}
	if !req.OmitTemperature {
		t := req.Temperature
		wr.Temperature = &t
	}
	if completionTokens {
		wr.MaxCompletionTokens = max(req.MaxTokens, 0)
	} else {
		wr.MaxTokens = max(req.MaxTokens, 0)
	}
	for _, m := range req.Messages {
		wr.Messages = append(wr.Messages, toWire(m, empty))
	}
	for _, t := range req.Tools {
		b, err := tools.encode(t)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		wr.Tools = append(wr.Tools, b)
	}
	// OpenAI rejects tool_choice without tools.
	if len(wr.Tools) > 0 {
		wr.ToolChoice = req.ToolChoice
	}
	return json.Marshal(wr)
}

func toWire(m trajectory.Message, empty EmptyContent) wireMessage {
	w := wireMessage{Role: m.Role, ToolCallID: m.ToolCallID}
	// "name" is defined for system, user and assistant messages only; some
	// servers reject it on tool messages.
	if m.Role != trajectory.RoleTool {
		w.Name = m.Name
	}
	content := m.Content
	w.Content = &content
	if m.Role == trajectory.RoleAssistant && len(m.ToolCalls) > 0 {
		for _, tc := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, wireToolCall{
				ID:       tc.ID,
				Type:     "function",
				Function: wireFunction{Name: tc.Function.Name, Arguments: wireArguments(tc.Function)},
			})
		}
		if m.Content == "" {
			switch empty {
			case ContentOmit:
				w.Content = nil
			case ContentNull:
				w.Content, w.null = nil, true
			}
		}
	}
	return w
}

// wireArguments is the arguments string sent back for a recorded call.
// Arguments that never parsed as a JSON object go back as
// {"_raw": "<what the model wrote>"}: vLLM's chat preprocessing decodes
// every assistant call's arguments and answers 400 on invalid JSON, which
// would end the episode, while the model should see its mistake and the
// tool error that answered it. The record keeps the raw text.
//
// Repaired arguments go back as the object they were read as: "" and
// "null" as "{}" (vLLM and several chat templates json-decode them and
// fail on ""), a double-encoded object as the object itself.
func wireArguments(fc trajectory.FunctionCall) string {
	if fc.ArgsError == "" {
		if (fc.Repair != "" || strings.TrimSpace(fc.Arguments) == "") && len(fc.Parsed) > 0 {
			return string(fc.Parsed)
		}
		if strings.TrimSpace(fc.Arguments) == "" {
			return "{}"
		}
		return fc.Arguments
	}
	b, err := json.Marshal(map[string]string{"_raw": fc.Arguments})
	if err != nil {
		return "{}"
	}
	return string(b)
}

// chatResponse is what servers send back, read leniently.
type chatResponse struct {
	Choices []struct {
		Message      *respMessage `json:"message"`
		FinishReason lenientText  `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"` // some proxies answer 200 with an error body
	// PromptFilterResults: Azure OpenAI's content filter, which answers 200
	// with no choices when it blocks the prompt.
	PromptFilterResults json.RawMessage `json:"prompt_filter_results"`
}

type respMessage struct {
	Content json.RawMessage `json:"content"` // string, null, absent, or an array of parts
	Refusal lenientText     `json:"refusal"`
	// Reasoning as servers send it apart from content: vLLM and SGLang with
	// a reasoning parser and llama.cpp use reasoning_content; Ollama and
	// newer vLLM use reasoning.
	ReasoningContent lenientText    `json:"reasoning_content"`
	Reasoning        lenientText    `json:"reasoning"`
	ToolCalls        []respToolCall `json:"tool_calls"`
	FunctionCall     *respFunction  `json:"function_call"` // legacy single call
}

type respToolCall struct {
	ID       lenientText  `json:"id"`
	Type     lenientText  `json:"type"`
	Function respFunction `json:"function"`
}

type respFunction struct {
	Name      lenientText     `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a string, or an object some servers send
}

// lenientText accepts a string, a number or null.
type lenientText string

func (t *lenientText) UnmarshalJSON(b []byte) error {
	s, ok := jsonText(b)
	if !ok && string(bytes.TrimSpace(b)) != "null" {
		return fmt.Errorf("expected a string, got %s", clip(string(b)))
	}
	*t = lenientText(s)
	return nil
}

// Ways a 2xx body can be unusable; they are classified differently.
var (
	errNotJSON    = errors.New("response is not a chat completion")
	errNoChoices  = errors.New("response has no choices")
	errFiltered   = errors.New("the endpoint's content filter blocked the prompt (200 with no choices and prompt_filter_results)")
	errBadMessage = errors.New("unusable assistant message")
)

// decodeResponse turns a 200 body into a Response. idSeed feeds the
// generation of missing tool-call ids so that they are reproducible.
func decodeResponse(body []byte, idSeed idSeed) (policy.Response, error) {
	var cr chatResponse
	if err := json.Unmarshal(body, &cr); err != nil {
		return policy.Response{}, fmt.Errorf("%w: %v", errNotJSON, err)
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message == nil {
		if len(cr.PromptFilterResults) > 0 && string(cr.PromptFilterResults) != "null" {
			return policy.Response{}, errFiltered
		}
		return policy.Response{}, errNoChoices
	}
	choice := cr.Choices[0]
	rm := choice.Message

	content, err := decodeContent(rm.Content)
	if err != nil {
		return policy.Response{}, fmt.Errorf("%w: %v", errBadMessage, err)
	}
	if content == "" {
		content = string(rm.Refusal)
	}
	msg := trajectory.Message{Role: trajectory.RoleAssistant, Content: content}
	msg.Reasoning = strings.TrimSpace(string(rm.ReasoningContent))
	if msg.Reasoning == "" {
		msg.Reasoning = strings.TrimSpace(string(rm.Reasoning))
	}

	calls := rm.ToolCalls
	if len(calls) == 0 && rm.FunctionCall != nil {
		calls = []respToolCall{{Function: *rm.FunctionCall}}
	}
	// Every call gets an id of the client's, unique in the episode: servers
	// and gateways reuse ids across turns ("call_0" every turn) or omit
	// them, and the judge's strip and every view key on ids. The server's
	// id is kept beside it (ServerID), never sent back.
	seen := make(map[string]bool, len(calls))
	for i, rc := range calls {
		id := ""
		for salt := 0; id == "" || seen[id] || idSeed.used[id]; salt++ {
			id = idSeed.id(i, salt)
		}
		seen[id] = true
		args, parsed, argsErr, repair := normalizeArguments(rc.Function.Arguments)
		msg.ToolCalls = append(msg.ToolCalls, trajectory.ToolCall{
			ID:       id,
			ServerID: string(rc.ID),
			Type:     "function",
			Function: trajectory.FunctionCall{
				Name: string(rc.Function.Name), Arguments: args, Parsed: parsed, ArgsError: argsErr, Repair: repair,
			},
		})
	}

	resp := policy.Response{Message: msg, FinishReason: policy.NormalizeFinish(string(choice.FinishReason), len(msg.ToolCalls) > 0)}
	if r := strings.TrimSpace(string(rm.Refusal)); r != "" {
		// OpenAI's refusal field: the model declined, which is not an answer.
		resp.Refusal = r
	}
	if u := cr.Usage; u != nil {
		resp.Usage = trajectory.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
		if resp.Usage.TotalTokens == 0 {
			resp.Usage.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
	}
	return resp, nil
}

// decodeContent is the message content as text (trajectory.ContentText),
// an error quoting what could not be read.
func decodeContent(raw json.RawMessage) (string, error) {
	s, err := trajectory.ContentText(raw)
	if err != nil {
		return "", fmt.Errorf("unsupported content %s: %w", clip(string(bytes.TrimSpace(raw))), err)
	}
	return s, nil
}

// normalizeArguments returns the arguments as the model produced them (a
// string, or an object's compact text when the server sent an object), the
// parsed object when they are one, otherwise why not, and the repair made:
//
//   - "" or absent (llama.cpp and Ollama for parameterless calls): {} ("empty");
//   - "null" (some Hermes-style parsers for parameterless calls): {} ("null");
//   - a JSON string holding a JSON object (double-encoded, seen from
//     gateways and fine-tunes that json.dumps twice): the object
//     ("double_encoded").
func normalizeArguments(raw json.RawMessage) (args string, parsed json.RawMessage, argsErr, repair string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		args = ""
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &args); err != nil {
			return string(raw), nil, "arguments are not a valid JSON string: " + err.Error(), ""
		}
	default:
		args = string(compactJSON(raw))
	}
	switch strings.TrimSpace(args) {
	case "":
		return args, json.RawMessage(`{}`), "", trajectory.RepairEmpty
	case "null":
		return args, json.RawMessage(`{}`), "", trajectory.RepairNull
	}
	var v json.RawMessage
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return args, nil, "arguments are not valid JSON: " + err.Error(), ""
	}
	if v[0] == '"' {
		var inner string
		if json.Unmarshal(v, &inner) == nil {
			var obj json.RawMessage
			if json.Unmarshal([]byte(inner), &obj) == nil && len(obj) > 0 && obj[0] == '{' {
				return args, json.RawMessage(compactJSON(obj)), "", trajectory.RepairDoubleEncoded
			}
		}
	}
	if v[0] != '{' {
		return args, nil, "arguments must be a JSON object, got " + jsonKind(v[0]), ""
	}
	return args, json.RawMessage(compactJSON(v)), "", ""
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// idSeed derives tool-call ids from the request, so that a replayed episode
// gets the same ids as the first run; used holds the ids the conversation
// already carries, which a new call must not take.
type idSeed struct {
	seed     int64
	messages int
	used     map[string]bool
}

// newIDSeed is the id source for the answer to req.
func newIDSeed(req policy.Request) idSeed {
	s := idSeed{seed: req.Seed, messages: len(req.Messages)}
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			if s.used == nil {
				s.used = map[string]bool{}
			}
			s.used[tc.ID] = true
		}
	}
	return s
}

// idAlphabet: nine alphanumeric characters is what the strictest chat
// templates (Mistral's) accept as a tool-call id.
const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (s idSeed) id(index, salt int) string {
	var buf [32]byte
	binary.BigEndian.PutUint64(buf[0:], uint64(s.seed))
	binary.BigEndian.PutUint64(buf[8:], uint64(s.messages))
	binary.BigEndian.PutUint64(buf[16:], uint64(index))
	binary.BigEndian.PutUint64(buf[24:], uint64(salt))
	sum := sha256.Sum256(buf[:])
	out := make([]byte, 9)
	for i := range out {
		out[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return string(out)
}
