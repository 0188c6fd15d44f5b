package envserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// inspect-ai eval logs (the JSON log format, EvalLog in
// src/inspect_ai/log/_log.py of github.com/UKGovernmentBEIS/inspect_ai):
// {"eval": {"task", "model", ...}, "samples": [{"id", "epoch", "metadata",
// "messages": [ChatMessage]}]}, where a ChatMessage
// (src/inspect_ai/model/_chat_message.py) has "role", "content" (a string
// or content parts: {"type": "text", "text"}, {"type": "reasoning",
// "reasoning"}), an assistant's "tool_calls" ([{"id", "function",
// "arguments": object}], ToolCall in src/inspect_ai/tool/_tool_call.py),
// a tool message's "tool_call_id", "function" and "error" ({"type",
// "message"}). The binary .eval format is a zip of the same JSON; convert
// it with `inspect log convert --to json` first.

type inspectLog struct {
	Eval struct {
		Task  string `json:"task"`
		Model string `json:"model"`
	} `json:"eval"`
	Samples *[]inspectSample `json:"samples"`
}

type inspectSample struct {
	ID       json.RawMessage   `json:"id"`
	Epoch    int               `json:"epoch"`
	Metadata map[string]any    `json:"metadata"`
	Messages []json.RawMessage `json:"messages"`
}

type inspectMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID json.RawMessage `json:"tool_call_id"`
	Function   string          `json:"function"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	ToolCalls []struct {
		ID        string          `json:"id"`
		Function  string          `json:"function"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
}

// IsInspectLog reports whether a file's bytes are an inspect-ai JSON log
// (one object with "eval" and "samples"), as opposed to JSONL traces.
func IsInspectLog(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var l inspectLog
	return json.Unmarshal(b, &l) == nil && l.Samples != nil && (l.Eval.Task != "" || l.Eval.Model != "")
}

// InspectTraces converts an inspect-ai JSON log's samples into traces. A
// sample's scenario is its metadata's scenario_id, else its id; the policy
// is the log's model. Errors name the sample and the message.
func InspectTraces(b []byte) ([]Trace, error) {
	var l inspectLog
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%w: inspect-ai log: %v", ErrBadTrace, err)
	}
	if l.Samples == nil {
		return nil, fmt.Errorf("%w: inspect-ai log: no samples (a log written with samples excluded?)", ErrBadTrace)
	}
	out := make([]Trace, 0, len(*l.Samples))
	for i, s := range *l.Samples {
		tr := Trace{Policy: l.Eval.Model}
		if id, ok := s.Metadata["scenario_id"].(string); ok {
			tr.ScenarioID = id
		} else {
			var sid string
			if json.Unmarshal(s.ID, &sid) != nil {
				return nil, fmt.Errorf("%w: samples[%d]: no metadata.scenario_id and the id %s is not a scenario id", ErrBadTrace, i, s.ID)
			}
			tr.ScenarioID = sid
		}
		for j, raw := range s.Messages {
			m, err := inspectToOpenAI(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: samples[%d].messages[%d]: %v", ErrBadTrace, i, j, err)
			}
			tr.Messages = append(tr.Messages, m)
		}
		out = append(out, tr)
	}
	return out, nil
}

// inspectToOpenAI rewrites one inspect-ai ChatMessage as an OpenAI chat
// message.
func inspectToOpenAI(raw json.RawMessage) (json.RawMessage, error) {
	var m inspectMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	text, reasoning, err := inspectContent(m.Content)
	if err != nil {
		return nil, err
	}
	o := map[string]any{"role": m.Role, "content": text}
	if reasoning != "" {
		o["reasoning_content"] = reasoning
	}
	switch m.Role {
	case "assistant":
		var calls []map[string]any
		for _, c := range m.ToolCalls {
			args := c.Arguments
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				// inspect stores arguments as an object: its layout in the
				// log file is not the model's text.
				"function": map[string]any{"name": c.Function, "arguments": compact(args)}})
		}
		if len(calls) > 0 {
			o["tool_calls"] = calls
		}
	case "tool":
		var id string
		if err := json.Unmarshal(m.ToolCallID, &id); err != nil {
			return nil, fmt.Errorf("tool_call_id: %v", err)
		}
		o["tool_call_id"], o["name"] = id, m.Function
		if m.Error != nil && text == "" {
			// inspect keeps a tool's error apart from its content.
			b, _ := json.Marshal(map[string]string{"error": m.Error.Message})
			o["content"] = string(b)
		}
	}
	return json.Marshal(o)
}

// inspectContent is a content's text and reasoning.
func inspectContent(raw json.RawMessage) (text, reasoning string, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		text, err = contentText(raw)
		return text, "", err
	}
	var parts []struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		Reasoning string `json:"reasoning"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "", err
	}
	var t, r strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			t.WriteString(p.Text)
		case "reasoning":
			r.WriteString(p.Reasoning)
		}
	}
	return t.String(), r.String(), nil
}
