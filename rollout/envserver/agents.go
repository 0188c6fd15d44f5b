package envserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// OpenAI Agents SDK runs, as RunResult.to_input_list() gives them
// (src/agents/result.py of github.com/openai/openai-agents-python): a list
// of Responses API input items. The items read here:
//
//   - {"role": "user"|"system"|"developer", "content": string | parts}
//     (parts {"type": "input_text"|"output_text", "text"});
//   - {"type": "message", "role": "assistant", "content": [{"type":
//     "output_text", "text"} | {"type": "refusal", "refusal"}]};
//   - {"type": "function_call", "call_id", "name", "arguments": string};
//   - {"type": "function_call_output", "call_id", "output"}
//     (ItemHelpers.tool_call_output_item in src/agents/items.py);
//   - {"type": "reasoning", "summary": [{"type": "summary_text", "text"}]}.
//
// A model turn is an assistant message and the function calls after it,
// up to the first call output or user message. The agent's instructions
// are not among the items: add them as a system message to have the
// prompt compared.

type agentsItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// agentsMessages converts Agents SDK run items into OpenAI chat messages.
func agentsMessages(items []json.RawMessage) ([]json.RawMessage, error) {
	var out []map[string]any
	open := -1 // index in out of the assistant turn still taking calls
	reasoning := ""
	names := map[string]string{}
	assistant := func() map[string]any {
		if open < 0 {
			out = append(out, map[string]any{"role": "assistant", "content": ""})
			open = len(out) - 1
			if reasoning != "" {
				out[open]["reasoning_content"], reasoning = reasoning, ""
			}
		}
		return out[open]
	}
	for i, raw := range items {
		var it agentsItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("items[%d]: %v", i, err)
		}
		switch {
		case it.Type == "reasoning":
			for _, s := range it.Summary {
				reasoning += s.Text
			}
		case (it.Type == "" || it.Type == "message") && it.Role == "assistant":
			text, err := agentsText(it.Content)
			if err != nil {
				return nil, fmt.Errorf("items[%d].content: %v", i, err)
			}
			open = -1 // a new message is a new turn
			m := assistant()
			m["content"] = text
		case it.Type == "" || it.Type == "message":
			text, err := agentsText(it.Content)
			if err != nil {
				return nil, fmt.Errorf("items[%d].content: %v", i, err)
			}
			role := it.Role
			if role == "developer" {
				role = "system"
			}
			out = append(out, map[string]any{"role": role, "content": text})
			open = -1
		case it.Type == "function_call":
			if it.Name == "" || it.CallID == "" {
				return nil, fmt.Errorf("items[%d]: a function_call needs name and call_id", i)
			}
			m := assistant()
			calls, _ := m["tool_calls"].([]any)
			var args string
			if len(bytes.TrimSpace(it.Arguments)) > 0 && json.Unmarshal(it.Arguments, &args) != nil {
				args = compact(it.Arguments) // an object rather than the usual string
			}
			m["tool_calls"] = append(calls, map[string]any{"id": it.CallID, "type": "function",
				"function": map[string]any{"name": it.Name, "arguments": args}})
			names[it.CallID] = it.Name
		case it.Type == "function_call_output":
			text, err := agentsText(it.Output)
			if err != nil {
				return nil, fmt.Errorf("items[%d].output: %v", i, err)
			}
			out = append(out, map[string]any{"role": "tool", "tool_call_id": it.CallID, "name": names[it.CallID], "content": text})
			open = -1
		default:
			return nil, fmt.Errorf("items[%d]: item type %q is not read (function tools only)", i, it.Type)
		}
	}
	msgs := make([]json.RawMessage, len(out))
	for i, m := range out {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		msgs[i] = b
	}
	return msgs, nil
}

// agentsText is the text of a content or output: a string, or parts.
func agentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return contentText(raw)
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		}
	}
	return b.String(), nil
}
