package openai

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// newTestClient returns a client for srv with back-off in milliseconds, so
// that retry tests never sleep for seconds.
func newTestClient(t *testing.T, srv *fakeserver.Server, mutate ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:     srv.URL(),
		Model:       "test-model",
		Timeout:     5 * time.Second,
		MaxRetries:  3,
		BackoffBase: time.Millisecond,
		BackoffMax:  4 * time.Millisecond,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

// sleepRecorder replaces the client's waiting: it records the waits and
// returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

func (r *sleepRecorder) get() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

var searchTool = policy.Tool{
	Name:        "search",
	Description: "Search the web.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
}

func userRequest(text string) policy.Request {
	return policy.Request{
		Messages: []trajectory.Message{
			{Role: trajectory.RoleSystem, Content: "You are an agent."},
			{Role: trajectory.RoleUser, Content: text},
		},
		Tools:      []policy.Tool{searchTool},
		ToolChoice: "auto",
		Seed:       42,
	}
}

// answerAll appends the assistant message and one tool answer per call, as
// the engine does, so that the next request exercises the protocol.
func answerAll(req policy.Request, msg trajectory.Message) policy.Request {
	req.Messages = append(append([]trajectory.Message(nil), req.Messages...), msg)
	for _, tc := range msg.ToolCalls {
		content := `{"results":[]}`
		if tc.Function.ArgsError != "" {
			content = `{"error":"invalid arguments"}`
		}
		req.Messages = append(req.Messages, trajectory.Message{Role: trajectory.RoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: content})
	}
	return req
}
