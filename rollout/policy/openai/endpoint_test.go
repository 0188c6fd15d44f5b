package openai

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
)

func modeClient(t *testing.T, opts fakeserver.Options, mutate ...func(*Config)) (*Client, *fakeserver.Server) {
	t.Helper()
	srv := fakeserver.Start(t, opts)
	cfg := Config{BaseURL: srv.URL(), Model: "m", Timeout: 5 * time.Second, MaxRetries: 3,
		BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond, ReadyPoll: time.Millisecond}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c, srv
}

func toolRequest() policy.Request {
	return policy.Request{Messages: userRequest("x").Messages, ToolChoice: "auto",
		Tools: []policy.Tool{{Name: "search", Parameters: []byte(`{"type":"object"}`)}}, MaxTokens: 64}
}

// Misconfigured servers refuse every tool request; the refusal is fatal
// (the run stops) with the fix in the message, after a single request.
func TestServerFlagRefusalsAreFatalWithTheFix(t *testing.T) {
	cases := []struct {
		name string
		mode fakeserver.Mode
		fix  string
	}{
		// vllm/entrypoints/openai/serving_chat.py
		{"vLLM auto tool choice without --enable-auto-tool-choice", fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true}, "--enable-auto-tool-choice --tool-call-parser"},
		// ollama server/images.go (errCapabilities: "does not support tools")
		{"Ollama model without tool support", fakeserver.Mode{Family: fakeserver.FamilyOllama, NoToolParser: true}, "tools capability"},
		// llama.cpp tools/server/utils.hpp: a 500, still fatal
		{"llama.cpp tools without --jinja", fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, NoToolParser: true}, "--jinja"},
		// OpenAI reasoning models: unsupported_value for temperature
		{"OpenAI unsupported temperature", fakeserver.Mode{Family: fakeserver.FamilyOpenAI, FixedTemperature: true}, "--temperature omit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mode
			c, srv := modeClient(t, fakeserver.Options{Mode: &m, Fallback: &fakeserver.Reply{Content: "ok"}})
			_, err := c.Complete(context.Background(), toolRequest())
			require.Error(t, err)
			assert.ErrorIs(t, err, policy.ErrFatal)
			assert.Contains(t, err.Error(), tc.fix)
			assert.Equal(t, 1, srv.Count(), "not retried")
		})
	}
}

// OpenAI reasoning models refuse max_tokens ("Use 'max_completion_tokens'
// instead"): the client switches once and keeps the new field.
func TestOpenAIReasoningModelRefusesMaxTokens(t *testing.T) {
	c, srv := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true},
		Fallback: &fakeserver.Reply{Content: "ok"}})
	for range 2 {
		resp, err := c.Complete(context.Background(), toolRequest())
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.Message.Content)
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Contains(t, string(reqs[0].Raw), `"max_tokens":64`)
	assert.Contains(t, string(reqs[1].Raw), `"max_completion_tokens":64`)
	assert.Contains(t, string(reqs[2].Raw), `"max_completion_tokens":64`)
	assert.Zero(t, c.Stats().Retries)

	// Set by flag: never max_tokens; and max_tokens forced is fatal with the fix.
	c2, srv2 := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true},
		Fallback: &fakeserver.Reply{Content: "ok"}}, func(c *Config) { c.TokenParam = TokenMaxCompletionTokens })
	_, err := c2.Complete(context.Background(), toolRequest())
	require.NoError(t, err)
	assert.Equal(t, 1, srv2.Count())
	c3, _ := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true},
		Fallback: &fakeserver.Reply{Content: "ok"}}, func(c *Config) { c.TokenParam = TokenMaxTokens })
	_, err = c3.Complete(context.Background(), toolRequest())
	assert.ErrorIs(t, err, policy.ErrFatal)
	assert.Contains(t, err.Error(), "--token-param max_completion_tokens")
}

// A gateway or model that takes tools but refuses tool_choice: the client
// resends at once without it (with tools, "auto" is the default), keeps it
// out of later requests, and never advises dropping tools.
func TestRefusedToolChoiceIsLeftOut(t *testing.T) {
	c, srv := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RefuseToolChoice: true},
		Fallback: &fakeserver.Reply{Content: "ok"}})
	for range 2 {
		resp, err := c.Complete(context.Background(), toolRequest())
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.Message.Content)
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Contains(t, string(reqs[0].Raw), `"tool_choice":"auto"`)
	assert.NotContains(t, string(reqs[1].Raw), `tool_choice`)
	assert.Contains(t, string(reqs[1].Raw), `"tools"`, "the tools are still sent")
	assert.NotContains(t, string(reqs[2].Raw), `tool_choice`)
	assert.Zero(t, c.Stats().Retries)
	assert.NotContains(t, paramFix("tool_choice"), "does not take tools", "a refused choice is not a refused tools list")
}

// Temperature left out of the request for models that accept only their default.
func TestOpenAIReasoningModelWithOmittedTemperature(t *testing.T) {
	c, srv := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyOpenAI, FixedTemperature: true},
		Fallback: &fakeserver.Reply{Content: "ok"}})
	req := toolRequest()
	req.OmitTemperature = true
	_, err := c.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.NotContains(t, string(srv.Requests()[0].Raw), "temperature")
}

// llama.cpp tools/server/server.cpp answers 503 "Loading model" until the
// weights are loaded, and /health says 503 until then: the client waits on
// /health without using up its retries.
func TestLlamaCppLoadingModelWaitsForHealth(t *testing.T) {
	c, srv := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, LoadingPolls: 5},
		Fallback: &fakeserver.Reply{Content: "ok"}}, func(c *Config) { c.MaxRetries = -1 })
	resp, err := c.Complete(context.Background(), userRequest("x"))
	require.NoError(t, err, "no retries allowed, yet the wait succeeds")
	assert.Equal(t, "ok", resp.Message.Content)
	assert.Equal(t, 6, srv.HealthPolls())
	assert.Zero(t, c.Stats().Retries)

	// A server that never gets ready: an infrastructure error after ReadyWait.
	c2, _ := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, LoadingPolls: 1 << 30},
		Fallback: &fakeserver.Reply{Content: "ok"}}, func(c *Config) { c.MaxRetries = -1; c.ReadyWait = 20 * time.Millisecond })
	_, err = c2.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrInfra)
	assert.Contains(t, err.Error(), "--ready-timeout")
}

// A 5xx naming a parse or template failure (llama.cpp "Failed to parse
// input", vLLM and SGLang chat-template errors, Ollama "template: ...") is
// the model's doing: a model error after one retry, never six.
func TestParseOrTemplateFailureIsAModelErrorAfterOneRetry(t *testing.T) {
	for _, body := range []string{
		`{"error":{"code":500,"message":"Failed to parse input at pos 12: <tool_call>{\"name\"","type":"server_error"}}`,
		`{"object":"error","message":"Error in applying chat template from request: 'tool_calls' is undefined","type":"InternalServerError","code":500}`,
		`{"error":"template: :12:3: executing \"\" at <.Function.Arguments>: error calling json"}`,
	} {
		c, srv := modeClient(t, fakeserver.Options{Fallback: func() *fakeserver.Reply { r := fakeserver.Raw(500, body); return &r }()})
		_, err := c.Complete(context.Background(), userRequest("x"))
		assert.ErrorIs(t, err, policy.ErrModel, body)
		assert.Equal(t, 2, srv.Count(), "one retry")
	}
}

// The same 500 for the same request twice is a model error (a resumed
// run records it instead of retrying it forever); OpenAI's generic
// transient wording stays retryable.
func TestIdentical500ForTheSameRequestIsAModelError(t *testing.T) {
	c, srv := modeClient(t, fakeserver.Options{Fallback: func() *fakeserver.Reply {
		r := fakeserver.Raw(500, `{"object":"error","message":"list index out of range","type":"InternalServerError","code":500}`)
		return &r
	}()})
	_, err := c.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrModel)
	assert.Contains(t, err.Error(), "repeated")
	assert.Equal(t, 2, srv.Count())

	c2, srv2 := modeClient(t, fakeserver.Options{Fallback: func() *fakeserver.Reply { r := fakeserver.ServerError(500); return &r }()})
	_, err = c2.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrInfra)
	assert.Equal(t, 4, srv2.Count())
}

// Current context-length wordings, as each family sends them.
func TestContextLengthWordings(t *testing.T) {
	long := userRequest(strings.Repeat("word ", 400))
	for _, fam := range []fakeserver.Family{fakeserver.FamilyVLLM, fakeserver.FamilySGLang, fakeserver.FamilyLlamaCpp, fakeserver.FamilyOpenAI} {
		t.Run(string(fam), func(t *testing.T) {
			c, srv := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fam, ContextLength: 100}, Fallback: &fakeserver.Reply{Content: "ok"}})
			_, err := c.Complete(context.Background(), long)
			assert.ErrorIs(t, err, policy.ErrContextLength)
			assert.Equal(t, 1, srv.Count())
		})
	}
	// vLLM's param "input_tokens" alone is enough.
	assert.True(t, isContextLength(apiError{Message: "bad", Param: "input_tokens"}))
}

// Azure's content filter answers 200 with no choices and
// prompt_filter_results: a model error (the same every time).
func TestPromptFilteredIsAModelError(t *testing.T) {
	c, srv := modeClient(t, fakeserver.Options{Fallback: func() *fakeserver.Reply {
		r := fakeserver.Raw(200, `{"choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":true}}}]}`)
		return &r
	}()})
	_, err := c.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrModel)
	assert.Equal(t, 1, srv.Count())
}

// A body over the size cap is no completion: an infrastructure error,
// not retried within the request.
func TestOversizeBodyIsAnInfrastructureError(t *testing.T) {
	big := `{"choices":[{"message":{"role":"assistant","content":"` + strings.Repeat("a", maxResponseBytes) + `"}}]}`
	c, srv := modeClient(t, fakeserver.Options{Fallback: func() *fakeserver.Reply { r := fakeserver.Raw(200, big); return &r }()})
	_, err := c.Complete(context.Background(), userRequest("x"))
	assert.ErrorIs(t, err, policy.ErrInfra)
	assert.Contains(t, err.Error(), "larger than")
	assert.Equal(t, 1, srv.Count())
}

// Reasoning fields as each family sends them.
func TestReasoningFields(t *testing.T) {
	for fam, field := range map[fakeserver.Family]string{fakeserver.FamilyVLLM: "reasoning_content", fakeserver.FamilyOllama: "reasoning", fakeserver.FamilyLlamaCpp: "reasoning_content"} {
		c, srv := modeClient(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fam}, Fallback: &fakeserver.Reply{Content: "ok", Reasoning: "hmm"}})
		resp, err := c.Complete(context.Background(), userRequest("x"))
		require.NoError(t, err)
		assert.Equal(t, "ok", resp.Message.Content)
		assert.Equal(t, "hmm", resp.Message.Reasoning, field)
		_ = srv
	}
}

// endpoint check against each mode reports each capability.
func TestEndpointCheckPerMode(t *testing.T) {
	cases := []struct {
		name       string
		mode       fakeserver.Mode
		reply      fakeserver.Reply
		tools      string
		tokenParam string
		reasoning  string
		context    int
		ok         bool
		fix        string
	}{
		{"vllm", fakeserver.Mode{Family: fakeserver.FamilyVLLM, ContextLength: 32768}, fakeserver.Reply{Reasoning: "r"}, "structured", "max_tokens", "field", 32768, true, ""},
		{"vllm no tool parser", fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true}, fakeserver.Reply{}, "refused", "max_tokens", "none", 0, false, "--enable-auto-tool-choice"},
		{"vllm no reasoning parser", fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoReasoningParser: true}, fakeserver.Reply{Reasoning: "r"}, "structured", "max_tokens", "content", 0, true, ""},
		{"sglang no tool parser", fakeserver.Mode{Family: fakeserver.FamilySGLang, NoToolParser: true, ContextLength: 8192}, fakeserver.Reply{}, "markup_in_content", "max_tokens", "none", 8192, false, "--tool-call-parser"},
		{"ollama", fakeserver.Mode{Family: fakeserver.FamilyOllama}, fakeserver.Reply{Reasoning: "r"}, "structured", "max_tokens", "field", 0, true, ""},
		{"ollama no tools", fakeserver.Mode{Family: fakeserver.FamilyOllama, NoToolParser: true}, fakeserver.Reply{}, "refused", "max_tokens", "none", 0, false, "tools capability"},
		{"llamacpp", fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, ContextLength: 4096}, fakeserver.Reply{}, "structured", "max_tokens", "none", 4096, true, ""},
		{"llamacpp no jinja", fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, NoToolParser: true}, fakeserver.Reply{}, "refused", "max_tokens", "none", 0, false, "--jinja"},
		{"openai reasoning model", fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true, FixedTemperature: true}, fakeserver.Reply{}, "structured", "max_completion_tokens", "none", 0, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mode
			reply := tc.reply
			handler := func(req *fakeserver.Request) fakeserver.Reply {
				r := reply
				if len(req.Tools) > 0 {
					r.ToolCalls = []fakeserver.Call{{Name: CheckTool, Arguments: `{"city":"Paris"}`}}
				} else {
					r.Content = "ready"
				}
				return r
			}
			c, _ := modeClient(t, fakeserver.Options{Mode: &m, Handler: handler})
			rep, err := c.Check(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.tools, rep.ToolCalls)
			assert.Equal(t, tc.tokenParam, rep.TokenParam)
			assert.Equal(t, tc.reasoning, rep.Reasoning)
			assert.Equal(t, tc.context, rep.ContextLength)
			assert.Equal(t, tc.ok, rep.OK)
			assert.Equal(t, string(m.Family), rep.Family)
			if tc.fix != "" {
				var fixes []string
				for _, cp := range rep.Capabilities {
					fixes = append(fixes, cp.Fix)
				}
				assert.Contains(t, strings.Join(fixes, "\n"), tc.fix)
			}
			if m.FixedTemperature {
				for _, cp := range rep.Capabilities {
					if cp.Name == "temperature 0" {
						assert.Equal(t, CapNo, cp.Status)
						assert.Contains(t, cp.Fix, "--temperature omit")
					}
				}
			}
		})
	}
	// Unreachable: reported, not an error.
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Timeout: time.Second, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	require.NoError(t, err)
	rep, err := c.Check(context.Background())
	require.NoError(t, err)
	assert.False(t, rep.OK)
	assert.Equal(t, CapNo, rep.Capabilities[0].Status)
	_ = http.StatusOK
}

// TestEndpointCheckTransient: the pre-flight check retries what the run
// retries: a busy server (429 or 503, with or without Retry-After), a
// loading one (503 on every route until ready) and a reset connection are
// accepted once they answer; an endpoint whose answer stays the same after
// the retries (500 for everything, a Retry-After beyond the bound) is not.
func TestEndpointCheckTransient(t *testing.T) {
	answer := func(resetFirst bool) func(*fakeserver.Request) fakeserver.Reply {
		var mu sync.Mutex
		n := 0
		return func(req *fakeserver.Request) fakeserver.Reply {
			mu.Lock()
			n++
			first := n == 1
			mu.Unlock()
			if resetFirst && first {
				return fakeserver.Reset()
			}
			if len(req.Tools) > 0 {
				return fakeserver.ToolCalls(fakeserver.Call{Name: CheckTool, Arguments: `{"city":"Paris"}`})
			}
			return fakeserver.Text("ready")
		}
	}
	cases := []struct {
		name     string
		mode     fakeserver.Mode
		fallback *fakeserver.Reply
		reset    bool
		ok       bool
		detail   string
	}{
		{name: "ollama busy 503", mode: fakeserver.Mode{Family: fakeserver.FamilyOllama, Busy: 3}, ok: true},
		{name: "openai 429 with Retry-After", mode: fakeserver.Mode{Family: fakeserver.FamilyOpenAI, Busy: 3, BusyRetryAfter: "0.01"}, ok: true},
		{name: "llamacpp loading", mode: fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, LoadingPolls: 3}, ok: true},
		{name: "connection reset", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM}, reset: true, ok: true},
		{name: "Retry-After beyond the bound", mode: fakeserver.Mode{Family: fakeserver.FamilyOpenAI, Busy: 100, BusyRetryAfter: "3600"}, detail: "HTTP 429"},
		{name: "busy longer than the retries", mode: fakeserver.Mode{Family: fakeserver.FamilyOllama, Busy: 100}, detail: "server busy"},
		{name: "500 for everything", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM},
			fallback: func() *fakeserver.Reply {
				r := fakeserver.Error(500, "CUDA error: out of memory", "server_error", "")
				return &r
			}(), detail: "CUDA error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mode
			opts := fakeserver.Options{Mode: &m, Handler: answer(tc.reset)}
			if tc.fallback != nil {
				opts.Handler = func(*fakeserver.Request) fakeserver.Reply { return *tc.fallback }
			}
			c, srv := modeClient(t, opts, func(cfg *Config) { cfg.MaxRetryAfter = time.Second })
			rep, err := c.Check(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.ok, rep.OK, "%+v", rep.Capabilities)
			if tc.ok {
				assert.Equal(t, "structured", rep.ToolCalls)
				for _, cp := range rep.Capabilities {
					assert.NotEqual(t, CapNo, cp.Status, "%s: %s", cp.Name, cp.Detail)
				}
			} else {
				var details []string
				for _, cp := range rep.Capabilities {
					details = append(details, cp.Detail)
				}
				assert.Contains(t, strings.Join(details, "\n"), tc.detail)
			}
			if m.LoadingPolls > 0 {
				assert.Greater(t, srv.HealthPolls(), m.LoadingPolls, "waited on /health")
			}
		})
	}
}
