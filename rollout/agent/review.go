package agent

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Outcome of an unparsed call: markup the model wrote that could not be
// read as a call. It was never executed; the drift detector still saw it.
const outcomeUnparsed = "unparsed"

// review makes one model answer fit to record, whatever the framework:
//
//   - reasoning is kept apart: <think> blocks in content (closed, a lone
//     closing tag, an unclosed block) move to Message.Reasoning, next to the
//     server's reasoning_content / reasoning field;
//   - argument repairs the client made are counted;
//   - with markup, tool-call markup left in content (the server did not
//     parse the calls) is recovered as calls, marked Recovered; markup that
//     cannot be read ends the episode as unparsed_tool_call, its visible
//     calls noted on the step and checked for drift;
//   - the turn's finish_reason and usage go on the step, and a prompt that
//     shrank since the previous turn marks the conversation as cut by the
//     server.
//
// end is the status that ends the episode after this turn ("" to go on, as
// the framework decides).
func (r *run) review(resp policy.Response, turn int, st *trajectory.Step, markup bool) (msg trajectory.Message, end trajectory.Status) {
	raw := strings.ToLower(strings.TrimSpace(resp.FinishReason))
	finish := policy.NormalizeFinish(resp.FinishReason, len(resp.Message.ToolCalls) > 0)
	resp.FinishReason = finish
	msg = r.tidy(resp, turn, st)
	switch {
	case finish == policy.FinishError:
		// Half an answer or half a call, cut by a server error (the OpenAI
		// client already asked again once): never run, never final.
		r.res.Error = `finish_reason "error": the answer was cut by a server or provider error`
		msg.ToolCalls = nil
		return msg, trajectory.StatusModelError
	case finish == policy.FinishContentFilter:
		r.res.Error = "a content or safety filter stopped the answer (finish_reason " + raw + ")"
		msg.ToolCalls = nil
		return msg, trajectory.StatusRefused
	case resp.Refusal != "" && len(msg.ToolCalls) == 0:
		r.res.Error = "the model refused: " + clipText(resp.Refusal, 200)
		return msg, trajectory.StatusRefused
	}
	if markup && len(msg.ToolCalls) == 0 {
		if end = r.recover(&msg, turn, st); end != "" {
			if end == trajectory.StatusUnparsedToolCall && finish == policy.FinishLength {
				// A call cut by the token limit: the limit, not the
				// model's markup, made it unreadable.
				r.res.Error = "a tool call was cut by the token limit (finish_reason length); " + r.res.Error
				end = trajectory.StatusTruncated
			}
			return msg, end
		}
	}
	switch {
	case finish == policy.FinishLength:
		end = trajectory.StatusTruncated
	case !policy.KnownFinish(finish) && len(msg.ToolCalls) == 0:
		r.res.Error = fmt.Sprintf("finish_reason %q is not one antidrift knows to end a finished answer: the turn is not taken as a final answer", finish)
		end = trajectory.StatusModelError
	}
	return msg, end
}

// clipText shortens s to at most n bytes (on a rune boundary) for an
// error message.
func clipText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// tidy splits reasoning off, counts argument repairs and notes the turn's
// finish_reason and usage on its step.
func (r *run) tidy(resp policy.Response, turn int, st *trajectory.Step) trajectory.Message {
	msg := resp.Message
	msg.Role = trajectory.RoleAssistant
	if answer, why := policy.SplitReasoning(msg.Content); why != "" || answer != msg.Content {
		if why != "" {
			r.res.Repairs.ReasoningSplit++
			msg.Reasoning = strings.TrimSpace(strings.Join(nonEmpty(msg.Reasoning, why), "\n\n"))
		}
		msg.Content = answer
	}
	r.uniqueIDs(&msg, turn)
	for _, tc := range msg.ToolCalls {
		switch tc.Function.Repair {
		case trajectory.RepairEmpty:
			r.res.Repairs.EmptyArguments++
		case trajectory.RepairNull:
			r.res.Repairs.NullArguments++
		case trajectory.RepairDoubleEncoded:
			r.res.Repairs.DoubleEncoded++
		}
	}
	if resp.FinalAnswerCall != "" {
		r.res.Repairs.FinalAnswerCalls++
	}
	if resp.ContextCut != "" && r.cut == "" {
		r.cut = fmt.Sprintf("at message %d: %s", turn, resp.ContextCut)
	}
	st.FinishReason = resp.FinishReason
	if resp.Usage != (trajectory.Usage{}) {
		st.Usage = r.keepUsage(resp.Usage)
		if p := resp.Usage.PromptTokens; p > 0 {
			if r.prevPrompt > 0 && p < r.prevPrompt && r.cut == "" {
				r.cut = fmt.Sprintf("prompt tokens fell from %d to %d at message %d: the server dropped part of the conversation (Ollama does this when num_ctx is too small: raise num_ctx)", r.prevPrompt, p, turn)
			}
			r.prevPrompt = p
		}
	}
	return msg
}

// recover reads tool-call markup left in an answer without calls: calls
// that parse become the message's calls (marked Recovered, the markup taken
// out of content); markup that does not ends the episode as
// unparsed_tool_call, with the calls it shows noted for the drift detector.
func (r *run) recover(msg *trajectory.Message, turn int, st *trajectory.Step) trajectory.Status {
	mk := protocol.FindMarkup(msg.Content, func(name string) bool { return r.sc.S.Tool(name) != nil })
	if !mk.Found() {
		return ""
	}
	if mk.Broken {
		r.noteUnparsed(mk, turn, st)
		return trajectory.StatusUnparsedToolCall
	}
	msg.Content = mk.Rest
	for i, c := range mk.Calls {
		msg.ToolCalls = append(msg.ToolCalls, trajectory.ToolCall{
			ID: recoveredCallID(r.seed, turn, i), Type: "function", Recovered: mk.Format,
			Function: trajectory.FunctionCall{Name: c.Name, Arguments: string(c.Args), Parsed: c.Args},
		})
	}
	r.res.Repairs.RecoveredCalls += len(mk.Calls)
	return ""
}

// noteUnparsed records the calls that broken markup shows, for the drift
// detector: a call whose name can be read is an attempt, even unexecuted.
func (r *run) noteUnparsed(mk protocol.Markup, turn int, st *trajectory.Step) {
	for _, c := range mk.Calls {
		var args map[string]any
		if len(c.Args) > 0 {
			args, _ = scenario.ParseArgs(c.Args)
		}
		ms := r.det.Check(drift.Call{Index: r.callIndex, Turn: turn, Name: c.Name, Args: args})
		r.res.Matches = append(r.res.Matches, ms...)
		st.Calls = append(st.Calls, trajectory.CallNote{Call: r.callIndex, Tool: c.Name, Outcome: outcomeUnparsed, Drift: len(ms) > 0})
		r.callIndex++
	}
	r.res.Error = fmt.Sprintf("the model wrote %s tool-call markup that the server did not parse and that could not be read as a call", mk.Format)
}

// quotedCalls reads the tool-call markup a server quotes when it could not
// parse the model's output (policy.QuotedOutput: llama.cpp's 500 "Failed
// to parse input at pos N: …"). The model wrote those calls: the quoted
// text is recorded as its turn, the calls it shows go through the drift
// detector as unparsed attempts (never run), and the episode ends as
// unparsed_tool_call, as when a server returns such markup in content.
func (r *run) quotedCalls(res *Result, visible []string) {
	if res.Status != trajectory.StatusModelError {
		return
	}
	quoted := policy.QuotedOutput(res.Cause)
	if quoted == "" {
		return
	}
	mk := protocol.FindMarkup(quoted, func(name string) bool { return r.sc.S.Tool(name) != nil })
	if !mk.Found() || len(mk.Calls) == 0 {
		return
	}
	serverErr := res.Error
	turn := len(res.Messages)
	res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleAssistant, Content: quoted})
	st := trajectory.Step{Turn: turn, Visible: visible}
	r.noteUnparsed(mk, turn, &st)
	res.Steps = append(res.Steps, st)
	res.Status = trajectory.StatusUnparsedToolCall
	res.Error = fmt.Sprintf("the server failed to parse the model's %s tool-call markup (%s); the calls it quoted were checked for drift and never run", mk.Format, clipText(serverErr, 200))
}

// finalStatus is the status of an answer without calls: a real final answer
// only when it has content and the server did not say it made calls.
func finalStatus(msg trajectory.Message, finish string) (trajectory.Status, string) {
	switch {
	case finish == "tool_calls":
		return trajectory.StatusDroppedToolCall, "finish_reason was tool_calls but the answer holds no call: the server dropped calls it could not parse or that named tools not offered (SGLang does), so drift those calls held is not counted: DR is a lower bound"
	case strings.TrimSpace(msg.Content) == "":
		if msg.Reasoning != "" {
			return trajectory.StatusEmptyAnswer, "the answer holds reasoning only: no content and no call"
		}
		return trajectory.StatusEmptyAnswer, "the answer holds neither content nor a call"
	}
	return trajectory.StatusCompleted, ""
}

// settle applies what the whole episode showed once it has ended: a
// conversation the server cut silently is not the policy's behaviour.
func (r *run) settle() {
	if r.cut != "" && r.res.Status != trajectory.StatusInfraError {
		r.res.Status, r.res.Error = trajectory.StatusContextTruncated, r.cut
	}
}

// uniqueIDs gives a call whose id is empty or already taken in the
// episode an id of the episode's own (deterministic), keeping the policy's
// id as ServerID: the judge's strip and every view key on call ids, so two
// calls sharing one would be stripped or kept together. The OpenAI client
// already assigns unique ids; this covers every other policy.
func (r *run) uniqueIDs(msg *trajectory.Message, turn int) {
	if len(msg.ToolCalls) == 0 {
		return
	}
	used := map[string]bool{}
	for _, m := range r.res.Messages {
		for _, tc := range m.ToolCalls {
			used[tc.ID] = true
		}
	}
	for i := range msg.ToolCalls {
		tc := &msg.ToolCalls[i]
		for salt := 0; tc.ID == "" || used[tc.ID]; salt++ {
			if tc.ServerID == "" {
				tc.ServerID = tc.ID
			}
			tc.ID = episodeCallID(r.seed, turn, i, salt)
		}
		used[tc.ID] = true
	}
}

// episodeCallID is the deterministic id given to a call whose own id was
// missing or taken.
func episodeCallID(seed int64, turn, index, salt int) string {
	var buf [33]byte
	buf[0] = 'U'
	binary.BigEndian.PutUint64(buf[1:], uint64(seed))
	binary.BigEndian.PutUint64(buf[9:], uint64(turn))
	binary.BigEndian.PutUint64(buf[17:], uint64(index))
	binary.BigEndian.PutUint64(buf[25:], uint64(salt))
	sum := sha256.Sum256(buf[:])
	out := make([]byte, 9)
	for i := range out {
		out[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return string(out)
}

// recoveredCallID is the deterministic id of a call recovered from markup.
func recoveredCallID(seed int64, turn, index int) string {
	var buf [25]byte
	buf[0] = 'M'
	binary.BigEndian.PutUint64(buf[1:], uint64(seed))
	binary.BigEndian.PutUint64(buf[9:], uint64(turn))
	binary.BigEndian.PutUint64(buf[17:], uint64(index))
	sum := sha256.Sum256(buf[:])
	out := make([]byte, 9)
	for i := range out {
		out[i] = idAlphabet[int(sum[i])%len(idAlphabet)]
	}
	return string(out)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
