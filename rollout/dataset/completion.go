package dataset

import (
	"encoding/json"
	"fmt"
	"strings"

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

// Completions lists every layout.
var Completions = []Completion{CompletionTurn, CompletionRest, CompletionModelTurns}

func (c Completion) String() string { return string(c) }

// ParseCompletion reads a --completion value; "" is def (CompletionTurn for
// the KTO and rewards tables, CompletionRest for trajectory pairs).
func ParseCompletion(s string, def Completion) (Completion, error) {
	if s == "" {
		return def, nil
	}
	for _, c := range Completions {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("completion %q: want turn, rest or model-turns", s)
}

// ModelWritten reports whether every token of the layout is model-written.
func (c Completion) ModelWritten() bool { return c != CompletionRest }

// Warning is what a card must say about the layout, or "" when nothing.
// model-turns puts later calls in a completion without the tool results
// they were written after: a model trained on it learns to produce ids it
// has not seen.
func (c Completion) Warning() string {
	if c != CompletionModelTurns {
		return ""
	}
	return "**Warning:** `--completion model-turns` puts the assistant turns one after another with the tool results between them removed: a later call's arguments (an order id, a customer id) often come from a result the row omits, and back-to-back assistant turns never occur at inference. Trainers that raise the likelihood of a completion (DPO chosen, KTO desirable) then teach the model to produce ids it has not seen. Prefer the default layout."
}

// Describe says in a sentence what a completion of the layout holds, for
// dataset cards.
func (c Completion) Describe() string {
	switch c {
	case CompletionTurn:
		return "one assistant turn per row: the prompt is the conversation up to that turn, tool results included, and the completion is that turn alone, so every completion token is model-written and every call was written after the tool results in its prompt"
	case CompletionRest:
		return "everything after the prompt, tool results included: trainers that put every completion token in the loss (DPO, KTO) train on the tool output too"
	}
	return "the assistant turns after the prompt, tool results left out: every completion token is model-written (a later turn follows the earlier one without the tool output the model read in between)"
}

// RenderCompletion renders a completion (messages after a prompt, starting
// at a turn boundary) in the layout o.Completion, as the model saw it
// (native or the framework's text view, as Render). CompletionTurn cuts
// rows rather than completions (Turns); here it renders as rest.
func RenderCompletion(rec *trajectory.Record, ms []trajectory.Message, o RenderOptions) []json.RawMessage {
	if v := textView(rec.Framework); v != nil {
		ms = v(ms)
	}
	if o.Completion == CompletionModelTurns {
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

// ToolsInSystem moves a row's tool schemas into its system message, for
// trainers that pass no tools to the chat template (OpenRLHF): the system
// message (one is inserted first when the messages have none) gets a
// block listing each schema, the bytes the request sent, one per line,
// and the tools list comes back empty. Rows of a text-protocol framework
// (no tools; the descriptions are already in the prompt) are returned as
// they are.
func ToolsInSystem(msgs, tools []json.RawMessage) ([]json.RawMessage, []json.RawMessage) {
	if len(tools) == 0 {
		return msgs, tools
	}
	var b strings.Builder
	b.WriteString("You can call these tools (OpenAI function schemas, one JSON object per line):\n<tools>\n")
	for _, t := range tools {
		b.Write(t)
		b.WriteByte('\n')
	}
	b.WriteString("</tools>")
	out := make([]json.RawMessage, 0, len(msgs)+1)
	var first map[string]json.RawMessage
	if len(msgs) > 0 && json.Unmarshal(msgs[0], &first) == nil && string(first["role"]) == `"system"` {
		var w wireMessage
		if json.Unmarshal(msgs[0], &w) == nil {
			if w.Content != "" {
				w.Content += "\n\n"
			}
			w.Content += b.String()
			m, _ := json.Marshal(w)
			out = append(out, m)
			return append(out, msgs[1:]...), []json.RawMessage{}
		}
	}
	m, _ := json.Marshal(wireMessage{Role: trajectory.RoleSystem, Content: b.String()})
	out = append(out, m)
	return append(out, msgs...), []json.RawMessage{}
}
