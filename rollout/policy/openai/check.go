package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/secret"
)

// The prompts of Check's probes, exported so that simulated servers can
// answer them.
const (
	CheckPlainPrompt = "Reply with the single word: ready"
	CheckToolPrompt  = "What is the weather in Paris? Use the get_weather tool; do not answer in text."
	CheckTool        = "get_weather"
)

// Capability states in a Report.
const (
	CapOK      = "ok"
	CapNo      = "no"
	CapUnknown = "unknown"
)

// Capability is one line of an endpoint check.
type Capability struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, no, unknown
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Report is what Check found out about an endpoint and a model.
type Report struct {
	BaseURL string   `json:"base_url"` // redacted
	Model   string   `json:"model"`
	Family  string   `json:"family,omitempty"` // vllm, sglang, ollama, llamacpp, openai, as the models list suggests
	Models  []string `json:"models,omitempty"`
	// ContextLength is the model's context as the server reports it (0: not reported).
	ContextLength int `json:"context_length,omitempty"`
	// NumCtx is the context an Ollama server gives the model (num_ctx in
	// the model's parameters, from /api/show; 0: not set there).
	NumCtx int `json:"num_ctx,omitempty"`
	// ToolCalls: structured, markup_in_content, dropped, none, refused or unknown.
	ToolCalls string `json:"tool_calls"`
	// TokenParam is the field the endpoint takes for the token limit.
	TokenParam string `json:"token_param"`
	// Reasoning: field (reasoning_content / reasoning), content (<think> in
	// content) or none (none seen on the probes).
	Reasoning    string       `json:"reasoning"`
	Capabilities []Capability `json:"capabilities"`
	// OK: rollouts through native tool calling will work as configured.
	OK bool `json:"ok"`
}

// Check probes the endpoint: it lists the models, sends a plain completion
// (temperature 0, a seed and a token limit, dropping whichever the endpoint
// refuses to learn what it takes) and a tool request that asks for one
// call, and reports what came back with the fix for what failed. It does
// retry what is transient as the run does (patient), so that a busy or
// loading server is not declared unusable by its first answers.
func (c *Client) Check(ctx context.Context) (Report, error) {
	rep := Report{BaseURL: secret.URL(c.base), Model: c.model, ToolCalls: "unknown", TokenParam: "max_tokens", Reasoning: "none"}
	add := func(name, status, detail, fix string) {
		rep.Capabilities = append(rep.Capabilities, Capability{Name: name, Status: status, Detail: c.redact.apply(detail), Fix: fix})
	}

	// 1. Models.
	status, body, err := c.getPatient(ctx, c.base+"/models")
	switch {
	case err != nil:
		add("reachable", CapNo, "GET /models: "+c.redact.apply(err.Error()), "check the base URL (usually http://HOST:PORT/v1) and that the server is running")
		return rep, nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		add("reachable", CapNo, fmt.Sprintf("GET /models: HTTP %d", status), "check the API key (read from the environment variable named by --api-key-env)")
		return rep, nil
	case status != http.StatusOK:
		add("models", CapUnknown, fmt.Sprintf("GET /models: HTTP %d", status), "")
	default:
		add("reachable", CapOK, "", "")
		c.readModels(&rep, body)
		listed := false
		for _, m := range rep.Models {
			listed = listed || m == c.model
		}
		if listed || len(rep.Models) == 0 {
			add("model listed", CapOK, "", "")
		} else {
			add("model listed", CapNo, "the server lists: "+strings.Join(rep.Models, ", "), "pass one of the listed names as the model (with vLLM, a LoRA adapter's name is a model name)")
		}
	}
	if rep.Family == "ollama" {
		c.readNumCtx(ctx, &rep)
		if rep.NumCtx > 0 {
			add("num_ctx", CapOK, fmt.Sprintf("%d tokens (a longer conversation is cut silently; antidrift marks such episodes context_truncated)", rep.NumCtx), "")
		}
	}
	if rep.ContextLength > 0 {
		add("context length", CapOK, fmt.Sprintf("%d tokens", rep.ContextLength), "")
	} else {
		add("context length", CapUnknown, "not reported by the server", "")
	}

	// 2. A plain completion with every sampling parameter; drop what is refused.
	params := map[string]any{"temperature": 0, "seed": 1, "max_tokens": 64}
	refused := map[string]string{}
	var plain chatProbe
	for range 4 {
		plain = c.probe(ctx, []any{map[string]any{"role": "user", "content": CheckPlainPrompt}}, nil, params)
		p, ok := unsupportedParam(plain.apiErr)
		if plain.status < 400 || plain.status >= 500 || !ok {
			if plain.status == http.StatusBadRequest && strings.Contains(strings.ToLower(plain.apiErr.Message), "seed") {
				p, ok = "seed", true
			} else {
				break
			}
		}
		if !ok {
			break
		}
		refused[p] = plain.apiErr.Message
		delete(params, p)
		if p == "max_tokens" {
			params["max_completion_tokens"] = 64
			rep.TokenParam = "max_completion_tokens"
		}
	}
	if plain.status != http.StatusOK {
		add("plain completion", CapNo, plain.describe(), plain.fix(rep.Family))
	} else {
		add("plain completion", CapOK, "", "")
	}
	param := func(name, fix string) {
		if why, bad := refused[name]; bad {
			add(name, CapNo, why, fix)
		} else if plain.status == http.StatusOK {
			add(name, CapOK, "accepted", "")
		} else {
			add(name, CapUnknown, "", "")
		}
	}
	param("temperature 0", "")
	if _, bad := refused["temperature"]; bad {
		rep.Capabilities[len(rep.Capabilities)-1] = Capability{Name: "temperature 0", Status: CapNo, Detail: refused["temperature"], Fix: paramFix("temperature")}
	}
	param("seed", "runs stay reproducible only as far as the server is deterministic")
	if rep.TokenParam == "max_completion_tokens" {
		add("token limit", CapOK, "max_completion_tokens (max_tokens refused)", "detected automatically; or pass --token-param max_completion_tokens")
	} else {
		param("max_tokens", "")
	}
	if plain.reasoning != "" {
		rep.Reasoning = plain.reasoning
	}

	// 3. A tool request that asks for one call.
	tool := map[string]any{"type": "function", "function": map[string]any{
		"name": CheckTool, "description": "Get the current weather of a city.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
	}}
	params["max_"+strings.TrimPrefix(rep.TokenParam, "max_")] = 512
	tc := c.probe(ctx, []any{map[string]any{"role": "user", "content": CheckToolPrompt}},
		[]any{tool}, params)
	if tc.reasoning != "" {
		rep.Reasoning = tc.reasoning
	}
	switch {
	case tc.status != http.StatusOK:
		rep.ToolCalls = "refused"
		add("tool calls", CapNo, tc.describe(), tc.fix(rep.Family))
	case tc.calls > 0:
		rep.ToolCalls = "structured"
		add("tool calls", CapOK, fmt.Sprintf("structured tool_calls (finish_reason %s)", tc.finish), "")
	case hasMarkup(tc.content):
		rep.ToolCalls = "markup_in_content"
		add("tool calls", CapNo, "the call came back as text in content: the server did not parse it", parserFix(rep.Family))
	case tc.finish == "tool_calls":
		rep.ToolCalls = "dropped"
		add("tool calls", CapNo, "finish_reason tool_calls with no call: the server dropped a call it could not parse", parserFix(rep.Family))
	default:
		rep.ToolCalls = "none"
		add("tool calls", CapUnknown, "the model answered in text without calling the tool: "+clip(tc.content), "a model that ignores a direct request to call a tool will not call tools in rollouts either; try another model or --framework react")
	}
	if rep.Family == "sglang" {
		// python/sglang/srt/function_call/base_format_detector.py drops a
		// call to a tool the request did not offer.
		add("calls to hidden tools", CapNo, "SGLang drops calls to tools the request did not offer: under --framework gated an attempt at a hidden tool that the answer's text does not show is lost, so DR is a lower bound, not comparable with a server that keeps such calls (vLLM)", "compare gated runs on one server family; records say dropped_tool_call where the server admits the drop")
	}
	switch rep.Reasoning {
	case "field":
		add("reasoning", CapOK, "in a separate field (reasoning_content / reasoning)", "")
	case "content":
		add("reasoning", CapOK, "inside content as <think> blocks (antidrift moves them out of the answer)", reasoningFix(rep.Family))
	default:
		add("reasoning", CapOK, "none seen", "")
	}
	rep.OK = rep.ToolCalls == "structured" && plain.status == http.StatusOK
	return rep, nil
}

// chatProbe is one probe's answer.
type chatProbe struct {
	status    int
	apiErr    apiError
	err       error
	content   string
	calls     int
	finish    string
	reasoning string // field, content or ""
}

func (p chatProbe) describe() string {
	if p.err != nil {
		return p.err.Error()
	}
	return fmt.Sprintf("HTTP %d: %s", p.status, p.apiErr.Message)
}

func (p chatProbe) fix(family string) string {
	v := classify(p.status, p.apiErr)
	if v.hint != "" && v.class != nil {
		return v.hint
	}
	if p.status == 0 {
		return "check that the server is running and reachable"
	}
	return ""
}

func (c *Client) probe(ctx context.Context, messages, tools []any, params map[string]any) chatProbe {
	req := map[string]any{"model": c.model, "messages": messages}
	for k, v := range params {
		req[k] = v
	}
	if len(tools) > 0 {
		req["tools"], req["tool_choice"] = tools, "auto"
	}
	b, _ := json.Marshal(req)
	status, data, err := c.post(ctx, b)
	if err != nil {
		return chatProbe{err: fmt.Errorf("%s", c.redact.apply(err.Error()))}
	}
	if status != http.StatusOK {
		return chatProbe{status: status, apiErr: parseAPIError(data)}
	}
	var cr chatResponse
	if json.Unmarshal(data, &cr) != nil || len(cr.Choices) == 0 || cr.Choices[0].Message == nil {
		return chatProbe{status: 502, apiErr: apiError{Message: "200 without a usable choice: " + clip(string(data))}}
	}
	m := cr.Choices[0].Message
	content, _ := decodeContent(m.Content)
	p := chatProbe{status: status, content: content, calls: len(m.ToolCalls), finish: policy.NormalizeFinish(string(cr.Choices[0].FinishReason), len(m.ToolCalls) > 0)}
	switch {
	case m.ReasoningContent != "" || m.Reasoning != "":
		p.reasoning = "field"
	case strings.Contains(content, "<think>") || strings.Contains(content, "</think>"):
		p.reasoning = "content"
	}
	return p
}

// post sends one chat request, under the run's retry policy for what is
// transient (patient).
func (c *Client) post(ctx context.Context, body []byte) (int, []byte, error) {
	return c.patient(ctx, func(ctx context.Context) (int, []byte, http.Header, error) {
		actx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
		if err != nil {
			return 0, nil, nil, err
		}
		hreq.Header.Set("Content-Type", "application/json")
		if c.key != "" {
			hreq.Header.Set("Authorization", "Bearer "+c.key)
		}
		hresp, err := c.http.Do(hreq)
		if err != nil {
			return 0, nil, nil, err
		}
		defer hresp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(hresp.Body, maxResponseBytes))
		return hresp.StatusCode, data, hresp.Header, err
	})
}

// getPatient is get under the retry policy of patient.
func (c *Client) getPatient(ctx context.Context, u string) (int, []byte, error) {
	return c.patient(ctx, func(ctx context.Context) (int, []byte, http.Header, error) {
		return c.getHeader(ctx, u)
	})
}

// patient makes a request under the same retry policy as Complete, so that
// the pre-flight check and the run judge an endpoint alike: a connection
// error, a 408, 409, 429 (quota aside) or 5xx is retried with back-off up
// to MaxRetries, honouring Retry-After up to MaxRetryAfter; a 503 "Loading
// model" waits for readiness up to ReadyWait without using up retries. The
// last answer is returned: only one that stays after the retries is the
// endpoint's.
func (c *Client) patient(ctx context.Context, send func(context.Context) (int, []byte, http.Header, error)) (int, []byte, error) {
	waits := 0
	for attempt := 0; ; attempt++ {
		status, data, h, err := send(ctx)
		if ctx.Err() != nil {
			return status, data, err
		}
		var wait time.Duration
		switch {
		case err != nil:
			// A connection refused or reset, a timeout: transient.
		case status >= 200 && status < 300:
			return status, data, nil
		default:
			v := classify(status, parseAPIError(data))
			if v.loading && c.readyWait > 0 && waits < 3 {
				waits++
				if werr := c.waitReady(ctx, &Error{Class: policy.ErrInfra, StatusCode: status, Message: "the server is still loading the model"}); werr != nil {
					return status, data, nil
				}
				attempt--
				continue
			}
			if !v.retry || v.once {
				return status, data, nil
			}
			if d, ok := retryAfter(h, c.now()); ok {
				if d > c.maxRetryAfter {
					return status, data, nil
				}
				wait = d
			}
		}
		if attempt >= c.maxRetries {
			return status, data, err
		}
		if wait <= 0 {
			wait = backoff(attempt, c.backoffBase, c.backoffMax)
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return status, data, err
		}
		c.retries.Add(1)
	}
}

// readNumCtx asks an Ollama server for the model's num_ctx: POST /api/show
// beside the API root answers the Modelfile parameters as text lines
// ("num_ctx 32768"; server/routes.go ShowHandler). Unset there, the
// context comes from OLLAMA_CONTEXT_LENGTH or Ollama's default, which the
// API does not show: NumCtx stays 0.
func (c *Client) readNumCtx(ctx context.Context, rep *Report) {
	root := strings.TrimSuffix(strings.TrimRight(c.base, "/"), "/v1")
	body, _ := json.Marshal(map[string]string{"model": c.model, "name": c.model})
	actx, cancel := context.WithTimeout(ctx, min(c.timeout, 30*time.Second))
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, root+"/api/show", bytes.NewReader(body))
	if err != nil {
		return
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := c.http.Do(hreq)
	if err != nil {
		return
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
	if err != nil || hresp.StatusCode != http.StatusOK {
		return
	}
	var show struct {
		Parameters string `json:"parameters"`
	}
	if json.Unmarshal(data, &show) != nil {
		return
	}
	for _, line := range strings.Split(show.Parameters, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil && n > 0 {
				rep.NumCtx = n
			}
		}
	}
}

// readModels reads the models list and what it says about the server.
func (c *Client) readModels(rep *Report, body []byte) {
	var list struct {
		Data []struct {
			ID            string `json:"id"`
			OwnedBy       string `json:"owned_by"`
			MaxModelLen   int    `json:"max_model_len"`  // vLLM, SGLang
			ContextLength int    `json:"context_length"` // gateways
			ContextWindow int    `json:"context_window"`
			Meta          *struct {
				NCtxTrain int `json:"n_ctx_train"` // llama.cpp
			} `json:"meta"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil {
		return
	}
	for _, d := range list.Data {
		rep.Models = append(rep.Models, d.ID)
		if d.ID != c.model && len(list.Data) > 1 {
			continue
		}
		if rep.Family == "" {
			rep.Family = familyOf(d.OwnedBy)
		}
		for _, n := range []int{d.MaxModelLen, d.ContextLength, d.ContextWindow} {
			if n > 0 && rep.ContextLength == 0 {
				rep.ContextLength = n
			}
		}
		if d.Meta != nil && d.Meta.NCtxTrain > 0 && rep.ContextLength == 0 {
			rep.ContextLength = d.Meta.NCtxTrain
		}
	}
}

func familyOf(ownedBy string) string {
	switch o := strings.ToLower(ownedBy); {
	case o == "vllm":
		return "vllm"
	case o == "sglang":
		return "sglang"
	case o == "llamacpp" || o == "llama.cpp":
		return "llamacpp"
	case o == "ollama" || o == "library":
		return "ollama"
	case o == "openai" || o == "system" || strings.HasPrefix(o, "openai"):
		return "openai"
	}
	return ""
}

func hasMarkup(content string) bool {
	for _, m := range []string{"<tool_call>", "[TOOL_CALLS]", "<|tool_call|>", "<function="} {
		if strings.Contains(content, m) {
			return true
		}
	}
	t := strings.TrimSpace(content)
	return strings.HasPrefix(t, "{") && strings.Contains(t, `"name"`) && strings.Contains(t, "get_weather")
}

func parserFix(family string) string {
	switch family {
	case "vllm":
		return "start vLLM with --enable-auto-tool-choice --tool-call-parser PARSER matching the model (hermes for Qwen and Hermes, llama3_json for Llama 3.x, mistral for Mistral)"
	case "sglang":
		return "start SGLang with --tool-call-parser PARSER matching the model (qwen25, llama3, mistral, deepseekv3, ...)"
	case "llamacpp":
		return "start llama-server with --jinja and a chat template that supports tools (--chat-template-file)"
	case "ollama":
		return "use a model whose template supports tools (ollama show MODEL lists the tools capability)"
	}
	return "enable the server's tool-call parser for this model (see docs/servers.md); antidrift recovers readable markup, but unreadable calls end episodes as unparsed_tool_call"
}

func reasoningFix(family string) string {
	switch family {
	case "vllm":
		return "optional: --reasoning-parser (deepseek_r1, qwen3, ...) puts reasoning in its own field"
	case "sglang":
		return "optional: --reasoning-parser (deepseek-r1, qwen3, ...)"
	case "llamacpp":
		return "optional: --reasoning-format deepseek"
	}
	return ""
}
