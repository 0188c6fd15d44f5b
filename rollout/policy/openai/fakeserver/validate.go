package fakeserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// violation is a request the real OpenAI API would refuse with a 400.
type violation struct {
	Param   string // JSON path of the offending field, e.g. "messages[3].tool_calls[0].function.arguments"
	Message string
}

func (v *violation) Error() string { return v.Param + ": " + v.Message }

func violatef(param, format string, args ...any) *violation {
	return &violation{Param: param, Message: fmt.Sprintf(format, args...)}
}

// Keys each object may carry. Anything else — notably our private
// parsed_arguments and arguments_error — is refused, as OpenAI refuses
// unknown properties in messages.
var (
	messageKeys  = keySet("role", "content", "name", "tool_calls", "tool_call_id", "refusal")
	toolCallKeys = keySet("id", "type", "function")
	functionKeys = keySet("name", "arguments")
	toolKeys     = keySet("type", "function")
	toolFuncKeys = keySet("name", "description", "parameters", "strict")
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

type object = map[string]json.RawMessage

// validate checks a chat-completions request body the way the OpenAI API
// does, as far as the protocol of tool calls is concerned.
func validate(body []byte, optionalTemperature bool) *violation {
	var req object
	if err := json.Unmarshal(body, &req); err != nil {
		return violatef("body", "We could not parse the JSON body of your request: %v", err)
	}
	if s, ok := str(req["model"]); !ok || s == "" {
		return violatef("model", "you must provide a model parameter")
	}
	if t := req["temperature"]; len(t) == 0 {
		if !optionalTemperature {
			return violatef("temperature", "temperature is absent (this fake requires it to be sent explicitly)")
		}
	} else if f, ok := num(t); !ok || f < 0 || f > 2 {
		return violatef("temperature", "%s is not a number between 0 and 2", t)
	}
	if s := req["seed"]; len(s) > 0 && !isInt(s) {
		return violatef("seed", "%s is not an integer", s)
	}
	for _, key := range []string{"max_tokens", "max_completion_tokens"} {
		if m := req[key]; len(m) > 0 {
			if f, ok := num(m); !ok || f < 1 || !isInt(m) {
				return violatef(key, "%s is not a positive integer", m)
			}
		}
	}
	tools, v := validateTools(req["tools"])
	if v != nil {
		return v
	}
	if tc := req["tool_choice"]; len(tc) > 0 && string(tc) != "null" {
		if tools == 0 {
			return violatef("tool_choice", "'tool_choice' is only allowed when 'tools' are specified")
		}
		if s, ok := str(tc); ok {
			if s != "none" && s != "auto" && s != "required" {
				return violatef("tool_choice", "%q is not one of 'none', 'auto', 'required'", s)
			}
		} else if !isObject(tc) {
			return violatef("tool_choice", "must be a string or an object")
		}
	}
	return validateMessages(req["messages"])
}

func validateTools(raw json.RawMessage) (int, *violation) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var tools []object
	if err := json.Unmarshal(raw, &tools); err != nil {
		return 0, violatef("tools", "must be an array of objects")
	}
	if len(tools) == 0 {
		return 0, violatef("tools", "[] is too short")
	}
	for i, t := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		if v := unknownKeys(p, t, toolKeys); v != nil {
			return 0, v
		}
		if s, _ := str(t["type"]); s != "function" {
			return 0, violatef(p+".type", "must be 'function'")
		}
		var fn object
		if json.Unmarshal(t["function"], &fn) != nil || fn == nil {
			return 0, violatef(p+".function", "must be an object")
		}
		if v := unknownKeys(p+".function", fn, toolFuncKeys); v != nil {
			return 0, v
		}
		if s, ok := str(fn["name"]); !ok || s == "" {
			return 0, violatef(p+".function.name", "must be a non-empty string")
		}
		if params := fn["parameters"]; len(params) > 0 && !isObject(params) {
			return 0, violatef(p+".function.parameters", "must be a JSON Schema object")
		}
	}
	return len(tools), nil
}

func validateMessages(raw json.RawMessage) *violation {
	var msgs []object
	if len(raw) == 0 || json.Unmarshal(raw, &msgs) != nil {
		return violatef("messages", "must be an array of message objects")
	}
	if len(msgs) == 0 {
		return violatef("messages", "[] is too short - 'messages'")
	}
	// pending: ids of the last assistant message's tool calls that no tool
	// message has answered yet; answered: those that one has.
	var pending, answered map[string]bool
	pendingFrom := -1
	unanswered := func(i int) *violation {
		var ids []string
		for id := range pending {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return violatef(fmt.Sprintf("messages[%d]", pendingFrom),
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s",
			strings.Join(ids, ", "))
	}
	for i, m := range msgs {
		p := fmt.Sprintf("messages[%d]", i)
		if v := unknownKeys(p, m, messageKeys); v != nil {
			return v
		}
		role, _ := str(m["role"])
		if role != "tool" && len(pending) > 0 {
			return unanswered(i)
		}
		hasCalls := len(m["tool_calls"]) > 0 && string(m["tool_calls"]) != "null"
		if role != "assistant" && hasCalls {
			return violatef(p+".tool_calls", "only assistant messages may carry tool_calls")
		}
		if role != "tool" && len(m["tool_call_id"]) > 0 {
			return violatef(p+".tool_call_id", "only tool messages may carry tool_call_id")
		}
		switch role {
		case "system", "developer", "user", "tool":
			if !isContent(m["content"]) {
				return violatef(p+".content", "Invalid type for 'messages[%d].content': expected one of a string or array of objects", i)
			}
		case "assistant":
			c, present := m["content"]
			null := !present || string(c) == "null"
			if !null && !isContent(c) {
				return violatef(p+".content", "Invalid type: expected a string, an array of objects or null")
			}
			if null && !hasCalls {
				return violatef(p+".content", "'content' is required unless 'tool_calls' is specified")
			}
		default:
			return violatef(p+".role", "%q is not one of 'system', 'developer', 'user', 'assistant', 'tool'", role)
		}

		switch role {
		case "assistant":
			pending, answered, pendingFrom = map[string]bool{}, map[string]bool{}, i
			if !hasCalls {
				continue
			}
			var calls []object
			if json.Unmarshal(m["tool_calls"], &calls) != nil || len(calls) == 0 {
				return violatef(p+".tool_calls", "must be a non-empty array of objects")
			}
			for j, call := range calls {
				cp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
				if v := validateCall(cp, call); v != nil {
					return v
				}
				id, _ := str(call["id"])
				if pending[id] {
					return violatef(cp+".id", "duplicate tool call id %q", id)
				}
				pending[id] = true
			}
		case "tool":
			id, ok := str(m["tool_call_id"])
			if !ok || id == "" {
				return violatef(p+".tool_call_id", "must be a non-empty string")
			}
			switch {
			case pending[id]:
				delete(pending, id)
				answered[id] = true
			case answered[id]:
				return violatef(p+".tool_call_id", "tool call %q is answered more than once", id)
			default:
				return violatef(p, "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (no pending tool call has id %q)", id)
			}
		default:
			pending, answered = nil, nil
		}
	}
	if len(pending) > 0 {
		return unanswered(len(msgs))
	}
	return nil
}

func validateCall(p string, call object) *violation {
	if v := unknownKeys(p, call, toolCallKeys); v != nil {
		return v
	}
	if id, ok := str(call["id"]); !ok || id == "" {
		return violatef(p+".id", "tool call id must be a non-empty string")
	}
	if t, _ := str(call["type"]); t != "function" {
		return violatef(p+".type", "must be 'function'")
	}
	var fn object
	if json.Unmarshal(call["function"], &fn) != nil || fn == nil {
		return violatef(p+".function", "must be an object")
	}
	if v := unknownKeys(p+".function", fn, functionKeys); v != nil {
		return v
	}
	if _, ok := str(fn["name"]); !ok {
		return violatef(p+".function.name", "must be a string")
	}
	if _, ok := str(fn["arguments"]); !ok {
		return violatef(p+".function.arguments", "Invalid type: expected a string, but got %s", kind(fn["arguments"]))
	}
	return nil
}

func unknownKeys(p string, o object, allowed map[string]bool) *violation {
	var bad []string
	for k := range o {
		if !allowed[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return violatef(p, "Unrecognized request argument(s): %s", strings.Join(bad, ", "))
}

func str(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func num(raw json.RawMessage) (float64, bool) {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}

func isInt(raw json.RawMessage) bool {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return false
	}
	_, err := n.Int64()
	return err == nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// isContent: a string, or an array of content parts.
func isContent(raw json.RawMessage) bool {
	if _, ok := str(raw); ok {
		return true
	}
	var parts []object
	return len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &parts) == nil
}

func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
