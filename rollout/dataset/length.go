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

// EstimateTextTokens estimates the tokens of text a chat template rendered
// (its markers included as text), at the same bytes per token as
// EstimateTokens, with each run of whitespace counted as one byte: BPE
// vocabularies hold tokens for runs of spaces and newlines, so a
// template's indented JSON (Llama-3.x's tool schemas) costs about what
// its compact form does, plus a token per line.
func EstimateTextTokens(s string) int64 {
	n, ws := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		isWS := c == ' ' || c == '\n' || c == '\t' || c == '\r'
		if !isWS || !ws {
			n++
		}
		ws = isWS
	}
	return int64(math.Ceil(float64(n) / bytesPerToken))
}
