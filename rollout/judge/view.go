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
	if ids := strippedIDs(steps); ids != nil {
		return ids
	}
	return map[string]bool{}
}

// strippedIDs is StrippedIDs, nil when there are none.
func strippedIDs(steps []trajectory.Step) map[string]bool {
	var ids map[string]bool
	for i := range steps {
		for _, c := range steps[i].Calls {
			if c.Drift || c.Outcome == NotVisible {
				if ids == nil {
					ids = map[string]bool{}
				}
				ids[c.ID] = true
			}
		}
	}
	return ids
}

// driftingIDs returns the ids of the drifting calls (nil when none).
func driftingIDs(steps []trajectory.Step) map[string]bool {
	var ids map[string]bool
	for i := range steps {
		for _, c := range steps[i].Calls {
			if c.Drift {
				if ids == nil {
					ids = map[string]bool{}
				}
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

// View is what both judges read of a record — the one view, so that the
// rule judge and the LLM judge can never see different trajectories:
//
//   - in the react framework, final answers reduced to their text after
//     "Final Answer:" (AnswerView);
//   - an assistant turn that made a drifting call loses its text, which
//     announces or (in react) spells out the drifting action; its other
//     calls stay;
//   - drifting calls, calls the framework did not execute, and the tool
//     messages answering them are removed (Strip), and a turn left with
//     neither text nor calls is dropped.
//
// The final answer is then FinalAnswer of the view.
func View(rec *trajectory.Record) []trajectory.Message {
	msgs := rec.Messages
	if rec.Framework == FrameworkReAct {
		msgs = AnswerView(msgs)
	}
	return ViewOf(msgs, rec.Steps)
}

// ViewOf is View for an episode in progress: msgs already in the
// framework's answer view (AnswerView for react), steps as recorded.
func ViewOf(msgs []trajectory.Message, steps []trajectory.Step) []trajectory.Message {
	drifting := driftingIDs(steps)
	// Turns that made a drifting call: also those whose call was never a
	// structured call (tool-call markup the server left in content and
	// that could not be read), whose text is the drifting action itself.
	var driftTurns map[int]bool
	for i := range steps {
		for _, c := range steps[i].Calls {
			if c.Drift {
				if driftTurns == nil {
					driftTurns = map[int]bool{}
				}
				driftTurns[steps[i].Turn] = true
			}
		}
	}
	cp := make([]trajectory.Message, len(msgs))
	copy(cp, msgs)
	for i, m := range cp {
		// Reasoning is the model's, never evidence of what it did.
		cp[i].Reasoning = ""
		if m.Role != trajectory.RoleAssistant || len(drifting) == 0 && len(driftTurns) == 0 {
			continue
		}
		if driftTurns[i] {
			cp[i].Content = ""
			continue
		}
		for _, tc := range m.ToolCalls {
			if drifting[tc.ID] {
				cp[i].Content = ""
				break
			}
		}
	}
	return stripInto(cp[:0], cp, strippedIDs(steps))
}

// StripRecord is View, under its older name.
func StripRecord(rec *trajectory.Record) []trajectory.Message { return View(rec) }

// FinalAnswer is the answer that answer assertions read: the content of
// the view's last message when it is an assistant turn that calls no tool;
// otherwise "" — an episode that ended on a tool call (a step limit, a
// react Action whose Action Input holds text), a tool result or a format
// hint gave no answer.
func FinalAnswer(view []trajectory.Message) string {
	if len(view) == 0 {
		return ""
	}
	last := view[len(view)-1]
	if last.Role != trajectory.RoleAssistant || len(last.ToolCalls) > 0 {
		return ""
	}
	return last.Content
}

// LastAssistantTurn is the index of the last assistant message, -1 when
// there is none: the turn a match on the final answer is placed at.
func LastAssistantTurn(msgs []trajectory.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == trajectory.RoleAssistant {
			return i
		}
	}
	return -1
}
