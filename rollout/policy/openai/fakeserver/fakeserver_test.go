package fakeserver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
)

// A valid conversation with one round of two parallel tool calls.
const validMessages = `[
 {"role":"system","content":"be brief"},
 {"role":"user","content":"find x"},
 {"role":"assistant","tool_calls":[
   {"id":"a1","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}},
   {"id":"a2","type":"function","function":{"name":"search","arguments":"{bad json"}}]},
 {"role":"tool","tool_call_id":"a2","content":"error"},
 {"role":"tool","tool_call_id":"a1","content":""},
 {"role":"assistant","content":"done"},
 {"role":"user","content":"thanks"}
]`

const validTools = `[{"type":"function","function":{"name":"search","description":"d","parameters":{"type":"object"}}}]`

func body(fields map[string]string) string {
	base := map[string]string{
		"model":       `"m"`,
		"messages":    validMessages,
		"tools":       validTools,
		"tool_choice": `"auto"`,
		"temperature": `0`,
		"seed":        `1`,
	}
	for k, v := range fields {
		if v == "" {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	var parts []string
	for k, v := range base {
		parts = append(parts, `"`+k+`":`+v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func post(t *testing.T, url, payload string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", bytes.NewBufferString(payload))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestValidation(t *testing.T) {
	msgs := func(s string) map[string]string { return map[string]string{"messages": s} }
	cases := []struct {
		name   string
		fields map[string]string
		want   string // fragment of the violation; "" = valid
	}{
		{"valid", nil, ""},
		{"valid without tools", map[string]string{"tools": "", "tool_choice": "", "messages": `[{"role":"user","content":"hi"}]`}, ""},
		{"assistant content null with calls", msgs(`[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`), ""},
		{"missing model", map[string]string{"model": ""}, "model"},
		{"empty model", map[string]string{"model": `""`}, "model"},
		{"temperature absent", map[string]string{"temperature": ""}, "temperature"},
		{"messages empty", msgs(`[]`), "too short"},
		{"messages missing", map[string]string{"messages": ""}, "messages"},
		{"arguments as object", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"q":1}}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`), "expected a string, but got an object"},
		{"tool id empty", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"","content":"r"}]`), "id must be a non-empty string"},
		{"tool id missing", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]`), "id must be a non-empty string"},
		{"type missing", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`), "must be 'function'"},
		{"tool answers nothing", msgs(`[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"a","content":"r"}]`), "must be a response to a preceding message"},
		{"tool answers wrong id", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"r"}]`), "must be a response to a preceding message"},
		{"tool answers twice", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"},{"role":"tool","tool_call_id":"a","content":"r"}]`), "more than once"},
		{"call unanswered before user", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"},{"role":"user","content":"q"}]`), "did not have response messages: b"},
		{"call unanswered at end", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]`), "did not have response messages: a"},
		{"answer to an older assistant", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"},{"role":"assistant","content":"x"},{"role":"tool","tool_call_id":"a","content":"r"}]`), "must be a response to a preceding message"},
		{"duplicate ids in one message", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`), "duplicate tool call id"},
		{"private parsed_arguments", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}","parsed_arguments":{}}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`), "parsed_arguments"},
		{"private arguments_error", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"x","arguments_error":"bad"}}]},{"role":"tool","tool_call_id":"a","content":"r"}]`), "arguments_error"},
		{"user content null", msgs(`[{"role":"user","content":null}]`), "content"},
		{"tool content missing", msgs(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a"}]`), "content"},
		{"assistant with neither content nor calls", msgs(`[{"role":"user","content":"q"},{"role":"assistant"}]`), "'content' is required"},
		{"unknown role", msgs(`[{"role":"robot","content":"q"}]`), "robot"},
		{"tool_choice without tools", map[string]string{"tools": ""}, "only allowed when 'tools'"},
		{"tools empty", map[string]string{"tools": `[]`, "tool_choice": ""}, "too short"},
		{"bad tool_choice", map[string]string{"tool_choice": `"sometimes"`}, "sometimes"},
		{"temperature out of range", map[string]string{"temperature": `3`}, "between 0 and 2"},
		{"max_tokens zero", map[string]string{"max_tokens": `0`}, "positive integer"},
		{"not JSON", map[string]string{"model": `m`}, "parse the JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.Start(t, fakeserver.Options{Fallback: &fakeserver.Reply{Content: "ok"}})
			status, resp := post(t, srv.URL(), body(tc.fields))
			if tc.want == "" {
				assert.Equal(t, http.StatusOK, status, resp)
				assert.Empty(t, srv.Violations())
				return
			}
			assert.Equal(t, http.StatusBadRequest, status)
			require.Len(t, srv.Violations(), 1)
			assert.Contains(t, srv.Violations()[0], tc.want)
			var e struct {
				Error struct{ Message, Type string }
			}
			require.NoError(t, json.Unmarshal([]byte(resp), &e), resp)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			assert.Equal(t, 0, srv.Served(), "a rejected request consumes no reply")
		})
	}
}

func TestAuthAndRouting(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{APIKey: "k", Fallback: &fakeserver.Reply{Content: "ok"}})
	status, resp := post(t, srv.URL(), body(nil))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, resp, "invalid_api_key")

	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body(nil)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	res, err = http.Post(srv.URL()+"/completions", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	assert.Equal(t, 2, srv.Count(), "unknown paths are not recorded")
}

func TestScriptAndRecording(t *testing.T) {
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{
		fakeserver.ToolCalls(fakeserver.Call{Name: "search", Arguments: `{"q":"x"}`}).With(fakeserver.ObjectArguments | fakeserver.MissingUsage),
	}})
	status, resp := post(t, srv.URL(), body(nil))
	require.Equal(t, http.StatusOK, status, resp)
	assert.Contains(t, resp, `"arguments":{"q":"x"}`)
	assert.NotContains(t, resp, `"usage"`)
	assert.Contains(t, resp, `"finish_reason":"tool_calls"`)

	status, resp = post(t, srv.URL(), body(nil))
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Contains(t, resp, "script exhausted")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "m", reqs[0].Model)
	require.NotNil(t, reqs[0].Temperature)
	assert.Zero(t, *reqs[0].Temperature)
	assert.Len(t, reqs[0].Messages, 7)
	assert.Equal(t, `{bad json`, reqs[0].Messages[2].ToolCalls[1].Function.Arguments)
	assert.Equal(t, "search", reqs[0].Tools[0].Name)
	assert.Equal(t, "auto", reqs[0].ToolChoice)
}
