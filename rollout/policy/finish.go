package policy

import "strings"

// Finish reasons as NormalizeFinish returns them. Any other value is one
// no server is known to send, kept lower-cased: it never makes an answer
// final.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
	// FinishError: the server or provider cut the answer by an error
	// (Mistral's API "error", SGLang and vLLM "abort", gateways relaying a
	// provider failure). What was written is half an answer.
	FinishError = "error"
	// FinishContentFilter: a content or safety filter stopped the answer
	// (OpenAI and Azure "content_filter", Gemini "SAFETY" and
	// "RECITATION", Anthropic "refusal", Bedrock "guardrail_intervened").
	FinishContentFilter = "content_filter"
)

// NormalizeFinish makes finish reasons comparable across servers, case and
// spelling aside ("MAX_TOKENS", "LENGTH" and "length" are one). A cut turn
// (length, error, content filter) stays cut whatever it holds, so that it
// is never taken for a finished one. Tool calls then win: servers say
// "stop", "eos" or nothing although they returned calls. It is idempotent.
func NormalizeFinish(reason string, hasCalls bool) string {
	r := strings.ToLower(strings.TrimSpace(reason))
	switch r {
	case "length", "max_tokens", "model_length", "max_output_tokens", "max_completion_tokens":
		return FinishLength
	case "error", "abort", "aborted", "cancelled", "canceled":
		return FinishError
	case "content_filter", "content_filtered", "safety", "recitation", "prohibited_content", "blocklist", "spii",
		"image_safety", "refusal", "guardrail_intervened":
		return FinishContentFilter
	}
	if hasCalls {
		return FinishToolCalls
	}
	switch r {
	case "", "stop", "eos", "eos_token", "stop_sequence", "end_turn", "finish_reason_unspecified":
		return FinishStop
	case "tool_calls", "function_call", "tool_use", "tool_call":
		return FinishToolCalls
	}
	return r
}

// KnownFinish says whether a normalised finish reason is one NormalizeFinish
// knows.
func KnownFinish(r string) bool {
	switch r {
	case FinishStop, FinishLength, FinishToolCalls, FinishError, FinishContentFilter:
		return true
	}
	return false
}
