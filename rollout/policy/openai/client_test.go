package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestRequestOnTheWire(t *testing.T) {
	history := policy.Request{
		Messages: []trajectory.Message{
			{Role: trajectory.RoleSystem, Content: "sys"},
			{Role: trajectory.RoleUser, Content: "go", Name: "alice"},
			{Role: trajectory.RoleAssistant, ToolCalls: []trajectory.ToolCall{
				{ID: "abc123XYZ", Type: "function", Function: trajectory.FunctionCall{
					Name: "search", Arguments: `{"q": "x"}`, Parsed: json.RawMessage(`{"q":"x"}`)}},
				{ID: "def456UVW", Type: "function", Function: trajectory.FunctionCall{
					Name: "search", Arguments: `{oops`, ArgsError: "arguments are not valid JSON"}},
			}},
			{Role: trajectory.RoleTool, ToolCallID: "abc123XYZ", Name: "search", Content: "r1"},
			{Role: trajectory.RoleTool, ToolCallID: "def456UVW", Name: "search"}, // empty content
		},
		Tools:       []policy.Tool{searchTool, {Name: "noargs"}},
		ToolChoice:  "required",
		Temperature: 0,
		Seed:        7,
	}
	cases := []struct {
		name      string
		empty     EmptyContent
		maxTokens int
		want      []string
		absent    []string
	}{
		{"omit", ContentOmit, 0,
			[]string{`{"role":"assistant","tool_calls":[`},
			[]string{`"max_tokens"`}},
		{"null", ContentNull, 0,
			[]string{`{"role":"assistant","content":null,"tool_calls":[`},
			nil},
		{"empty string", ContentEmptyString, 128,
			[]string{`{"role":"assistant","content":"","tool_calls":[`, `"max_tokens":128`},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{fakeserver.Text("ok")}})
			c := newTestClient(t, srv, func(c *Config) { c.EmptyContent = tc.empty })
			req := history
			req.MaxTokens = tc.maxTokens
			resp, err := c.Complete(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Message.Content)
			require.Empty(t, srv.Violations())

			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			raw := string(reqs[0].Raw)
			want := append([]string{
				`"model":"test-model"`,
				`"temperature":0`,
				`"seed":7`,
				`"tool_choice":"required"`,
				`{"type":"function","function":{"name":"search","description":"Search the web.","parameters":{"type":"object"`,
				`{"type":"function","function":{"name":"noargs","parameters":{"type":"object","properties":{}}}}`,
				`{"id":"abc123XYZ","type":"function","function":{"name":"search","arguments":"{\"q\": \"x\"}"}}`,
				`"arguments":"{\"_raw\":\"{oops\"}"`, // unparseable arguments go back wrapped, so vLLM does not answer 400
				`{"role":"tool","content":"","tool_call_id":"def456UVW"}`,
				`{"role":"user","content":"go","name":"alice"}`,
			}, tc.want...)
			for _, w := range want {
				assert.Contains(t, raw, w)
			}
			for _, a := range append([]string{"parsed_arguments", "arguments_error", "Authorization"}, tc.absent...) {
				assert.NotContains(t, raw, a)
			}
			assert.Empty(t, reqs[0].Header.Get("Authorization"), "no key, no header")
			assert.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
		})
	}
}

func TestToolChoiceNotSentWithoutTools(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{fakeserver.Text("ok")}})
	c := newTestClient(t, srv)
	req := userRequest("hi")
	req.Tools = nil
	_, err := c.Complete(context.Background(), req)
	require.NoError(t, err)
	raw := string(srv.Requests()[0].Raw)
	assert.NotContains(t, raw, "tool_choice")
	assert.NotContains(t, raw, `"tools"`)
}

var generatedID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

func TestQuirks(t *testing.T) {
	call := fakeserver.Call{ID: "call_1", Name: "search", Arguments: `{ "q" : "drift" }`}
	cases := []struct {
		name       string
		reply      fakeserver.Reply
		content    string
		args       string // FunctionCall.Arguments of the first call
		parsed     string // "" when absent
		argsErr    string // fragment of ArgsError
		generateID bool
		finish     string
		usage      trajectory.Usage
	}{
		{name: "plain", reply: fakeserver.ToolCalls(call), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "object arguments", reply: fakeserver.ToolCalls(call).With(fakeserver.ObjectArguments), args: `{"q":"drift"}`, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "missing ids", reply: fakeserver.ToolCalls(call).With(fakeserver.MissingIDs), args: call.Arguments, parsed: `{"q":"drift"}`, generateID: true, finish: "tool_calls"},
		{name: "empty ids", reply: fakeserver.ToolCalls(call).With(fakeserver.EmptyIDs), args: call.Arguments, parsed: `{"q":"drift"}`, generateID: true, finish: "tool_calls"},
		{name: "null content with calls", reply: fakeserver.ToolCalls(call).With(fakeserver.NullContent), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "null content without calls", reply: fakeserver.Text("ignored").With(fakeserver.NullContent), finish: "stop"},
		{name: "stop with tool calls", reply: fakeserver.ToolCalls(call).With(fakeserver.StopWithToolCalls), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "eos with tool calls", reply: fakeserver.ToolCalls(call).With(fakeserver.EOSFinish), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "eos text", reply: fakeserver.Text("bye").With(fakeserver.EOSFinish), content: "bye", finish: "stop"},
		{name: "missing finish reason", reply: fakeserver.ToolCalls(call).With(fakeserver.MissingFinishReason), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "missing finish reason text", reply: fakeserver.Text("hi").With(fakeserver.MissingFinishReason), content: "hi", finish: "stop"},
		{name: "length", reply: fakeserver.Reply{Content: "cut", FinishReason: "length"}, content: "cut", finish: "length"},
		{name: "missing type", reply: fakeserver.ToolCalls(call).With(fakeserver.MissingType), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "invalid JSON arguments", reply: fakeserver.ToolCalls(fakeserver.Call{ID: "call_1", Name: "search", Arguments: `{"q": "dr`}), args: `{"q": "dr`, argsErr: "not valid JSON", finish: "tool_calls"},
		{name: "array arguments", reply: fakeserver.ToolCalls(fakeserver.Call{ID: "call_1", Name: "search", Arguments: `["q"]`}), args: `["q"]`, argsErr: "must be a JSON object, got an array", finish: "tool_calls"},
		{name: "string arguments", reply: fakeserver.ToolCalls(fakeserver.Call{ID: "call_1", Name: "search", Arguments: `"q"`}), args: `"q"`, argsErr: "got a string", finish: "tool_calls"},
		{name: "number arguments as object quirk", reply: fakeserver.ToolCalls(fakeserver.Call{ID: "call_1", Name: "search", Arguments: `12`}).With(fakeserver.ObjectArguments), args: `12`, argsErr: "got a number", finish: "tool_calls"},
		{name: "empty arguments", reply: fakeserver.ToolCalls(fakeserver.Call{ID: "call_1", Name: "search", Arguments: ``}), args: ``, parsed: `{}`, finish: "tool_calls"},
		{name: "missing usage", reply: fakeserver.ToolCalls(call).With(fakeserver.MissingUsage), args: call.Arguments, parsed: `{"q":"drift"}`, finish: "tool_calls"},
		{name: "usage reported", reply: fakeserver.Reply{Content: "x", Usage: &trajectory.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}, content: "x", finish: "stop", usage: trajectory.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{name: "usage without total", reply: fakeserver.Reply{Content: "x", Usage: &trajectory.Usage{PromptTokens: 10, CompletionTokens: 2}}, content: "x", finish: "stop", usage: trajectory.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{name: "everything at once", reply: fakeserver.ToolCalls(call).With(fakeserver.ObjectArguments | fakeserver.MissingIDs | fakeserver.NullContent | fakeserver.StopWithToolCalls | fakeserver.MissingUsage | fakeserver.MissingType), args: `{"q":"drift"}`, parsed: `{"q":"drift"}`, generateID: true, finish: "tool_calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.usage == (trajectory.Usage{}) && tc.reply.Quirks&fakeserver.MissingUsage == 0 && tc.reply.Usage == nil {
				tc.reply.Usage = &trajectory.Usage{} // compare exactly; made-up usage is tested elsewhere
			}
			srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{tc.reply}, Fallback: &fakeserver.Reply{Content: "done"}})
			c := newTestClient(t, srv)
			req := userRequest("find drift")
			resp, err := c.Complete(context.Background(), req)
			require.NoError(t, err)

			msg := resp.Message
			assert.Equal(t, trajectory.RoleAssistant, msg.Role)
			assert.Equal(t, tc.content, msg.Content)
			assert.Equal(t, tc.finish, resp.FinishReason)
			assert.Equal(t, tc.usage, resp.Usage)
			if tc.finish == "tool_calls" {
				require.Len(t, msg.ToolCalls, 1)
				got := msg.ToolCalls[0]
				assert.Equal(t, "function", got.Type)
				assert.Equal(t, "search", got.Function.Name)
				assert.Equal(t, tc.args, got.Function.Arguments)
				// The id is always the client's; the server's is kept beside it.
				assert.Regexp(t, generatedID, got.ID)
				if tc.generateID {
					assert.Empty(t, got.ServerID)
				} else {
					assert.Equal(t, "call_1", got.ServerID)
				}
				if tc.parsed == "" {
					assert.Nil(t, got.Function.Parsed)
					assert.Contains(t, got.Function.ArgsError, tc.argsErr)
				} else {
					assert.JSONEq(t, tc.parsed, string(got.Function.Parsed))
					assert.Equal(t, tc.parsed, string(got.Function.Parsed), "compact")
					assert.Empty(t, got.Function.ArgsError)
				}
			} else {
				assert.Empty(t, msg.ToolCalls)
			}

			// The engine stores the message and answers the calls: the next
			// request must satisfy the strict server.
			_, err = c.Complete(context.Background(), answerAll(req, msg))
			require.NoError(t, err)
			assert.Empty(t, srv.Violations())
		})
	}
}

func TestGeneratedIDs(t *testing.T) {
	calls := []fakeserver.Call{{Name: "a", Arguments: "{}"}, {Name: "b", Arguments: "{}"}, {Name: "c", Arguments: "{}"}}
	srv := fakeserver.Start(t, fakeserver.Options{Fallback: &fakeserver.Reply{ToolCalls: calls, Quirks: fakeserver.MissingIDs}})
	c := newTestClient(t, srv)
	ids := func(req policy.Request) []string {
		resp, err := c.Complete(context.Background(), req)
		require.NoError(t, err)
		var out []string
		for _, tc := range resp.Message.ToolCalls {
			assert.Regexp(t, generatedID, tc.ID)
			out = append(out, tc.ID)
		}
		return out
	}
	first := ids(userRequest("x"))
	require.Len(t, first, 3)
	assert.Len(t, map[string]bool{first[0]: true, first[1]: true, first[2]: true}, 3, "unique within a message")
	assert.Equal(t, first, ids(userRequest("x")), "reproducible")
	other := userRequest("x")
	other.Seed++
	assert.NotEqual(t, first, ids(other), "seed changes ids")
	longer := userRequest("x")
	longer.Messages = append(longer.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: "more"})
	assert.NotEqual(t, first, ids(longer), "turn changes ids")
}

// TestServerIDsAreReplaced: ids repeated within a message or across turns
// (a gateway answering "call_0" every turn) never reach the record as ids:
// every call gets the client's own id, unique in the conversation.
func TestServerIDsAreReplaced(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Fallback: &fakeserver.Reply{ToolCalls: []fakeserver.Call{
		{ID: "call_0", Name: "a", Arguments: "{}"},
		{ID: "call_0", Name: "b", Arguments: "{}"},
	}}})
	c := newTestClient(t, srv)
	req := userRequest("x")
	seen := map[string]bool{}
	for turn := 0; turn < 3; turn++ {
		resp, err := c.Complete(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, resp.Message.ToolCalls, 2)
		for _, tc := range resp.Message.ToolCalls {
			assert.Regexp(t, generatedID, tc.ID)
			assert.Equal(t, "call_0", tc.ServerID)
			assert.False(t, seen[tc.ID], "turn %d: id %s already used in the conversation", turn, tc.ID)
			seen[tc.ID] = true
		}
		req = answerAll(req, resp.Message)
	}
	for _, r := range srv.Requests() {
		assert.NotContains(t, string(r.Raw), "call_0", "the server's ids are never sent back")
	}
	assert.Empty(t, srv.Violations())
}

func TestLenientBodies(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		content string
		calls   int
		args    string
	}{
		{"content parts", `{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`, "ab", 0, ""},
		{"legacy function_call", `{"choices":[{"message":{"role":"assistant","content":null,"function_call":{"name":"search","arguments":"{\"q\":1}"}},"finish_reason":"function_call"}]}`, "", 1, `{"q":1}`},
		{"refusal", `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't"},"finish_reason":"stop"}]}`, "I can't", 0, ""},
		{"numeric id and null fields", `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":7,"type":null,"function":{"name":"search","arguments":null}}]},"finish_reason":null}],"usage":null}`, "", 1, ""},
		{"no role", `{"choices":[{"message":{"content":"hi"}}]}`, "hi", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{fakeserver.Raw(http.StatusOK, tc.body)}})
			c := newTestClient(t, srv)
			resp, err := c.Complete(context.Background(), userRequest("x"))
			require.NoError(t, err)
			assert.Equal(t, trajectory.RoleAssistant, resp.Message.Role)
			assert.Equal(t, tc.content, resp.Message.Content)
			require.Len(t, resp.Message.ToolCalls, tc.calls)
			if tc.calls > 0 {
				got := resp.Message.ToolCalls[0]
				assert.NotEmpty(t, got.ID)
				assert.Equal(t, "function", got.Type)
				assert.Equal(t, tc.args, got.Function.Arguments)
				assert.Equal(t, "tool_calls", resp.FinishReason)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	const maxRetries = 3
	ok := fakeserver.Text("ok")
	repeat := func(r fakeserver.Reply, n int) []fakeserver.Reply {
		out := make([]fakeserver.Reply, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	cases := []struct {
		name      string
		script    []fakeserver.Reply
		class     error // nil: success
		requests  int
		is        error  // further errors.Is target
		message   string // fragment of the error text
		status    int
		throttled int64
	}{
		{name: "context length OpenAI", script: []fakeserver.Reply{fakeserver.ContextLengthOpenAI()}, class: policy.ErrContextLength, requests: 1, status: 400, message: "maximum context length"},
		{name: "context length vLLM", script: []fakeserver.Reply{fakeserver.ContextLengthVLLM()}, class: policy.ErrContextLength, requests: 1, status: 400},
		{name: "context length llama.cpp", script: []fakeserver.Reply{fakeserver.ContextLengthLlamaCpp()}, class: policy.ErrContextLength, requests: 1, status: 400},
		{name: "context length SGLang", script: []fakeserver.Reply{fakeserver.ContextLengthSGLang()}, class: policy.ErrContextLength, requests: 1, status: 400},
		{name: "context length as 500 (old llama.cpp)", script: []fakeserver.Reply{fakeserver.Error(500, "the request exceeds the available context size", "server_error", "")}, class: policy.ErrContextLength, requests: 1},
		{name: "context length in a 200 error body", script: []fakeserver.Reply{fakeserver.Raw(200, `{"error":{"message":"prompt is too long: 300000 tokens","code":400}}`)}, class: policy.ErrContextLength, requests: 1},
		{name: "401", script: []fakeserver.Reply{fakeserver.Unauthorized()}, class: policy.ErrFatal, requests: 1, status: 401, message: "check the API key"},
		{name: "403", script: []fakeserver.Reply{fakeserver.Error(403, "forbidden", "", "")}, class: policy.ErrFatal, requests: 1},
		{name: "insufficient quota", script: []fakeserver.Reply{fakeserver.InsufficientQuota()}, class: policy.ErrFatal, requests: 1, status: 429, message: "quota"},
		{name: "404 model not found", script: []fakeserver.Reply{fakeserver.Error(404, "The model `x` does not exist.", "NotFoundError", "")}, class: policy.ErrFatal, requests: 1, message: "/v1"},
		{name: "other 400", script: []fakeserver.Reply{fakeserver.Error(400, "'tool_choice' required is not supported", "BadRequestError", "")}, class: policy.ErrModel, requests: 1, status: 400, message: "'tool_choice' required is not supported"},
		{name: "422 detail", script: []fakeserver.Reply{fakeserver.Raw(422, `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`)}, class: policy.ErrModel, requests: 1, message: "field required"},
		// An empty choices list is no model answer: infrastructure, retried.
		{name: "200 without choices", script: repeat(fakeserver.Raw(200, `{"choices":[]}`), maxRetries+1), class: policy.ErrInfra, requests: maxRetries + 1},
		{name: "500 503 then success", script: []fakeserver.Reply{fakeserver.ServerError(500), fakeserver.ServerError(503), ok}, requests: 3},
		{name: "5xx exhausts retries", script: repeat(fakeserver.ServerError(502), maxRetries+1), class: policy.ErrInfra, requests: maxRetries + 1, status: 502, message: "after 4 attempts"},
		{name: "408 and 409 retried", script: []fakeserver.Reply{fakeserver.Error(408, "timeout", "", ""), fakeserver.Error(409, "conflict", "", ""), ok}, requests: 3},
		{name: "429 then success", script: []fakeserver.Reply{fakeserver.RateLimited(""), ok}, requests: 2, throttled: 1},
		{name: "429 exhausts retries", script: repeat(fakeserver.RateLimited(""), maxRetries+1), class: policy.ErrInfra, requests: maxRetries + 1, status: 429, throttled: maxRetries + 1},
		{name: "hang then success", script: []fakeserver.Reply{fakeserver.Hang(), ok}, requests: 2},
		{name: "hangs exhaust retries", script: repeat(fakeserver.Hang(), maxRetries+1), class: policy.ErrInfra, requests: maxRetries + 1, is: context.DeadlineExceeded, message: "needs a larger --request-timeout"},
		{name: "reset then success", script: []fakeserver.Reply{fakeserver.Reset(), ok}, requests: 2},
		{name: "resets exhaust retries", script: repeat(fakeserver.Reset(), maxRetries+1), class: policy.ErrInfra, requests: maxRetries + 1, message: "connection error"},
		{name: "garbage 200 then success", script: []fakeserver.Reply{fakeserver.Raw(200, `<html>bad gateway</html>`), ok}, requests: 2},
		{name: "unsupported content", script: []fakeserver.Reply{fakeserver.Raw(200, `{"choices":[{"message":{"content":42}}]}`)}, class: policy.ErrModel, requests: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.Start(t, fakeserver.Options{Script: tc.script})
			c := newTestClient(t, srv, func(c *Config) {
				c.MaxRetries = maxRetries
				c.Timeout = 50 * time.Millisecond
			})
			resp, err := c.Complete(context.Background(), userRequest("x"))
			assert.Equal(t, tc.requests, srv.Count(), "requests the server saw")
			st := c.Stats()
			assert.Equal(t, int64(tc.requests), st.Requests)
			assert.Equal(t, int64(tc.requests-1), st.Retries)
			assert.Equal(t, tc.throttled, st.RateLimited)
			if tc.class == nil {
				require.NoError(t, err)
				assert.Equal(t, "ok", resp.Message.Content)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			for _, other := range []error{policy.ErrContextLength, policy.ErrFatal, policy.ErrModel, policy.ErrInfra} {
				if other != tc.class {
					assert.NotErrorIs(t, err, other)
				}
			}
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "openai: "), err.Error())
			assert.Contains(t, err.Error(), tc.message)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tc.requests, e.Attempts)
			if tc.status != 0 {
				assert.Equal(t, tc.status, e.StatusCode)
			}
		})
	}
}

func TestNoRetriesWhenDisabled(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{fakeserver.ServerError(500), fakeserver.Text("ok")}})
	c := newTestClient(t, srv, func(c *Config) { c.MaxRetries = -1 })
	_, err := c.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrInfra)
	assert.Equal(t, 1, srv.Count())
}

func TestRetryAfterHonoured(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name  string
		reply fakeserver.Reply
		wait  time.Duration // exact wait expected; 0: a jittered back-off
	}{
		{"seconds", fakeserver.RateLimited("7"), 7 * time.Second},
		{"HTTP date", fakeserver.RateLimited(now.Add(90 * time.Second).Format(http.TimeFormat)), 90 * time.Second},
		{"503 with Retry-After", func() fakeserver.Reply { r := fakeserver.ServerError(503); r.RetryAfter = "3"; return r }(), 3 * time.Second},
		{"no header", fakeserver.RateLimited(""), 0},
		{"unparsable header", fakeserver.RateLimited("soon"), 0},
		{"zero", fakeserver.RateLimited("0"), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{tc.reply, fakeserver.Text("ok")}})
			c := newTestClient(t, srv, func(c *Config) {
				c.BackoffBase = 100 * time.Millisecond
				c.BackoffMax = time.Second
			})
			rec := &sleepRecorder{}
			c.sleep, c.now = rec.sleep, func() time.Time { return now }
			_, err := c.Complete(context.Background(), userRequest("x"))
			require.NoError(t, err)
			assert.Equal(t, 2, srv.Count())
			waits := rec.get()
			require.Len(t, waits, 1)
			if tc.wait != 0 {
				assert.Equal(t, tc.wait, waits[0])
			} else {
				assert.GreaterOrEqual(t, waits[0], 50*time.Millisecond)
				assert.LessOrEqual(t, waits[0], 100*time.Millisecond)
			}
		})
	}
}

func TestRetryAfterBeyondLimitGivesUp(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{fakeserver.RateLimited("3600"), fakeserver.Text("ok")}})
	c := newTestClient(t, srv, func(c *Config) { c.MaxRetryAfter = time.Minute })
	rec := &sleepRecorder{}
	c.sleep = rec.sleep
	_, err := c.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrInfra)
	assert.Contains(t, err.Error(), "retry after 1h0m0s")
	assert.Equal(t, 1, srv.Count())
	assert.Empty(t, rec.get())
}

func TestBackoffGrowsExponentially(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{
		fakeserver.ServerError(500), fakeserver.ServerError(500), fakeserver.ServerError(500), fakeserver.ServerError(500), fakeserver.ServerError(500),
	}})
	c := newTestClient(t, srv, func(c *Config) {
		c.MaxRetries = 4
		c.BackoffBase = 100 * time.Millisecond
		c.BackoffMax = 300 * time.Millisecond
	})
	rec := &sleepRecorder{}
	c.sleep = rec.sleep
	_, err := c.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrInfra)
	waits := rec.get()
	require.Len(t, waits, 4)
	ceilings := []time.Duration{100, 200, 300, 300}
	for i, w := range waits {
		ceiling := ceilings[i] * time.Millisecond
		assert.GreaterOrEqual(t, w, ceiling/2, "retry %d", i)
		assert.LessOrEqual(t, w, ceiling, "retry %d", i)
	}
}

func TestCancellation(t *testing.T) {
	t.Run("during back-off", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv := fakeserver.Start(t, fakeserver.Options{Handler: func(*fakeserver.Request) fakeserver.Reply {
			cancel() // the run is being stopped while the client waits to retry
			return fakeserver.ServerError(503)
		}})
		c := newTestClient(t, srv, func(c *Config) { c.BackoffBase, c.BackoffMax = time.Hour, time.Hour })
		done := make(chan error, 1)
		go func() { _, err := c.Complete(ctx, userRequest("x")); done <- err }()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, policy.ErrInfra)
		case <-time.After(10 * time.Second):
			t.Fatal("Complete did not return after cancellation")
		}
		assert.Equal(t, 1, srv.Count())
	})
	t.Run("during a request", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := fakeserver.Start(t, fakeserver.Options{Handler: func(*fakeserver.Request) fakeserver.Reply {
			cancel()
			return fakeserver.Hang()
		}})
		c := newTestClient(t, srv)
		_, err := c.Complete(ctx, userRequest("x"))
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, policy.ErrInfra)
		assert.Equal(t, 1, srv.Count(), "no retry after cancellation")
	})
	t.Run("waiting for the limiter", func(t *testing.T) {
		srv := fakeserver.Start(t, fakeserver.Options{})
		c := newTestClient(t, srv, func(c *Config) { c.Concurrency = 1 })
		require.NoError(t, c.Limiter().Acquire(context.Background()))
		defer c.Limiter().Release()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := c.Complete(ctx, userRequest("x"))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 0, srv.Count())
	})
}

func TestAPIKey(t *testing.T) {
	const key = "sk-test-Secret0123456789abcdef"
	t.Run("sent as bearer", func(t *testing.T) {
		srv := fakeserver.Start(t, fakeserver.Options{APIKey: key, Script: []fakeserver.Reply{fakeserver.Text("ok")}})
		c := newTestClient(t, srv, func(c *Config) { c.APIKey = key })
		_, err := c.Complete(context.Background(), userRequest("x"))
		require.NoError(t, err)
		assert.Equal(t, "Bearer "+key, srv.Requests()[0].Header.Get("Authorization"))
	})

	var texts []string
	t.Run("rejected key echoed by the server", func(t *testing.T) {
		srv := fakeserver.Start(t, fakeserver.Options{APIKey: "the-right-key"})
		c := newTestClient(t, srv, func(c *Config) { c.APIKey = key })
		_, err := c.Complete(context.Background(), userRequest("x"))
		require.ErrorIs(t, err, policy.ErrFatal)
		assert.Contains(t, string(srv.Requests()[0].Raw)+srv.Requests()[0].Header.Get("Authorization"), key, "the server did see it")
		assert.Contains(t, err.Error(), redacted)
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
	})
	t.Run("key in every kind of server text", func(t *testing.T) {
		for _, r := range []fakeserver.Reply{
			fakeserver.Error(400, "bad key "+key, key, key),
			fakeserver.Raw(400, `{"detail":"`+key+`"}`),
			fakeserver.Raw(500, key),
			fakeserver.Raw(200, "not json "+key),
			fakeserver.Raw(200, `{"choices":[{"message":{"content":{"k":"`+key+`"}}}]}`),
			fakeserver.Raw(200, `{"error":{"message":"`+key+`"}}`),
		} {
			srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{r}})
			c := newTestClient(t, srv, func(c *Config) { c.APIKey = key; c.MaxRetries = -1 })
			_, err := c.Complete(context.Background(), userRequest("x"))
			require.Error(t, err)
			texts = append(texts, err.Error())
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := fakeserver.New(fakeserver.Options{})
		srv.Close()
		c := newTestClient(t, srv, func(c *Config) { c.APIKey = key; c.MaxRetries = -1 })
		_, err := c.Complete(context.Background(), userRequest("x"))
		require.ErrorIs(t, err, policy.ErrInfra)
		texts = append(texts, err.Error())
	})
	t.Run("printing config and client", func(t *testing.T) {
		cfg := Config{BaseURL: "http://localhost:1/v1", Model: "m", APIKey: key}
		c, err := New(cfg)
		require.NoError(t, err)
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
			texts = append(texts, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg), fmt.Sprintf(verb, c),
				fmt.Sprintf(verb, struct{ C Config }{cfg}))
		}
		texts = append(texts, c.String(), cfg.String())
		assert.Contains(t, c.String(), "api_key:set")
		b, err := json.Marshal(cfg)
		require.NoError(t, err)
		texts = append(texts, string(b))
	})
	require.NotEmpty(t, texts)
	for _, s := range texts {
		assert.NotContains(t, s, key)
		assert.NotContains(t, s, "Secret0123456789")
	}
}

func TestKeyFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", " sk-default\n")
	t.Setenv("MY_KEY", "sk-mine")
	assert.Equal(t, "sk-default", KeyFromEnv(""))
	assert.Equal(t, "sk-mine", KeyFromEnv("MY_KEY"))
	assert.Equal(t, "", KeyFromEnv("ANTIDRIFT_SURELY_UNSET_VARIABLE"))
}

func TestNew(t *testing.T) {
	cases := []struct {
		name     string
		base     string
		model    string
		endpoint string
		err      string
	}{
		{"with /v1", "http://h:8000/v1", "m", "http://h:8000/v1/chat/completions", ""},
		{"trailing slash", "http://h:8000/v1/", "m", "http://h:8000/v1/chat/completions", ""},
		{"without /v1 taken as given", "http://h:11434", "m", "http://h:11434/chat/completions", ""},
		{"query kept", "https://x.example/openai/v1?api-version=1", "m", "https://x.example/openai/v1/chat/completions?api-version=1", ""},
		{"empty base", "", "m", "", "base URL is empty"},
		{"no scheme", "localhost:8000/v1", "m", "", "not an http(s) URL"},
		{"ftp", "ftp://h/v1", "m", "", "not an http(s) URL"},
		{"no model", "http://h/v1", " ", "", "model is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: tc.base, Model: tc.model})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.endpoint, c.endpoint)
		})
	}

	c, err := New(Config{BaseURL: "http://h/v1", Model: "m"})
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxRetries, c.maxRetries)
	assert.Equal(t, DefaultTimeout, c.timeout)
	assert.Equal(t, DefaultConcurrency, c.Stats().MaxLimit)
}

func TestConcurrentUse(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Handler: func(r *fakeserver.Request) fakeserver.Reply {
		return fakeserver.ToolCalls(fakeserver.Call{ID: "call_1", Name: "search", Arguments: `{"q":"x"}`}).With(fakeserver.MissingIDs)
	}})
	c := newTestClient(t, srv, func(c *Config) { c.Concurrency = 4 })
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			req := userRequest("x")
			req.Seed = int64(i)
			_, err := c.Complete(context.Background(), req)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.LessOrEqual(t, srv.MaxInFlight(), 4)
	assert.Equal(t, 0, c.Stats().InFlight)
	assert.Empty(t, srv.Violations())
}

func TestErrorUnwrapsToClass(t *testing.T) {
	e := &Error{Class: policy.ErrInfra, cause: context.DeadlineExceeded, Message: "m"}
	assert.True(t, errors.Is(e, policy.ErrInfra))
	assert.True(t, errors.Is(e, context.DeadlineExceeded))
	assert.Equal(t, "openai: infrastructure error: m", e.Error())
}

// TestFinishErrorRetriedOnce: an answer cut by finish_reason "error" is
// asked again once; cut twice, it is a model error, not an answer.
func TestFinishErrorRetriedOnce(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{
		{Content: "half", FinishReason: "error"}, {Content: "whole"},
		{Content: "half", FinishReason: "ERROR"}, {Content: "half", FinishReason: "error"},
	}})
	c := newTestClient(t, srv)
	resp, err := c.Complete(context.Background(), userRequest("x"))
	require.NoError(t, err)
	assert.Equal(t, "whole", resp.Message.Content)
	_, err = c.Complete(context.Background(), userRequest("x"))
	require.ErrorIs(t, err, policy.ErrModel)
	assert.Contains(t, err.Error(), `finish_reason "error"`)
	assert.Equal(t, 4, srv.Served())
}

// TestRefusalField: OpenAI's refusal field is the response's Refusal.
func TestRefusalField(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{{Refusal: "I can't help with that."}}})
	resp, err := newTestClient(t, srv).Complete(context.Background(), userRequest("x"))
	require.NoError(t, err)
	assert.Equal(t, "I can't help with that.", resp.Refusal)
	assert.Equal(t, "I can't help with that.", resp.Message.Content)
}

// TestNotifyErrorReadAsAnswer: TGI's notify_error pseudo-call is the text
// answer it wraps, unless the request offered a tool of that name.
func TestNotifyErrorReadAsAnswer(t *testing.T) {
	m := fakeserver.Mode{Family: fakeserver.FamilyTGI, NotifyError: true}
	srv := fakeserver.Start(t, fakeserver.Options{Mode: &m, Fallback: &fakeserver.Reply{Content: "All done."}})
	c := newTestClient(t, srv)
	resp, err := c.Complete(context.Background(), userRequest("x"))
	require.NoError(t, err)
	assert.Empty(t, resp.Message.ToolCalls)
	assert.Equal(t, "All done.", resp.Message.Content)
	assert.Equal(t, "notify_error", resp.FinalAnswerCall)
	assert.Equal(t, policy.FinishStop, resp.FinishReason)

	req := userRequest("x")
	req.Tools = append(req.Tools, policy.Tool{Name: "notify_error", Parameters: json.RawMessage(`{"type":"object"}`)})
	resp, err = c.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, resp.Message.ToolCalls, 1, "a scenario's own notify_error tool is a call")
	assert.Empty(t, resp.FinalAnswerCall)
}

// TestLearnTokenParam: what the check learnt is used from the first
// request: no max_tokens refusal to rediscover it.
func TestLearnTokenParam(t *testing.T) {
	m := fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true}
	srv := fakeserver.Start(t, fakeserver.Options{Mode: &m, Handler: func(req *fakeserver.Request) fakeserver.Reply {
		if len(req.Tools) > 0 && req.Messages[0].Content == CheckToolPrompt {
			return fakeserver.ToolCalls(fakeserver.Call{Name: CheckTool, Arguments: `{"city":"Paris"}`})
		}
		return fakeserver.Text("ready")
	}})
	c := newTestClient(t, srv)
	rep, err := c.Check(context.Background())
	require.NoError(t, err)
	require.Equal(t, "max_completion_tokens", rep.TokenParam)
	c.Learn(rep)
	before := srv.Count()
	req := userRequest("x")
	req.MaxTokens = 100
	_, err = c.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, before+1, srv.Count(), "one request, not refused")
	assert.Contains(t, string(srv.Requests()[before].Raw), `"max_completion_tokens":100`)
}
