package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Server is an OpenAI-compatible chat completions endpoint backed by the
// simulated policies, so that the HTTP path of the engine can be exercised
// end to end offline. The request's "model" picks the profile: "sim:base",
// "sim-base" or "base". Every answer is marked as simulated.
type Server struct {
	policies map[string]*Policy
	// selection answers least-privilege selection prompts (selection_server.go).
	selection selectionSet
	// Latency is added to every completion, to stand in for a model server.
	Latency time.Duration
}

// NewServer serves every profile over the scenarios.
func NewServer(scenarios []*scenario.Scenario, latency time.Duration) *Server {
	s := &Server{policies: map[string]*Policy{}, Latency: latency}
	for _, p := range All() {
		s.policies[p.Name] = New(p, scenarios)
	}
	return s
}

type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Type     string      `json:"type"`
		Function policy.Tool `json:"function"`
	} `json:"tools"`
	Seed        *int64   `json:"seed"`
	Temperature *float64 `json:"temperature"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

// ServeHTTP implements /v1/chat/completions and /v1/models.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		var data []map[string]any
		for _, p := range All() {
			data = append(data, map[string]any{"id": "sim:" + p.Name, "object": "model", "owned_by": "antidrift-simulation"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.complete(w, r)
	default:
		apiError(w, http.StatusNotFound, "invalid_request_error", "unknown endpoint "+r.URL.Path)
	}
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	var req wireRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	if err := dec.Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	name := strings.TrimPrefix(strings.TrimPrefix(req.Model, "sim:"), "sim-")
	pol := s.policies[name]
	if pol == nil && !hasSelectionProfile(name) {
		apiError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("model %q does not exist (simulated models: sim:base, sim:sft, sim:dpo-1, sim:dpo-2, sim:overcautious, sim:probe-thorough, sim:probe-shortcut, sim:gullible, sim:wary, sim:persistent)", req.Model))
		return
	}
	preq := policy.Request{}
	if req.Seed != nil {
		preq.Seed = *req.Seed
	}
	for _, t := range req.Tools {
		preq.Tools = append(preq.Tools, t.Function)
	}
	for _, m := range req.Messages {
		tm := trajectory.Message{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Content != nil {
			tm.Content = *m.Content
		}
		for _, tc := range m.ToolCalls {
			tm.ToolCalls = append(tm.ToolCalls, trajectory.ToolCall{ID: tc.ID, Type: tc.Type,
				Function: trajectory.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		preq.Messages = append(preq.Messages, tm)
	}
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	var answer policy.Policy = pol
	if sp := s.selection.policyFor(name, preq); sp != nil {
		answer = sp
	} else if pol == nil {
		apiError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("model %q answers only selection prompts of known skill libraries", req.Model))
		return
	}
	resp, err := answer.Complete(r.Context(), preq)
	if err != nil && len(preq.Messages) == 1 {
		// antidrift endpoint check's probes: the simulation answers them as
		// a well-configured server would.
		switch preq.Messages[0].Content {
		case openai.CheckPlainPrompt:
			resp, err = policy.Response{Message: trajectory.Message{Role: trajectory.RoleAssistant, Content: "ready"}, FinishReason: "stop"}, nil
		case openai.CheckToolPrompt:
			resp, err = policy.Response{Message: trajectory.Message{Role: trajectory.RoleAssistant, ToolCalls: []trajectory.ToolCall{{
				ID: "simcheck1", Type: "function", Function: trajectory.FunctionCall{Name: openai.CheckTool, Arguments: `{"city":"Paris"}`},
			}}}, FinishReason: "tool_calls"}, nil
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if resp.Message.Content != "" {
		msg["content"] = resp.Message.Content
	}
	if len(resp.Message.ToolCalls) > 0 {
		var calls []map[string]any
		for _, tc := range resp.Message.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": "chatcmpl-sim", "object": "chat.completion", "created": 0, "model": "sim:" + name,
		"system_fingerprint": "antidrift-simulation",
		"choices":            []map[string]any{{"index": 0, "message": msg, "finish_reason": resp.FinishReason}},
		"usage":              map[string]any{"prompt_tokens": resp.Usage.PromptTokens, "completion_tokens": resp.Usage.CompletionTokens, "total_tokens": resp.Usage.TotalTokens},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
