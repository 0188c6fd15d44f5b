package envserver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// ErrBadTrace is wrapped by the errors about a trajectory given to
// /verify or label.
var ErrBadTrace = errors.New("invalid trajectory")

// Trace is a trajectory produced by any agent, in OpenAI chat format: the
// messages (system, user, assistant with tool_calls, tool results) and the
// scenario it ran. An antidrift record is a trace too (its extra fields
// are read when present: seed, and the steps' finish_reason and usage).
type Trace struct {
	ScenarioID string            `json:"scenario_id"`
	Messages   []json.RawMessage `json:"messages"`
	// Items, instead of Messages: an OpenAI Agents SDK run
	// (RunResult.to_input_list(), Responses API items; agents.go).
	Items []json.RawMessage `json:"items,omitempty"`
	Seed  *int64            `json:"seed,omitempty"`
	// Policy names the agent (recorded as client:POLICY/verify or /label).
	Policy string            `json:"policy,omitempty"`
	Steps  []trajectory.Step `json:"steps,omitempty"`
}

// wireMessage is an OpenAI chat message as agents write it.
type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Reasoning        string          `json:"reasoning"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

// parseMessages reads a trace's messages; errors name the JSON path.
func (t Trace) parseMessages() ([]trajectory.Message, error) {
	if t.ScenarioID == "" {
		return nil, fmt.Errorf("%w: scenario_id is missing", ErrBadTrace)
	}
	if len(t.Messages) == 0 && len(t.Items) > 0 {
		msgs, err := agentsMessages(t.Items)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadTrace, err)
		}
		t.Messages = msgs
	}
	if len(t.Messages) == 0 {
		return nil, fmt.Errorf("%w: messages (or items) is missing or empty", ErrBadTrace)
	}
	out := make([]trajectory.Message, 0, len(t.Messages))
	for i, raw := range t.Messages {
		var w wireMessage
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("%w: messages[%d]: %v", ErrBadTrace, i, err)
		}
		m := trajectory.Message{Role: w.Role, ToolCallID: w.ToolCallID, Name: w.Name, Reasoning: w.Reasoning}
		if m.Reasoning == "" {
			m.Reasoning = w.ReasoningContent
		}
		switch w.Role {
		case trajectory.RoleSystem, trajectory.RoleUser, trajectory.RoleAssistant, trajectory.RoleTool:
		case "developer":
			m.Role = trajectory.RoleSystem
		default:
			return nil, fmt.Errorf("%w: messages[%d].role %q (want system, user, assistant or tool)", ErrBadTrace, i, w.Role)
		}
		c, err := contentText(w.Content)
		if err != nil {
			return nil, fmt.Errorf("%w: messages[%d].content: %v", ErrBadTrace, i, err)
		}
		m.Content = c
		for j, tc := range w.ToolCalls {
			if tc.Function.Name == "" {
				return nil, fmt.Errorf("%w: messages[%d].tool_calls[%d].function.name is missing", ErrBadTrace, i, j)
			}
			if w.Role != trajectory.RoleAssistant {
				return nil, fmt.Errorf("%w: messages[%d]: a %s message has tool_calls", ErrBadTrace, i, w.Role)
			}
			m.ToolCalls = append(m.ToolCalls, toolCall(callID(tc.ID, len(out), j), tc.Function.Name, tc.Function.Arguments))
		}
		if w.Role == trajectory.RoleTool && w.ToolCallID == "" {
			return nil, fmt.Errorf("%w: messages[%d].tool_call_id is missing", ErrBadTrace, i)
		}
		out = append(out, m)
	}
	return out, nil
}

// contentText is a message's text: a string, null, or text parts.
func contentText(raw json.RawMessage) (string, error) { return trajectory.ContentText(raw) }
