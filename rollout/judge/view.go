package judge

import (
	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// NotVisible is the outcome of a call to a tool the framework did not show;
// such a call was never executed.
const NotVisible = "not_visible"

// StrippedIDs returns the ids of the calls a judge must not see: drifting
// calls (success never credits drift) and calls the framework did not
// execute (the rule judge replays calls, and must not run a refused one).
func StrippedIDs(steps []trajectory.Step) map[string]bool {
	ids := map[string]bool{}
	for _, st := range steps {
		for _, c := range st.Calls {
			if c.Drift || c.Outcome == NotVisible {
				ids[c.ID] = true
			}
		}
	}
	return ids
}

// AnswerView reduces ReAct final answers to their text after
// "Final Answer:", so that answer assertions check the answer, not the
// model's reasoning. Other frameworks' messages are read as they are.
func AnswerView(msgs []trajectory.Message) []trajectory.Message {
	out := make([]trajectory.Message, len(msgs))
	copy(out, msgs)
	for i, m := range out {
		if m.Role != trajectory.RoleAssistant || len(m.ToolCalls) > 0 {
			continue
		}
		if p := protocol.ParseReAct(m.Content); p.Kind == protocol.Final {
			out[i].Content = p.Answer
		}
	}
	return out
}

// FrameworkReAct is the framework whose final answers AnswerView reduces.
const FrameworkReAct = "react"

// StripRecord returns a record's messages as the rule judge reads them: the
// framework's answer view, without the calls StrippedIDs names and their
// results. A rollout and a later `antidrift judge --judge rule` read the
// same view, so they agree.
func StripRecord(rec *trajectory.Record) []trajectory.Message {
	msgs := rec.Messages
	if rec.Framework == FrameworkReAct {
		msgs = AnswerView(msgs)
	}
	return Strip(msgs, StrippedIDs(rec.Steps))
}
