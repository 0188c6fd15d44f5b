package envserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Action is one assistant turn sent by the client (the body's "action" in
// POST /step, the "data" of a WebSocket step message). Exactly one form:
//
//   - a tool call, OpenEnv's CallToolAction shape: {"tool_name", "arguments"};
//   - several calls in one turn, OpenAI's shape: {"tool_calls": [{"id",
//     "function": {"name", "arguments"}}]}, with optional "content";
//   - the final answer, which ends the episode: {"type": "final_answer",
//     "content": "..."} (or {"final_answer": "..."}); an empty one is
//     recorded as a rollout records it (status empty_answer);
//   - a plain assistant message {"type": "message", "content"} for the
//     text frameworks (react, plan-exec), whose loop reads the text.
//
// "arguments" may be an object or a string holding one (as OpenAI sends
// it). Optional "reasoning", "finish_reason" and "usage" are recorded as a
// model server's would be.
type Action struct {
	Type         string           `json:"type,omitempty"`
	ToolName     string           `json:"tool_name,omitempty"`
	Arguments    json.RawMessage  `json:"arguments,omitempty"`
	ToolCalls    []ActionCall     `json:"tool_calls,omitempty"`
	Content      *string          `json:"content,omitempty"`
	FinalAnswer  *string          `json:"final_answer,omitempty"`
	Reasoning    string           `json:"reasoning,omitempty"`
	FinishReason string           `json:"finish_reason,omitempty"`
	Usage        trajectory.Usage `json:"usage,omitzero"`
	// Metadata is OpenEnv's Action.metadata: accepted and ignored.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ActionCall is one call of an OpenAI-shaped turn.
type ActionCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
	} `json:"function"`
}

// Action types.
const (
	TypeToolCall    = "tool_call"
	TypeFinalAnswer = "final_answer"
	TypeMessage     = "message"
)

// ErrBadAction is wrapped by every error about an action's form (HTTP 422,
// WebSocket VALIDATION_ERROR).
var ErrBadAction = errors.New("invalid action")

// DecodeAction reads an action strictly: unknown fields are refused, as
// OpenEnv's Action model (extra="forbid") refuses them.
func DecodeAction(raw []byte) (Action, error) {
	var a Action
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return a, fmt.Errorf("%w: action: want a JSON object", ErrBadAction)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("%w: action: %v", ErrBadAction, err)
	}
	return a, nil
}

// response turns the action into the assistant turn the episode loop
// receives, as a model server's answer. step numbers default call ids.
func (a Action) response(step int) (policy.Response, error) {
	var msg trajectory.Message
	msg.Role = trajectory.RoleAssistant
	msg.Reasoning = a.Reasoning
	typ := a.Type
	if typ == "" {
		switch {
		case a.FinalAnswer != nil:
			typ = TypeFinalAnswer
		case a.ToolName != "" || len(a.ToolCalls) > 0:
			typ = TypeToolCall
		case a.Content != nil:
			typ = TypeMessage
		default:
			return policy.Response{}, fmt.Errorf("%w: action: want tool_name, tool_calls, final_answer or content", ErrBadAction)
		}
	}
	switch typ {
	case TypeFinalAnswer, TypeMessage:
		if a.ToolName != "" || len(a.ToolCalls) > 0 || len(a.Arguments) > 0 {
			return policy.Response{}, fmt.Errorf("%w: action: a %s carries no tool call", ErrBadAction, typ)
		}
		switch {
		case a.FinalAnswer != nil && a.Content != nil:
			return policy.Response{}, fmt.Errorf("%w: action: give final_answer or content, not both", ErrBadAction)
		case a.FinalAnswer != nil:
			msg.Content = *a.FinalAnswer
		case a.Content != nil:
			msg.Content = *a.Content
		}
	case TypeToolCall:
		if a.FinalAnswer != nil {
			return policy.Response{}, fmt.Errorf("%w: action: a tool_call carries no final_answer", ErrBadAction)
		}
		if a.Content != nil {
			msg.Content = *a.Content
		}
		switch {
		case a.ToolName != "" && len(a.ToolCalls) > 0:
			return policy.Response{}, fmt.Errorf("%w: action: give tool_name or tool_calls, not both", ErrBadAction)
		case a.ToolName != "":
			msg.ToolCalls = append(msg.ToolCalls, toolCall(callID("", step, 0), a.ToolName, a.Arguments))
		case len(a.ToolCalls) > 0:
			if len(a.Arguments) > 0 {
				return policy.Response{}, fmt.Errorf("%w: action: arguments go inside tool_calls[].function", ErrBadAction)
			}
			for i, c := range a.ToolCalls {
				if c.Function.Name == "" {
					return policy.Response{}, fmt.Errorf("%w: action.tool_calls[%d].function.name is missing", ErrBadAction, i)
				}
				if c.Type != "" && c.Type != "function" {
					return policy.Response{}, fmt.Errorf("%w: action.tool_calls[%d].type is %q, want function", ErrBadAction, i, c.Type)
				}
				msg.ToolCalls = append(msg.ToolCalls, toolCall(callID(c.ID, step, i), c.Function.Name, c.Function.Arguments))
			}
		default:
			return policy.Response{}, fmt.Errorf("%w: action: a tool_call needs tool_name or tool_calls", ErrBadAction)
		}
	default:
		return policy.Response{}, fmt.Errorf("%w: action.type %q (want %s, %s or %s)", ErrBadAction, typ, TypeToolCall, TypeFinalAnswer, TypeMessage)
	}
	finish := a.FinishReason
	if finish == "" {
		finish = "stop"
		if len(msg.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	return policy.Response{Message: msg, FinishReason: finish, Usage: a.Usage}, nil
}

// callID is the client's id, or a deterministic one: ids the client did
// not assign must still be unique across the episode's turns.
func callID(id string, step, i int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("call_%d_%d", step, i)
}

// toolCall builds a call with its arguments kept raw and parsed, as the
// OpenAI client records them: an object or a string holding one; "" and
// "null" read as {}; anything else is kept with the reason it is not an
// object (the loop then answers the agent with an invalid-arguments error).
func toolCall(id, name string, raw json.RawMessage) trajectory.ToolCall {
	args, parsed, why, repair := normalizeArguments(raw)
	return trajectory.ToolCall{ID: id, Type: "function",
		Function: trajectory.FunctionCall{Name: name, Arguments: args, Parsed: parsed, ArgsError: why, Repair: repair}}
}

func normalizeArguments(raw json.RawMessage) (args string, parsed json.RawMessage, why, repair string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", json.RawMessage(`{}`), "", trajectory.RepairEmpty
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &args); err != nil {
			return string(raw), nil, "arguments are not a valid JSON string: " + err.Error(), ""
		}
	default:
		args = compact(raw)
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
	if v[0] != '{' {
		return args, nil, "arguments must be a JSON object", ""
	}
	return args, json.RawMessage(compact(v)), "", ""
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
