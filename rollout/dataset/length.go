package dataset

import (
	"encoding/json"
	"math"
)

// Token-length estimates without a tokenizer. A chat template renders each
// message as its text (content, tool-call arguments, tool schemas) plus a
// few marker tokens for the role and turn boundaries; BPE tokenizers of
// current chat models spend roughly one token per 3–4.5 bytes of such
// mixed prose and JSON. The estimate takes the low end (bytesPerToken 3.5
// over the JSON text, 4 tokens per message, 8 per tool), so that limits
// set from it err on the side of keeping rows whole.
const (
	bytesPerToken   = 3.5
	tokensPerMsg    = 4
	tokensPerTool   = 8
	tokensPerPrompt = 8 // the template's framing: BOS, default system text, generation prompt
)

// EstimateTokens estimates the tokens of rendered messages.
func EstimateTokens(msgs []json.RawMessage) int64 {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return int64(math.Ceil(float64(n)/bytesPerToken)) + int64(tokensPerMsg*len(msgs))
}

// EstimatePromptTokens estimates a prompt's tokens: its messages, the tool
// schemas the template renders into it, and the template's framing.
func EstimatePromptTokens(msgs, tools []json.RawMessage) int64 {
	n := 0
	for _, t := range tools {
		n += len(t)
	}
	return EstimateTokens(msgs) + int64(math.Ceil(float64(n)/bytesPerToken)) + int64(tokensPerTool*len(tools)) + tokensPerPrompt
}
