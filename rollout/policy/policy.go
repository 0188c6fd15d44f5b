// Package policy defines what the rollout engine asks of a model: given the
// conversation so far and the visible tools, produce the next assistant
// message. Backends live in sub-packages (openai for any OpenAI-compatible
// server, sim for the simulated policies).
package policy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Tool is an OpenAI function tool as sent to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one chat completion request.
type Request struct {
	Messages    []trajectory.Message
	Tools       []Tool
	ToolChoice  string // "auto", "none", "required" or "" (not sent)
	Temperature float64
	// OmitTemperature leaves temperature out of the request (reasoning
	// models that accept only their default).
	OmitTemperature bool
	Seed            int64
	MaxTokens       int // 0: not sent
}

// Response is the model's next assistant message.
type Response struct {
	Message      trajectory.Message // Role is always assistant; tool-call ids are never empty
	FinishReason string
	Usage        trajectory.Usage
	// FinalAnswerCall names the pseudo-call a server wrapped a text answer
	// in (TGI's notify_error), read back as the answer; "" when none.
	FinalAnswerCall string
	// ContextCut says why the server is known to have cut the conversation
	// it was sent (Ollama's num_ctx); "" when it is not.
	ContextCut string
	// Refusal is the model's refusal when the server says it declined
	// (OpenAI's "refusal" field); the message's content then holds it too.
	Refusal string
}

// Policy produces assistant turns. Implementations must be safe for
// concurrent use by many episodes.
type Policy interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Error classes the engine acts on. Backends wrap these with errors.Join or
// fmt.Errorf("...: %w", ErrX) so that errors.Is tells them apart.
var (
	// ErrContextLength: the conversation no longer fits the model's context.
	// The episode ends with status context_length; it is data, not a crash.
	ErrContextLength = errors.New("context length exceeded")
	// ErrFatal: retrying cannot help and every other episode would fail the
	// same way (bad API key, exhausted quota). The run stops.
	ErrFatal = errors.New("fatal endpoint error")
	// ErrModel: the model answered but the answer is unusable (for example a
	// 400 on a request the protocol allows). Recorded as status model_error.
	ErrModel = errors.New("model error")
	// ErrInfra: the endpoint could not be reached or kept failing after the
	// bounded retries (5xx, timeouts, connection errors). Recorded as
	// status infra_error and retried when the run resumes.
	ErrInfra = errors.New("infrastructure error")
)

// OutputQuoter is implemented by errors whose server message quotes the
// model output the server could not parse (llama.cpp answers 500 "Failed to
// parse input at pos N: <the rest of the output>"): the calls it shows are
// attempts the drift detector must see, though none was run.
type OutputQuoter interface {
	QuotedOutput() string
}

// QuotedOutput is the model output an error quotes ("" when none).
func QuotedOutput(err error) string {
	var q OutputQuoter
	if errors.As(err, &q) {
		return q.QuotedOutput()
	}
	return ""
}

// HTTPStatuser is implemented by errors that carry the HTTP status of the
// endpoint's answer (openai.Error).
type HTTPStatuser interface{ HTTPStatus() int }
