package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/antidrift/antidrift/rollout/policy"
)

// Error is the error Complete returns. Class is one of policy.ErrContextLength,
// policy.ErrFatal, policy.ErrModel or policy.ErrInfra, so errors.Is tells the
// classes apart; errors.As gives the HTTP details.
//
// The text never contains the API key: every piece taken from the server or
// from the transport is redacted before it is stored.
type Error struct {
	Class      error  // policy error class
	StatusCode int    // HTTP status of the last attempt; 0 when none arrived
	Type       string // the server's error type, if any
	Code       string // the server's error code, if any
	Message    string // what went wrong, redacted
	Attempts   int    // HTTP attempts made

	cause error // for errors.Is (context.Canceled, context.DeadlineExceeded); its text is not shown
}

// parseFailureQuote is llama.cpp's answer when its chat parser cannot read
// the model's output (common/chat-parser.cpp: "Failed to parse input at
// pos N: " and the input from there on).
var parseFailureQuote = regexp.MustCompile(`(?is)failed to parse input at pos \d+:\s?(.+)$`)

// QuotedOutput is the model output a server's parse-failure message quotes
// (policy.OutputQuoter); "" for any other error.
func (e *Error) QuotedOutput() string {
	if e == nil || e.StatusCode < 500 {
		return ""
	}
	if m := parseFailureQuote.FindStringSubmatch(e.Message); m != nil {
		return m[1]
	}
	return ""
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("openai: ")
	b.WriteString(e.Class.Error())
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Type != "" || e.Code != "" {
		fmt.Fprintf(&b, " (type=%q code=%q)", e.Type, e.Code)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " [after %d attempts]", e.Attempts)
	}
	return b.String()
}

// HTTPStatus is the HTTP status of the last attempt (0 when none arrived),
// for callers that must not import this package to tell a refusal.
func (e *Error) HTTPStatus() int { return e.StatusCode }

// Unwrap exposes the class and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Class, e.cause}
	}
	return []error{e.Class}
}

// apiError is the error a server reported, whatever its dialect:
// OpenAI {"error":{"message","type","code"}}, vLLM/SGLang
// {"object":"error","message","type","code":400}, llama.cpp
// {"error":{"code":400,"message","type"}}, Ollama {"error":"text"},
// FastAPI {"detail": ...}, or no JSON at all.
type apiError struct {
	Message, Type, Code, Param string
}

// maxErrorText bounds how much of a server's error text is kept: proxies
// answer with whole HTML pages.
const maxErrorText = 500

func parseAPIError(body []byte) apiError {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return apiError{Message: clip(string(body))}
	}
	var e apiError
	if s, ok := jsonText(top.Error); ok {
		e.Message = s // Ollama: "error": "text"
	} else if len(top.Error) > 0 && top.Error[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
			Type    json.RawMessage `json:"type"`
			Code    json.RawMessage `json:"code"`
			Param   json.RawMessage `json:"param"`
		}
		if json.Unmarshal(top.Error, &inner) == nil {
			e.Message, _ = jsonText(inner.Message)
			e.Type, _ = jsonText(inner.Type)
			e.Code, _ = jsonText(inner.Code)
			e.Param, _ = jsonText(inner.Param)
		}
	}
	if e.Message == "" {
		e.Message, _ = jsonText(top.Message)
	}
	if e.Type == "" {
		e.Type, _ = jsonText(top.Type)
	}
	if e.Code == "" {
		e.Code, _ = jsonText(top.Code)
	}
	if e.Param == "" {
		e.Param, _ = jsonText(top.Param)
	}
	if e.Message == "" && len(top.Detail) > 0 {
		if s, ok := jsonText(top.Detail); ok {
			e.Message = s
		} else {
			e.Message = string(compactJSON(top.Detail))
		}
	}
	if e.Message == "" && e.Type == "" && e.Code == "" {
		e.Message = string(body)
	}
	e.Message = clip(e.Message)
	return e
}

// jsonText returns a JSON string's value or a number's text.
func jsonText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// clip collapses whitespace and bounds the length of server text.
func clip(s string) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	if r := []rune(s); len(r) > maxErrorText {
		s = string(r[:maxErrorText]) + "…"
	}
	return s
}

// contextPatterns are the lower-case fragments by which servers say the
// conversation does not fit the model's context window.
var contextPatterns = []string{
	"context_length_exceeded",                 // OpenAI code
	"maximum context length",                  // OpenAI, vLLM: "This model's maximum context length is"
	"prompt is too long",                      // Anthropic-compatible gateways
	"exceeds the context window",              // OpenAI Responses-style text
	"is longer than the maximum model length", // vLLM
	"max_model_len",                           // vLLM
	"longer than the model's context length",  // SGLang
	"exceeds the available context size",      // llama.cpp
	"exceed_context_size_error",               // llama.cpp type
	"`inputs` tokens + `max_new_tokens`",      // TGI
	"context length exceeded",
	"context window exceeded",
	// vLLM (current): "You passed 9001 input tokens and requested 512 output
	// tokens. However, the model's context length is only 8192 tokens,
	// resulting in a maximum input length of 7680 tokens. ...
	// (parameter=input_tokens, value=9001)", with param "input_tokens".
	"model's context length is only",
	"maximum input length of",
	"parameter=input_tokens",
	// SGLang: "Requested token count exceeds the model's maximum context
	// length of 8192 tokens. ..." and "Input length (9001 tokens) exceeds the
	// maximum allowed length (8192 tokens)."
	"exceeds the model's maximum context length",
	"exceeds the maximum allowed length",
	"exceeds the maximum allowed input length",
	// OpenAI Responses-style and Ollama-style wordings.
	"your input exceeds the context window",
	"input length exceeds the context length",
}

func isContextLength(e apiError) bool {
	if e.Param == "input_tokens" {
		return true
	}
	text := strings.ToLower(e.Message + "\n" + e.Type + "\n" + e.Code)
	for _, p := range contextPatterns {
		if strings.Contains(text, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

func isQuota(e apiError) bool {
	return e.Code == "insufficient_quota" || e.Type == "insufficient_quota" ||
		strings.Contains(strings.ToLower(e.Message), "exceeded your current quota")
}

// verdict is what to do with one HTTP answer that was not a success.
type verdict struct {
	class     error  // policy class if we give up now
	retry     bool   // another attempt may succeed
	once      bool   // retry at most once (a parse or template failure)
	throttled bool   // the server asked for less load (429)
	loading   bool   // the server is loading the model: wait for readiness
	tokens    bool   // the endpoint wants max_completion_tokens instead of max_tokens
	choice    bool   // the endpoint refuses tool_choice: resend without it
	hint      string // added to the message for the user
}

// refusal is an answer that names a server flag, a capability or a
// parameter the endpoint does not take. Every episode would fail the same
// way, so the run stops with the fix instead of recording model errors.
type refusal struct {
	pattern string // lower-case fragment of the error text
	fix     string
}

// refusals are matched against the error text (any 4xx or 5xx status:
// llama.cpp reports a missing --jinja as a 500).
var refusals = []refusal{
	// vLLM vllm/entrypoints/openai/serving_chat.py: tools with tool_choice
	// "auto" on a server started without a tool parser.
	{"--enable-auto-tool-choice", "start vLLM with --enable-auto-tool-choice --tool-call-parser PARSER (hermes for Qwen2.5/Qwen3 and Hermes, llama3_json for Llama 3.x, mistral for Mistral; see docs/servers.md)"},
	{"--tool-call-parser", "start the server with --tool-call-parser PARSER for the model (see docs/servers.md)"},
	// llama.cpp tools/server/utils.hpp: tools without --jinja.
	{"requires --jinja", "start llama-server with --jinja (and a chat template that supports tools)"},
	{"unsupported param: tool_choice", "start llama-server with --jinja"},
	// Ollama server/images.go: a model whose template has no tools.
	{"does not support tools", "this Ollama model's template has no tool support: pick a model with the tools capability (ollama show MODEL lists it) or use --framework react"},
	{"does not support thinking", "this model does not support thinking: drop the think option"},
	{"no endpoints found that support tool use", "the gateway has no provider for this model that supports tools: pick another model or use --framework react"},
}

// isParseFailure: a server error whose text names a failure to parse the
// model's output or to render the chat template. Retrying the same request
// gives the same failure.
func isParseFailure(e apiError) bool {
	text := strings.ToLower(e.Message + " " + e.Type)
	for _, p := range []string{"template", "jinja", "failed to parse", "parse error", "error parsing", "unable to parse", "could not parse", "jsondecodeerror", "json decode"} {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// isLoading: llama.cpp tools/server/server.cpp answers 503
// {"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}
// until the weights are in memory.
func isLoading(status int, e apiError) bool {
	return status == http.StatusServiceUnavailable && strings.Contains(strings.ToLower(e.Message), "loading model")
}

// unsupportedParam: OpenAI's 400 for a parameter or value a model refuses
// (reasoning models: max_tokens, temperature other than 1, ...).
func unsupportedParam(e apiError) (param string, ok bool) {
	if e.Code != "unsupported_parameter" && e.Code != "unsupported_value" &&
		!strings.Contains(strings.ToLower(e.Message), "unsupported parameter") &&
		!strings.Contains(strings.ToLower(e.Message), "unsupported value") {
		return "", false
	}
	param = e.Param
	if param == "" {
		// "Unsupported parameter: 'max_tokens' is not supported with this model."
		if i := strings.IndexByte(e.Message, '\''); i >= 0 {
			if j := strings.IndexByte(e.Message[i+1:], '\''); j > 0 {
				param = e.Message[i+1 : i+1+j]
			}
		}
	}
	return param, true
}

// paramFix says how to stop sending a parameter the endpoint refuses.
func paramFix(param string) string {
	switch param {
	case "temperature":
		return "the model refuses this temperature: pass --temperature omit (and --judge-temperature omit for the judge), or the value it accepts"
	case "seed":
		return "the endpoint refuses seed"
	case "max_completion_tokens":
		return "the endpoint refuses max_completion_tokens: pass --token-param max_tokens"
	case "max_tokens":
		return "the endpoint refuses max_tokens: pass --token-param max_completion_tokens"
	case "tool_choice":
		// antidrift resends without tool_choice first (with tools, "auto"
		// is the default); this is the advice when that fails too.
		return "the endpoint refuses tool_choice, and the request without it failed too: check that the model supports tool calls on this endpoint (antidrift endpoint check), or use --framework react"
	case "tools":
		return "the endpoint does not take tools: use --framework react"
	}
	return "the endpoint refuses parameter " + strconv.Quote(param)
}

// classify maps a non-2xx answer to a policy error class and says whether
// to retry. Context-length messages win over the status code because some
// servers report them as 413, 422 or even 500, and retrying never helps.
func classify(status int, e apiError) verdict {
	if status >= 400 && status != http.StatusTooManyRequests && isContextLength(e) {
		return verdict{class: policy.ErrContextLength}
	}
	if status >= 400 {
		text := strings.ToLower(e.Message)
		for _, r := range refusals {
			if strings.Contains(text, r.pattern) {
				return verdict{class: policy.ErrFatal, hint: "the endpoint refuses this request whatever the episode; fix: " + r.fix}
			}
		}
	}
	if status >= 400 && status < 500 {
		if p, ok := unsupportedParam(e); ok {
			if p == "max_tokens" {
				return verdict{class: policy.ErrFatal, tokens: true, hint: paramFix(p)}
			}
			if p == "tool_choice" {
				return verdict{class: policy.ErrFatal, choice: true, hint: paramFix(p)}
			}
			return verdict{class: policy.ErrFatal, hint: paramFix(p)}
		}
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return verdict{class: policy.ErrFatal, hint: "authentication failed; check the API key (its value is not shown)"}
	case status == http.StatusPaymentRequired,
		status == http.StatusTooManyRequests && isQuota(e):
		return verdict{class: policy.ErrFatal, hint: "quota exhausted; check the account's plan and billing"}
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		// A wrong base URL or model name fails every episode alike: stop the
		// run rather than record thousands of model errors.
		return verdict{class: policy.ErrFatal, hint: "endpoint or model not found; check the base URL (usually ending in /v1) and the model name"}
	case status == http.StatusTooManyRequests:
		return verdict{class: policy.ErrInfra, retry: true, throttled: true, hint: "rate limited"}
	case isLoading(status, e):
		return verdict{class: policy.ErrInfra, retry: true, loading: true, hint: "the server is still loading the model"}
	case status >= 500 && isParseFailure(e):
		// The server could not parse the model's output or render the
		// template: the model's doing, and the same request fails again.
		return verdict{class: policy.ErrModel, retry: true, once: true, hint: "the server failed to parse the model's output or render the chat template"}
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		// 408 and 409 are transient too (the OpenAI SDKs retry them).
		return verdict{class: policy.ErrInfra, retry: true}
	case status >= 400:
		return verdict{class: policy.ErrModel}
	default:
		// 1xx/3xx that net/http did not resolve: a confused proxy.
		return verdict{class: policy.ErrInfra, retry: true}
	}
}

// redactor removes the API key from text that may have echoed it.
type redactor string

const redacted = "[redacted]"

func (r redactor) apply(s string) string {
	if r == "" {
		return s
	}
	return strings.ReplaceAll(s, string(r), redacted)
}
