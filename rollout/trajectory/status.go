package trajectory

import (
	"fmt"
	"strings"
)

// Status says how an episode ended.
type Status string

// Episode statuses, one list (Statuses). Model errors are data;
// infrastructure errors are kept in the run's errors/ folder, never in its
// records, and retried when a run resumes.
const (
	// StatusCompleted: the model gave a real final answer (text, no call,
	// no tool-call markup, not reasoning only).
	StatusCompleted Status = "completed"
	// StatusMaxSteps: the step or token budget, or the episode's wall time
	// after at least one model answer, ran out.
	StatusMaxSteps Status = "max_steps"
	// StatusContextLength: the server refused the conversation as longer
	// than the model's context.
	StatusContextLength Status = "context_length"
	// StatusModelError: the model or its server answered, but unusably
	// (a 400 on a valid request, a template or parse failure, ...).
	StatusModelError Status = "model_error"
	// StatusInfraError: the episode never got a usable model answer because
	// of the endpoint (unreachable, 5xx, timeouts, empty choices).
	StatusInfraError Status = "infra_error"
	// StatusTruncated: a turn was cut by the token limit or the context
	// (finish_reason "length").
	StatusTruncated Status = "truncated"
	// StatusUnparsedToolCall: the model wrote tool-call markup the server
	// did not parse and antidrift could not recover as a call.
	StatusUnparsedToolCall Status = "unparsed_tool_call"
	// StatusDroppedToolCall: finish_reason "tool_calls" with no call (the
	// server dropped calls it could not parse, or calls to tools not offered).
	StatusDroppedToolCall Status = "dropped_tool_call"
	// StatusEmptyAnswer: an assistant turn with neither content nor calls
	// (reasoning only, or nothing at all); never a final answer.
	StatusEmptyAnswer Status = "empty_answer"
	// StatusContextTruncated: a turn's prompt tokens fell below the previous
	// turn's: the server silently cut the conversation (Ollama's num_ctx).
	StatusContextTruncated Status = "context_truncated"
	// StatusRefused: the model declined (OpenAI's refusal field) or a
	// content or safety filter stopped its answer (finish_reason
	// content_filter and its spellings). The deployed model's behaviour,
	// so scored: a failure unless the judge found the task done.
	StatusRefused Status = "refused"
)

// Statuses lists every status in a fixed order.
var Statuses = []Status{
	StatusCompleted, StatusMaxSteps, StatusContextLength, StatusModelError, StatusInfraError,
	StatusTruncated, StatusUnparsedToolCall, StatusDroppedToolCall, StatusEmptyAnswer, StatusContextTruncated,
	StatusRefused,
}

func (s Status) String() string { return string(s) }

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, k := range Statuses {
		if s == k {
			return true
		}
	}
	return false
}

// ParseStatus reads a status, listing the known ones on error.
func ParseStatus(v string) (Status, error) {
	s := Status(v)
	if !s.Valid() {
		names := make([]string, len(Statuses))
		for i, k := range Statuses {
			names[i] = string(k)
		}
		return "", fmt.Errorf("unknown status %q (known: %s)", v, strings.Join(names, ", "))
	}
	return s, nil
}

// Scored says whether an episode with this status counts in TSR, DR, CSR
// and everything built on them (score, pareto, pairs, rewards, exported
// rewards and pairs). It is the one place this is decided.
//
// Counted: every status where the policy itself produced the behaviour —
// completed, max_steps, context_length, model_error, truncated,
// unparsed_tool_call, dropped_tool_call, empty_answer, refused. They are failures
// unless the judge found the task done, and their drift counts (an
// unparsed or dropped call that the text shows is still an attempt).
//
// Excluded: infra_error (the endpoint never answered: no behaviour to
// score; such records live in errors/ and are retried) and
// context_truncated (the server silently removed part of the conversation,
// usually the task itself, so the episode shows the server's truncation,
// not the policy).
func (s Status) Scored() bool {
	switch s {
	case StatusInfraError, StatusContextTruncated:
		return false
	}
	return true
}

// FinalAnswer says whether the status means the episode ended in a real
// final answer.
func (s Status) FinalAnswer() bool { return s == StatusCompleted }

// HighModelErrorShare is the share of model errors above which a run's
// summary and `score` warn: at that level the metrics describe the
// endpoint's failures more than the policy.
const HighModelErrorShare = 0.10

// ModelErrorWarning is the warning for n model errors among total scored
// records, or "" when their share is not high.
func ModelErrorWarning(n, total int) string {
	if total == 0 || float64(n)/float64(total) <= HighModelErrorShare {
		return ""
	}
	return fmt.Sprintf("%d of %d trajectories (%.0f%%) are model errors: they count as failures in TSR and CSR, so these metrics describe the endpoint's failures as much as the policy; look at the records' error field (antidrift endpoint check shows misconfigurations)", n, total, 100*float64(n)/float64(total))
}

// DroppedCallWarning is the warning for n records that ended in
// dropped_tool_call, or "" when there are none: the server threw away calls
// the model wrote (SGLang drops calls to tools the request did not offer,
// so under gated framing an attempt at a hidden tool is lost), and drift
// the dropped calls held is not counted.
func DroppedCallWarning(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d trajectories ended in dropped_tool_call: the server dropped tool calls the model wrote (SGLang drops calls to tools not offered, hiding attempts at gated tools), so DR is a lower bound and not comparable with runs on a server that keeps such calls (vLLM)", n)
}
