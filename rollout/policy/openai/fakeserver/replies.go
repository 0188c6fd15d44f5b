package fakeserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
)

// Text answers with assistant text and finish_reason "stop".
func Text(content string) Reply { return Reply{Content: content} }

// ToolCalls answers with tool calls and finish_reason "tool_calls".
func ToolCalls(calls ...Call) Reply { return Reply{ToolCalls: calls} }

// With returns r with quirks added.
func (r Reply) With(q Quirk) Reply {
	r.Quirks |= q
	return r
}

// Delayed returns r answered after d.
func (r Reply) Delayed(d time.Duration) Reply {
	r.Delay = d
	return r
}

// PolicyHandler answers every request as pol does (a simulated policy, for
// a server of some family around it): its message, finish reason and
// usage; an error of pol becomes a 400.
func PolicyHandler(pol policy.Policy) func(*Request) Reply {
	return func(req *Request) Reply {
		preq := policy.Request{Messages: req.Messages, Tools: req.Tools}
		if req.Seed != nil {
			preq.Seed = *req.Seed
		}
		resp, err := pol.Complete(context.Background(), preq)
		if err != nil {
			return Error(400, err.Error(), "invalid_request_error", "")
		}
		reply := Reply{Content: resp.Message.Content, FinishReason: resp.FinishReason, Usage: &resp.Usage}
		for _, tc := range resp.Message.ToolCalls {
			reply.ToolCalls = append(reply.ToolCalls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		return reply
	}
}

// Error answers with an OpenAI-style error body.
func Error(status int, message, typ, code string) Reply {
	return Reply{Status: status, ErrMessage: message, ErrType: typ, ErrCode: code}
}

// Raw answers with a verbatim body (any dialect, or garbage).
func Raw(status int, body string) Reply { return Reply{Status: status, Body: body} }

// ContextLengthOpenAI is OpenAI's context-length 400.
func ContextLengthOpenAI() Reply {
	return Error(http.StatusBadRequest,
		"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. Please reduce the length of the messages.",
		"invalid_request_error", "context_length_exceeded")
}

// ContextLengthVLLM is vLLM's context-length 400.
func ContextLengthVLLM() Reply {
	return Raw(http.StatusBadRequest,
		`{"object":"error","message":"The prompt (total length 9001) is longer than the maximum model length of 8192. Make sure that `+"`max_model_len`"+` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}`)
}

// ContextLengthLlamaCpp is llama.cpp server's context-length 400.
func ContextLengthLlamaCpp() Reply {
	return Raw(http.StatusBadRequest,
		`{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9001,"n_ctx":8192}}`)
}

// ContextLengthSGLang is SGLang's context-length 400.
func ContextLengthSGLang() Reply {
	return Raw(http.StatusBadRequest,
		`{"object":"error","message":"The input (9001 tokens) is longer than the model's context length (8192 tokens).","type":"BadRequestError","param":null,"code":400}`)
}

// Unauthorized is a 401 as OpenAI sends it for a bad key.
func Unauthorized() Reply {
	return Error(http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
}

// InsufficientQuota is OpenAI's 429 for an exhausted quota: not retryable.
func InsufficientQuota() Reply {
	return Error(http.StatusTooManyRequests,
		"You exceeded your current quota, please check your plan and billing details.",
		"insufficient_quota", "insufficient_quota")
}

// RateLimited is a retryable 429; retryAfter ("" for none) is sent as the
// Retry-After header (seconds or an HTTP date).
func RateLimited(retryAfter string) Reply {
	r := Error(http.StatusTooManyRequests, "Rate limit reached for requests", "requests", "rate_limit_exceeded")
	r.RetryAfter = retryAfter
	return r
}

// ServerError is a 5xx with a generic message.
func ServerError(status int) Reply {
	return Error(status, "The server had an error while processing your request ("+strconv.Itoa(status)+").", "server_error", "")
}

// Hang never answers.
func Hang() Reply { return Reply{Hang: true} }

// Reset drops the connection.
func Reset() Reply { return Reply{Reset: true} }
