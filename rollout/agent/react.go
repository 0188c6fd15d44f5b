package agent

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RunReAct is the "react" framework, for models without native tool
// calling: the tools are described in the system prompt
// (protocol.ReActSystem), no tools are sent, and the model answers in text,
// "Thought / Action / Action Input" to use a tool or "Thought / Final
// Answer" to finish, read by a tolerant parser (protocol.ParseReAct).
//
// How the record looks. The recorded conversation stays a valid OpenAI
// tool-calling conversation, so that drift labels, the judge, pairs and
// exports treat every framework alike:
//
//   - an action is an assistant message holding the model's text exactly as
//     written (content) and one synthesized tool call (a deterministic id,
//     the tool, the Action Input as arguments), answered by exactly one tool
//     message with the result;
//   - a final answer is an assistant message with the model's text and no
//     call;
//   - a malformed answer is an assistant message with the text and no call,
//     followed by a user message with a format hint (protocol.FormatHint),
//     counted in Result.FormatErrors and marked on its step.
//
// What the model saw is a pure function of the record, protocol.View: each
// tool message is sent as the user message "Observation: <result>", each
// action's text is cut after its Action Input, and no tool calls or tools
// are sent. The final answer's text after "Final Answer:" is what the rule
// judge's answer assertions read.
func RunReAct(ctx context.Context, pol policy.Policy, ep Episode, lim Limits) (Result, error) {
	r, cancel := begin(ctx, pol, ep, lim)
	defer cancel()
	sc := ep.Scenario
	res := &r.res
	res.Messages = append(res.Messages,
		trajectory.Message{Role: trajectory.RoleSystem, Content: protocol.ReActSystem(sc.S.System, r.pr.tools)},
		trajectory.Message{Role: trajectory.RoleUser, Content: sc.userPrompt()})
	visible := r.pr.names
	for _, t := range r.pr.tools {
		res.Tools = append(res.Tools, sc.wire[t.Name])
	}
	res.Status = trajectory.StatusMaxSteps
	for step := 0; step < r.lim.maxSteps(); step++ {
		resp, ok, fatal := r.ask(r.request(protocol.View(res.Messages), nil))
		if fatal != nil {
			return *res, fatal
		}
		if !ok {
			break
		}
		turn := len(res.Messages)
		st := trajectory.Step{Turn: turn, Visible: visible}
		// Reasoning is split off first: a ReAct action is read from the
		// answer only, never from the model's thinking.
		msg, end := r.review(resp, turn, &st, false)
		final, hint := false, ""
		if len(msg.ToolCalls) == 0 && end == "" { // a server may parse native calls even without tools: they are kept
			switch p := protocol.ParseReAct(msg.Content); p.Kind {
			case protocol.Final:
				final = true
			case protocol.Action:
				fc := trajectory.FunctionCall{Name: p.Tool, Arguments: p.Input, Parsed: p.Args, ArgsError: p.ArgsError}
				msg.ToolCalls = []trajectory.ToolCall{{ID: reactCallID(r.seed, turn), Type: "function", Function: fc}}
			default:
				// Native call markup instead of the ReAct format: recovered
				// like the native loop does, so the call is never lost.
				if end = r.recover(&msg, turn, &st); end == "" && len(msg.ToolCalls) == 0 {
					hint = protocol.FormatHint(p.Problem, visible)
				}
			}
		}
		res.Messages = append(res.Messages, msg)
		t1 := time.Now()
		for _, tc := range msg.ToolCalls {
			note, answer := r.execute(tc, turn, nil)
			st.Calls = append(st.Calls, note)
			res.Messages = append(res.Messages, answer)
		}
		res.ToolTime += time.Since(t1)
		if hint != "" {
			st.FormatError = true
			res.FormatErrors++
			res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: hint})
		}
		res.Steps = append(res.Steps, st)
		if end != "" {
			res.Status = end
			if end == trajectory.StatusTruncated {
				res.Error = "the turn was cut by the token limit or the context (finish_reason length)"
			}
			break
		}
		if final {
			res.Status = trajectory.StatusCompleted
			break
		}
		if r.overTokens() {
			break
		}
	}
	r.settle()
	r.judge(judge.AnswerView(res.Messages))
	return *res, nil
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// reactCallID is the deterministic id of the call synthesized for the
// action at message index turn: nine alphanumeric characters, as the
// strictest chat templates want.
func reactCallID(seed int64, turn int) string {
	var buf [17]byte
	buf[0] = 'R'
	binary.BigEndian.PutUint64(buf[1:], uint64(seed))
	binary.BigEndian.PutUint64(buf[9:], uint64(turn))
	sum := sha256.Sum256(buf[:])
	out := make([]byte, 9)
	for i := range out {
		out[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return string(out)
}
