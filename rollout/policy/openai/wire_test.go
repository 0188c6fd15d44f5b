package openai

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestNormalizeArguments(t *testing.T) {
	cases := []struct {
		raw, args, parsed, err string
	}{
		{`"{\"a\": 1, \"b\": [1, 2]}"`, `{"a": 1, "b": [1, 2]}`, `{"a":1,"b":[1,2]}`, ""},
		{`{"a": 1}`, `{"a":1}`, `{"a":1}`, ""},
		{`"{}"`, `{}`, `{}`, ""},
		{`""`, ``, `{}`, ""},
		{`"  "`, `  `, `{}`, ""},
		{``, ``, `{}`, ""},
		{`null`, ``, `{}`, ""},
		{`"{\"a\":"`, `{"a":`, ``, "not valid JSON"},
		{`"{\"a\":1} trailing"`, `{"a":1} trailing`, ``, "not valid JSON"},
		{`"[1]"`, `[1]`, ``, "got an array"},
		{`[1, 2]`, `[1,2]`, ``, "got an array"},
		{`"\"s\""`, `"s"`, ``, "got a string"},
		{`"true"`, `true`, ``, "got a boolean"},
		{`"null"`, `null`, `{}`, ""},
		{`"\"{\\\"a\\\":1}\""`, `"{\"a\":1}"`, `{"a":1}`, ""},
		{`3.5`, `3.5`, ``, "got a number"},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			args, parsed, err, _ := normalizeArguments(json.RawMessage(tc.raw))
			assert.Equal(t, tc.args, args)
			assert.Equal(t, tc.parsed, string(parsed))
			if tc.err == "" {
				assert.Empty(t, err)
			} else {
				assert.Contains(t, err, tc.err)
			}
		})
	}
}

func TestParseAPIError(t *testing.T) {
	cases := []struct {
		name, body string
		want       apiError
	}{
		{"openai", `{"error":{"message":"m","type":"t","param":null,"code":"c"}}`, apiError{"m", "t", "c", ""}},
		{"vllm", `{"object":"error","message":"m","type":"BadRequestError","param":null,"code":400}`, apiError{"m", "BadRequestError", "400", ""}},
		{"llama.cpp", `{"error":{"code":400,"message":"m","type":"exceed_context_size_error"}}`, apiError{"m", "exceed_context_size_error", "400", ""}},
		{"ollama", `{"error":"model \"x\" not found"}`, apiError{Message: `model "x" not found`}},
		{"fastapi string", `{"detail":"Not Found"}`, apiError{Message: "Not Found"}},
		{"fastapi list", `{"detail":[{"msg":"bad"}]}`, apiError{Message: `[{"msg":"bad"}]`}},
		{"html", "<html>\n <body>502 Bad Gateway</body>\n</html>", apiError{Message: "<html> <body>502 Bad Gateway</body> </html>"}},
		{"empty", ``, apiError{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parseAPIError([]byte(tc.body)))
		})
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	assert.LessOrEqual(t, len([]rune(parseAPIError(long).Message)), maxErrorText+1)
}

func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		err    apiError
		class  error
		retry  bool
	}{
		{400, apiError{Code: "context_length_exceeded"}, policy.ErrContextLength, false},
		{400, apiError{Message: "This model's maximum context length is 4096 tokens"}, policy.ErrContextLength, false},
		{400, apiError{Message: "prompt is too long: 1 tokens > 0 maximum"}, policy.ErrContextLength, false},
		{400, apiError{Message: "Input exceeds the context window of this model"}, policy.ErrContextLength, false},
		{400, apiError{Message: "please increase max_model_len"}, policy.ErrContextLength, false},
		{413, apiError{Message: "the request exceeds the available context size"}, policy.ErrContextLength, false},
		{422, apiError{Message: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"}, policy.ErrContextLength, false},
		{400, apiError{Message: "bad tool schema"}, policy.ErrModel, false},
		{422, apiError{}, policy.ErrModel, false},
		{401, apiError{}, policy.ErrFatal, false},
		{403, apiError{}, policy.ErrFatal, false},
		{402, apiError{}, policy.ErrFatal, false},
		{404, apiError{}, policy.ErrFatal, false},
		{429, apiError{Code: "insufficient_quota"}, policy.ErrFatal, false},
		{429, apiError{Type: "insufficient_quota"}, policy.ErrFatal, false},
		{429, apiError{Message: "You exceeded your current quota"}, policy.ErrFatal, false},
		{429, apiError{Message: "rate limit; maximum context length irrelevant"}, policy.ErrInfra, true},
		{408, apiError{}, policy.ErrInfra, true},
		{409, apiError{}, policy.ErrInfra, true},
		{500, apiError{}, policy.ErrInfra, true},
		{503, apiError{}, policy.ErrInfra, true},
		{302, apiError{}, policy.ErrInfra, true},
	}
	for _, tc := range cases {
		v := classify(tc.status, tc.err)
		assert.Equal(t, tc.class, v.class, "%d %+v", tc.status, tc.err)
		assert.Equal(t, tc.retry, v.retry, "%d %+v", tc.status, tc.err)
		assert.Equal(t, tc.status == 429 && tc.retry, v.throttled)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "12"}, 12 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"date", map[string]string{"Retry-After": now.Add(time.Minute).Format(http.TimeFormat)}, time.Minute, true},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"ms wins", map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond, true},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "later"}, 0, false},
		{"huge", map[string]string{"Retry-After": "1e300"}, 24 * time.Hour, true},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := retryAfter(h, now)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	base, limit := 10*time.Millisecond, 80*time.Millisecond
	for n := range 70 {
		ceiling := min(base<<min(n, 10), limit)
		for range 20 {
			d := backoff(n, base, limit)
			assert.GreaterOrEqual(t, d, ceiling/2)
			assert.LessOrEqual(t, d, ceiling)
		}
	}
}

func TestUnparseableArgumentsGoBackAsRawObject(t *testing.T) {
	req := policy.Request{Messages: []trajectory.Message{
		{Role: trajectory.RoleUser, Content: "find drift"},
		{Role: trajectory.RoleAssistant, ToolCalls: []trajectory.ToolCall{
			{ID: "a", Type: "function", Function: trajectory.FunctionCall{Name: "search", Arguments: `{"q": "dr`, ArgsError: "not valid JSON"}},
			{ID: "b", Type: "function", Function: trajectory.FunctionCall{Name: "search", Arguments: `{"q":"ok"}`, Parsed: json.RawMessage(`{"q":"ok"}`)}},
		}},
		{Role: trajectory.RoleTool, ToolCallID: "a", Content: `{"error":"invalid arguments"}`},
		{Role: trajectory.RoleTool, ToolCallID: "b", Content: `{"hits":[]}`},
	}}
	body, err := encodeRequest("m", req, ContentOmit, nil, false)
	require.NoError(t, err)
	var wire struct {
		Messages []struct {
			ToolCalls []struct {
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &wire))
	calls := wire.Messages[1].ToolCalls
	require.Len(t, calls, 2)
	assert.JSONEq(t, `{"_raw":"{\"q\": \"dr"}`, calls[0].Function.Arguments, "a broken call goes back as a JSON object holding the text")
	assert.Equal(t, `{"q":"ok"}`, calls[1].Function.Arguments, "a valid call goes back as the model wrote it")
}

func TestToolEncodingIsCachedAndExact(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	tool := policy.Tool{Name: "search", Description: "Search.", Parameters: params}
	req := policy.Request{Messages: []trajectory.Message{{Role: trajectory.RoleUser, Content: "x"}}, Tools: []policy.Tool{tool, {Name: "noargs"}}}
	var cache toolCache
	uncached, err := encodeRequest("m", req, ContentOmit, nil, false)
	require.NoError(t, err)
	first, err := encodeRequest("m", req, ContentOmit, &cache, false)
	require.NoError(t, err)
	second, err := encodeRequest("m", req, ContentOmit, &cache, false)
	require.NoError(t, err)
	assert.Equal(t, string(uncached), string(first), "the cache changes no byte of the request")
	assert.Equal(t, string(first), string(second))
	assert.Len(t, cache.m, 2)
	assert.Contains(t, string(first), `{"type":"function","function":{"name":"noargs","parameters":{"type":"object","properties":{}}}}`)

	// A tool with the same name but another description or schema is its own entry.
	other := policy.Tool{Name: "search", Description: "Search the web.", Parameters: json.RawMessage(`{"type":"object"}`)}
	third, err := encodeRequest("m", policy.Request{Messages: req.Messages, Tools: []policy.Tool{other}}, ContentOmit, &cache, false)
	require.NoError(t, err)
	assert.Contains(t, string(third), `"description":"Search the web.","parameters":{"type":"object"}`)
	assert.Len(t, cache.m, 3)
}
