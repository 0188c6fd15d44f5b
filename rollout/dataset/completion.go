package dataset

import (
	"encoding/json"
	"fmt"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Completion is what a multi-turn completion column holds (KTO, rewards,
// trajectory pairs, step pairs continued to the end). DPO and KTO put every
// completion token in their loss, so the choice decides whether the policy
// is trained on text the environment wrote.
type Completion string

const (
	// CompletionModelTurns keeps only the messages the model wrote: the
	// assistant turns after the prompt, tool results (for text-protocol
	// frameworks the Observation turns) left out. Every completion token
	// is model-written; a later turn then follows the earlier one without
	// the tool output the model read in between.
	CompletionModelTurns Completion = "model-turns"
	// CompletionRest is everything after the prompt, tool results
	// included: the conversation as it happened, the environment's text in
	// the loss.
	CompletionRest Completion = "rest"
)

// Completions lists every layout, the default first.
var Completions = []Completion{CompletionModelTurns, CompletionRest}

func (c Completion) String() string { return string(c) }

// ParseCompletion reads a --completion value ("" is the default,
// model-turns).
func ParseCompletion(s string) (Completion, error) {
	if s == "" {
		return CompletionModelTurns, nil
	}
	for _, c := range Completions {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("completion %q: want model-turns or rest", s)
}

// ModelWritten reports whether every token of the layout is model-written.
func (c Completion) ModelWritten() bool { return c != CompletionRest }

// Describe says in a sentence what a completion of the layout holds, for
// dataset cards.
func (c Completion) Describe() string {
	switch c {
	case CompletionRest:
		return "everything after the prompt, tool results included: trainers that put every completion token in the loss (DPO, KTO) train on the tool output too"
	}
	return "the assistant turns after the prompt, tool results left out: every completion token is model-written (a later turn follows the earlier one without the tool output the model read in between)"
}

// RenderCompletion renders a completion (messages after a prompt, starting
// at a turn boundary) in the layout o.Completion, as the model saw it
// (native or the framework's text view, as Render).
func RenderCompletion(rec *trajectory.Record, ms []trajectory.Message, o RenderOptions) []json.RawMessage {
	if v := textView(rec.Framework); v != nil {
		ms = v(ms)
	}
	if o.Completion != CompletionRest {
		kept := make([]trajectory.Message, 0, len(ms))
		for _, m := range ms {
			if m.Role == trajectory.RoleAssistant {
				kept = append(kept, m)
			}
		}
		ms = kept
	}
	return MessagesWith(ms, o)
}
