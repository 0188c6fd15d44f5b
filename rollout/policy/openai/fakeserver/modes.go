package fakeserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Family is a server family whose answers a Mode reproduces.
type Family string

// Server families.
const (
	FamilyOpenAI   Family = "openai"
	FamilyVLLM     Family = "vllm"
	FamilySGLang   Family = "sglang"
	FamilyOllama   Family = "ollama"
	FamilyLlamaCpp Family = "llamacpp"
	// FamilyTGI: Hugging Face text-generation-inference's Messages API.
	// Not in Families: it is emulated for its final-answer pseudo-call only.
	FamilyTGI Family = "tgi"
)

// Families lists the families in a fixed order.
var Families = []Family{FamilyVLLM, FamilySGLang, FamilyOllama, FamilyLlamaCpp, FamilyOpenAI}

// Mode makes the server answer as one server family does, configured well
// or badly. The zero Mode of a family is that server correctly set up for
// tool calling; each field adds one behaviour read from the server's source
// (cited beside the field).
type Mode struct {
	Family Family

	// NoToolParser: the server was started without tool calling.
	//   vLLM (vllm/entrypoints/openai/serving_chat.py): 400 "\"auto\" tool
	//   choice requires --enable-auto-tool-choice and --tool-call-parser to
	//   be set".
	//   SGLang (python/sglang/srt/entrypoints/openai/serving_chat.py, no
	//   --tool-call-parser): calls are not parsed; the model's Hermes-style
	//   markup stays in content with finish_reason "stop".
	//   Ollama (server/images.go): 400 "MODEL does not support tools".
	//   llama.cpp (tools/server/utils.hpp, no --jinja): 500 "tools param
	//   requires --jinja flag".
	NoToolParser bool
	// NoReasoningParser: reasoning arrives inside content as <think>…</think>
	// (vLLM/SGLang without --reasoning-parser, llama.cpp with
	// --reasoning-format none, Ollama without think) instead of in
	// reasoning_content (vLLM, SGLang, llama.cpp) or reasoning (Ollama
	// openai/openai.go).
	NoReasoningParser bool
	// LoneCloseTag: with NoReasoningParser, the opening <think> is in the
	// prompt (DeepSeek-R1 and Qwen3 generation prompts), so content holds
	// "reasoning</think>answer".
	LoneCloseTag bool
	// NumCtx (Ollama server/prompt.go chatPrompt): when the prompt exceeds
	// this many tokens, the oldest messages after the system prompt are
	// dropped silently; prompt_tokens then falls.
	NumCtx int
	// ContextLength is the model's context, reported by /v1/models
	// (max_model_len for vLLM and SGLang, meta.n_ctx_train for llama.cpp);
	// a prompt longer than it is refused with the family's current wording.
	ContextLength int
	// LoadingPolls (llama.cpp tools/server/server.cpp, the server-state
	// middleware): the server answers 503 "Loading model" on every route —
	// completions, /v1/models and /health — until /health has been polled
	// this many times.
	LoadingPolls int
	// Busy: the first Busy chat requests are turned away as the family does
	// when it is full, before any reply is consumed:
	//   Ollama (server/sched.go, OLLAMA_MAX_QUEUE): 503 "server busy,
	//   please try again.  maximum pending requests exceeded";
	//   TGI (router/src/server.rs, OverloadedError) and gateways: 429
	//   "Model is overloaded"; OpenAI: 429 with Retry-After;
	//   SGLang and vLLM behind a load balancer: 503.
	// BusyRetryAfter is the Retry-After header sent with them ("" none).
	Busy           int
	BusyRetryAfter string
	// NotifyError (TGI before 2.4, router/src/infer/tool_grammar.rs and
	// server.rs): tool_choice "auto" is a grammar over the offered tools
	// plus a notify_error function, so a text answer to a request with
	// tools comes back as a call to notify_error holding the text in its
	// "error" argument (arguments as an object, id "0" in every turn,
	// finish_reason "eos_token").
	NotifyError bool
	// RequireCompletionTokens (OpenAI reasoning models): 400
	// unsupported_parameter for max_tokens.
	RequireCompletionTokens bool
	// FixedTemperature (OpenAI reasoning models): 400 unsupported_value for
	// any temperature other than 1; leaving it out is accepted.
	FixedTemperature bool
	// DropUnofferedCalls (SGLang function_call parsers): calls to tools that
	// the request did not offer are dropped, keeping finish_reason
	// "tool_calls" with no call.
	DropUnofferedCalls bool
	// RefuseToolChoice (gateways and models that take tools but not the
	// choice): 400 unsupported_parameter for any tool_choice.
	RefuseToolChoice bool
}

// String names the mode for test names.
func (m Mode) String() string {
	var parts []string
	parts = append(parts, string(m.Family))
	add := func(on bool, s string) {
		if on {
			parts = append(parts, s)
		}
	}
	add(m.NoToolParser, "no-tool-parser")
	add(m.NoReasoningParser, "think-in-content")
	add(m.LoneCloseTag, "lone-close-tag")
	add(m.NumCtx > 0, fmt.Sprintf("num_ctx=%d", m.NumCtx))
	add(m.LoadingPolls > 0, "loading")
	add(m.Busy > 0, fmt.Sprintf("busy=%d", m.Busy))
	add(m.NotifyError, "notify_error")
	add(m.RequireCompletionTokens, "max_completion_tokens")
	add(m.FixedTemperature, "fixed-temperature")
	add(m.DropUnofferedCalls, "drops-unoffered-calls")
	add(m.RefuseToolChoice, "no-tool-choice")
	return strings.Join(parts, "+")
}

// Misconfigured reports whether the mode refuses every tool request.
func (m Mode) Misconfigured() bool {
	return m.NoToolParser && m.Family != FamilySGLang
}

// refuse answers a request the mode refuses outright, before any reply is
// consumed; ok is false when the request goes through.
func (m *Mode) refuse(req *Request, raw map[string]json.RawMessage) (Reply, bool) {
	if m == nil {
		return Reply{}, false
	}
	hasTools := len(req.Tools) > 0
	if m.NoToolParser && hasTools {
		switch m.Family {
		case FamilyVLLM:
			if req.ToolChoice == "auto" || req.ToolChoice == "" {
				return Raw(http.StatusBadRequest, `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}`), true
			}
		case FamilyOllama:
			return Raw(http.StatusBadRequest, fmt.Sprintf(`{"error":{"message":"registry.ollama.ai/library/%s does not support tools","type":"api_error","param":null,"code":null}}`, req.Model)), true
		case FamilyLlamaCpp:
			return Raw(http.StatusInternalServerError, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`), true
		}
	}
	if m.RequireCompletionTokens {
		if _, ok := raw["max_tokens"]; ok {
			return Raw(http.StatusBadRequest, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`), true
		}
	}
	if m.RefuseToolChoice {
		if _, ok := raw["tool_choice"]; ok {
			return Raw(http.StatusBadRequest, `{"error":{"message":"Unsupported parameter: 'tool_choice' is not supported with this model.","type":"invalid_request_error","param":"tool_choice","code":"unsupported_parameter"}}`), true
		}
	}
	if m.FixedTemperature && req.Temperature != nil && *req.Temperature != 1 {
		return Raw(http.StatusBadRequest, fmt.Sprintf(`{"error":{"message":"Unsupported value: 'temperature' does not support %g with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}`, *req.Temperature)), true
	}
	if m.ContextLength > 0 {
		if n := madeUpPrompt(req.Messages); n > m.ContextLength {
			return m.contextError(n), true
		}
	}
	return Reply{}, false
}

// contextError is the family's current context-length refusal.
func (m *Mode) contextError(n int) Reply {
	ctx := m.ContextLength
	switch m.Family {
	case FamilyVLLM:
		// vllm/entrypoints/openai/serving_engine.py (_validate_input).
		return Raw(http.StatusBadRequest, fmt.Sprintf(`{"object":"error","message":"You passed %d input tokens and requested 16 output tokens. However, the model's context length is only %d tokens, resulting in a maximum input length of %d tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value=%d)","type":"BadRequestError","param":"input_tokens","code":400}`, n, ctx, ctx-16, n))
	case FamilySGLang:
		return Raw(http.StatusBadRequest, fmt.Sprintf(`{"object":"error","message":"Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and 0 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.","type":"BadRequestError","param":null,"code":400}`, ctx, n, n))
	case FamilyLlamaCpp:
		return Raw(http.StatusBadRequest, fmt.Sprintf(`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, n, ctx))
	}
	return ContextLengthOpenAI()
}

// truncated applies Ollama's num_ctx: the oldest messages after a leading
// system message are dropped until the prompt (the rendered messages and
// the tools, here about four bytes of the request a token) fits (the last message is
// kept). The reply's usage reports the truncated prompt, as Ollama's does;
// the handler still sees the whole conversation, so that a scripted brain
// keeps answering.
func (m *Mode) truncated(req *Request) []trajectory.Message {
	msgs := req.Messages
	first := 0
	if len(msgs) > 0 && msgs[0].Role == trajectory.RoleSystem {
		first = 1
	}
	over := requestOverhead(req)
	for over+madeUpPrompt(msgs) > m.NumCtx && len(msgs) > first+1 {
		msgs = append(append([]trajectory.Message(nil), msgs[:first]...), msgs[first+1:]...)
	}
	return msgs
}

// dress renders a reply the way the family sends it.
func (m *Mode) dress(req *Request, reply Reply) Reply {
	if m == nil {
		return reply
	}
	if m.Family == FamilySGLang && m.NoToolParser && len(reply.ToolCalls) > 0 && reply.Markup == "" {
		reply.Markup = MarkupHermes
	}
	if m.DropUnofferedCalls && len(reply.ToolCalls) > 0 {
		offered := map[string]bool{}
		for _, t := range req.Tools {
			offered[t.Name] = true
		}
		var kept []Call
		for _, c := range reply.ToolCalls {
			if offered[c.Name] {
				kept = append(kept, c)
			}
		}
		if len(kept) < len(reply.ToolCalls) && reply.FinishReason == "" {
			reply.FinishReason = "tool_calls"
		}
		reply.ToolCalls = kept
	}
	if m.NumCtx > 0 {
		cut := *req
		cut.Messages = m.truncated(req)
		reply.Usage = madeUpUsage(&cut, reply)
		reply.Usage.PromptTokens += requestOverhead(req)
		reply.Usage.TotalTokens = reply.Usage.PromptTokens + reply.Usage.CompletionTokens
	}
	if m.NotifyError && len(req.Tools) > 0 && len(reply.ToolCalls) == 0 && reply.Content != "" {
		text, _ := json.Marshal(reply.Content)
		reply.ToolCalls = []Call{{ID: "0", Name: "notify_error", Arguments: `{"error":` + string(text) + `}`}}
		reply.Content = ""
		reply.Quirks |= ObjectArguments
		if reply.FinishReason == "" {
			reply.FinishReason = "eos_token"
		}
	}
	if m.Family == FamilyOllama {
		// openai/openai.go marshals the arguments map: a call without
		// arguments has a nil map, which goes out as "null".
		for i, c := range reply.ToolCalls {
			if c.Arguments == "" || c.Arguments == "{}" {
				reply.ToolCalls[i].Arguments = "null"
			}
		}
	}
	if reply.Reasoning != "" {
		switch {
		case m.NoReasoningParser && m.LoneCloseTag:
			reply.Content = reply.Reasoning + "\n</think>\n\n" + reply.Content
			reply.Reasoning = ""
		case m.NoReasoningParser:
			reply.Content = "<think>\n" + reply.Reasoning + "\n</think>\n\n" + reply.Content
			reply.Reasoning = ""
		case m.Family == FamilyOllama:
			reply.reasoningField = "reasoning"
		case m.Family == FamilyOpenAI:
			reply.Reasoning = "" // OpenAI keeps reasoning to itself
		default:
			reply.reasoningField = "reasoning_content"
		}
	}
	return reply
}

// Tool-call markup a model writes when the server does not parse its calls.
const (
	MarkupHermes      = "hermes"       // <tool_call>{"name":…,"arguments":…}</tool_call> (Hermes, Qwen2.5, Qwen3)
	MarkupMistral     = "mistral"      // [TOOL_CALLS][{"name":…,"arguments":…}]
	MarkupPhi         = "phi"          // <|tool_call|>[{"name":…,"arguments":…}]<|/tool_call|>
	MarkupFunctionTag = "function_tag" // <function=NAME>{…}</function> (Llama 3.1 custom tools)
	MarkupJSON        = "json"         // a bare {"name":…,"arguments":…} object
	MarkupBroken      = "broken"       // <tool_call>{"name": NAME, "arguments": {unterminated
)

// RenderMarkup writes calls as one of the markups above.
func RenderMarkup(kind string, calls []Call) string {
	obj := func(c Call) string {
		args := c.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		name, _ := json.Marshal(c.Name)
		return fmt.Sprintf(`{"name": %s, "arguments": %s}`, name, args)
	}
	var b strings.Builder
	switch kind {
	case MarkupMistral:
		b.WriteString("[TOOL_CALLS][")
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(obj(c))
		}
		b.WriteString("]")
	case MarkupPhi:
		b.WriteString("<|tool_call|>[")
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(obj(c))
		}
		b.WriteString("]<|/tool_call|>")
	case MarkupFunctionTag:
		for _, c := range calls {
			args := c.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			fmt.Fprintf(&b, "<function=%s>%s</function>", c.Name, args)
		}
	case MarkupJSON:
		if len(calls) > 0 {
			b.WriteString(obj(calls[0]))
		}
	case MarkupBroken:
		for _, c := range calls {
			name, _ := json.Marshal(c.Name)
			fmt.Fprintf(&b, "<tool_call>\n{\"name\": %s, \"arguments\": {\"x\": \n</tool_call>", name)
		}
	default:
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<tool_call>\n" + obj(c) + "\n</tool_call>")
		}
	}
	return b.String()
}

// busyReply is the family's answer to a request it has no room for.
func (m *Mode) busyReply() Reply {
	var r Reply
	switch m.Family {
	case FamilyOllama, FamilySGLang, FamilyVLLM:
		r = Raw(http.StatusServiceUnavailable, `{"error":{"message":"server busy, please try again.  maximum pending requests exceeded","type":"api_error","param":null,"code":null}}`)
	default:
		r = Raw(http.StatusTooManyRequests, `{"error":{"message":"Model is overloaded","type":"overloaded","param":null,"code":null}}`)
	}
	r.RetryAfter = m.BusyRetryAfter
	return r
}

// models answers GET /v1/models as the family does.
func (s *Server) models(w http.ResponseWriter) {
	s.mu.Lock()
	loading := s.loading()
	s.mu.Unlock()
	if loading {
		writeError(w, http.StatusServiceUnavailable, "Loading model", "unavailable_error", "")
		return
	}
	m := s.opts.Mode
	model := s.opts.ModelName
	if model == "" {
		model = "m"
	}
	card := map[string]any{"id": model, "object": "model", "created": 0, "owned_by": string(FamilyOpenAI)}
	if m != nil {
		card["owned_by"] = string(m.Family)
		if m.ContextLength > 0 {
			switch m.Family {
			case FamilyVLLM, FamilySGLang:
				card["max_model_len"] = m.ContextLength
			case FamilyLlamaCpp:
				card["meta"] = map[string]any{"n_ctx_train": m.ContextLength}
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{card}})
}

// health answers GET /health: 503 while loading (llama.cpp), then 200.
func (s *Server) health(w http.ResponseWriter) {
	s.mu.Lock()
	s.healthPolls++
	loading := s.loading()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if loading {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`))
		return
	}
	_, _ = w.Write([]byte(`{"status":"ok"}`))
}

// loading: the caller holds s.mu.
func (s *Server) loading() bool {
	m := s.opts.Mode
	return m != nil && m.LoadingPolls > 0 && s.healthPolls <= m.LoadingPolls
}

// requestOverhead is the prompt a request costs beyond its messages' text
// (tools, roles, JSON), about four bytes a token.
func requestOverhead(req *Request) int {
	return max(len(req.Raw)/4-madeUpPrompt(req.Messages), 0)
}

// showModel answers Ollama's POST /api/show with the Modelfile parameters,
// num_ctx among them when the mode sets it (server/routes.go).
func (s *Server) showModel(w http.ResponseWriter) {
	params := "stop                           \"<|im_end|>\""
	if m := s.opts.Mode; m != nil && m.NumCtx > 0 {
		params = fmt.Sprintf("num_ctx                        %d\n%s", m.NumCtx, params)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"parameters": params, "model_info": map[string]any{"general.architecture": "qwen2", "qwen2.context_length": 32768}})
}

func madeUpPrompt(msgs []trajectory.Message) int {
	n := 0
	for _, m := range msgs {
		n += 4 + len(m.Content)/4
		for _, c := range m.ToolCalls {
			n += len(c.Function.Arguments) / 4
		}
	}
	return n
}
