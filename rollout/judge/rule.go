// Package judge decides task success on a trajectory with its drift steps
// stripped, so that success never credits drift.
package judge

import (
	"fmt"
	"strings"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Strip removes drifting tool calls, and the tool messages answering them,
// from a conversation. An assistant message left with neither content nor
// tool calls is dropped too. drifting holds tool-call ids.
func Strip(msgs []trajectory.Message, drifting map[string]bool) []trajectory.Message {
	return stripInto(make([]trajectory.Message, 0, len(msgs)), msgs, drifting)
}

// stripInto is Strip appending to out, which may be msgs[:0] (each message
// is read before its place is written).
func stripInto(out, msgs []trajectory.Message, drifting map[string]bool) []trajectory.Message {
	for _, m := range msgs {
		switch m.Role {
		case trajectory.RoleTool:
			if drifting[m.ToolCallID] {
				continue
			}
		case trajectory.RoleAssistant:
			if len(m.ToolCalls) > 0 && anyDrifting(m.ToolCalls, drifting) {
				kept := make([]trajectory.ToolCall, 0, len(m.ToolCalls))
				for _, tc := range m.ToolCalls {
					if !drifting[tc.ID] {
						kept = append(kept, tc)
					}
				}
				if len(kept) == 0 && m.Content == "" {
					continue
				}
				m.ToolCalls = kept
			}
		}
		out = append(out, m)
	}
	return out
}

// anyDrifting reports whether Strip removes one of the calls.
func anyDrifting(calls []trajectory.ToolCall, drifting map[string]bool) bool {
	for i := range calls {
		if drifting[calls[i].ID] {
			return true
		}
	}
	return false
}

// Rule is the deterministic judge: on the judges' view (View), every
// non-optional required call was made and answered by a matching response,
// every call assertion and state assertion holds on the state that the
// view's calls produce, and the answer assertions hold on the final answer
// (FinalAnswer: the last assistant turn, when it calls no tool).
type Rule struct{}

// Kind names the judge in records.
func (Rule) Kind() string { return "rule" }

// Judge replays the view's tool calls in a fresh environment and checks
// the success criteria. view must come from View or ViewOf.
func (r Rule) Judge(spec *env.Spec, view []trajectory.Message) trajectory.Judgement {
	return r.JudgeParsed(spec, view, scenario.ParseArgs)
}

// JudgeParsed is Judge with the calls' arguments parsed by parse, which
// must give what scenario.ParseArgs gives for the same bytes: an episode
// that parsed them already passes its memo. The maps it returns are only
// read.
func (Rule) JudgeParsed(spec *env.Spec, view []trajectory.Message, parse func([]byte) (map[string]any, error)) trajectory.Judgement {
	s := spec.S
	e := spec.NewSharing() // parse's maps are only read
	type made struct {
		tool string
		args map[string]any // normalised
	}
	calls := 0
	for i := range view {
		calls += len(view[i].ToolCalls)
	}
	ok := make([]made, 0, calls)
	for i := range view {
		m := &view[i]
		if m.Role != trajectory.RoleAssistant {
			continue
		}
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			if len(tc.Function.Parsed) == 0 {
				continue // never executed: the agent got an error back
			}
			args, err := parse(tc.Function.Parsed)
			if err != nil {
				continue
			}
			// Exec's normalised arguments are Spec.Normalize's.
			if outcome, norm := e.Exec(tc.Function.Name, args); outcome == env.Matched {
				ok = append(ok, made{tc.Function.Name, norm})
			}
		}
	}
	var failed []string
	// first[i] is the position in ok of the first call matching required
	// call i that comes after the calls its After names (-1: none).
	first := make([]int, len(s.RequiredCalls))
	for i := range first {
		first[i] = unplaced
	}
	var place func(i int) int
	place = func(i int) int {
		if first[i] != unplaced {
			return first[i]
		}
		first[i] = -1 // a cycle places nothing (the validator refuses them)
		c := s.RequiredCalls[i]
		from := 0
		for _, k := range c.After {
			if k < 0 || k >= len(first) {
				continue
			}
			p := place(k)
			if p < 0 {
				return -1
			}
			from = max(from, p+1)
		}
		m := spec.RequiredMatcher(i)
		for q := from; q < len(ok); q++ {
			if ok[q].tool == c.Tool && m.Match(ok[q].args) {
				first[i] = q
				break
			}
		}
		return first[i]
	}
	for i, c := range s.RequiredCalls {
		if (c.Optional || !s.Success.AllRequired) && len(c.After) == 0 {
			continue
		}
		if place(i) >= 0 {
			continue
		}
		m := spec.RequiredMatcher(i)
		made := false
		for _, call := range ok {
			made = made || (call.tool == c.Tool && m.Match(call.args))
		}
		switch {
		case made:
			failed = append(failed, fmt.Sprintf("required call %s was made before %s, which must come first", c.Tool, afterNames(s, c.After)))
		case s.Success.AllRequired && !c.Optional:
			failed = append(failed, fmt.Sprintf("required call %s was not made successfully", c.Tool))
		}
	}
	for i, c := range s.Success.Calls {
		m := spec.CallMatcher(i)
		n := 0
		for _, call := range ok {
			if call.tool == c.Tool && m.Match(call.args) {
				n++
			}
		}
		if pass, why := env.CountHolds(c.Count, n); !pass {
			failed = append(failed, fmt.Sprintf("calls of %s: %s", c.Tool, why))
		}
	}
	for i := range s.Success.State {
		if pass, why := e.CheckState(i); !pass {
			failed = append(failed, why)
		}
	}
	if a := s.Success.Answer; a != nil {
		for _, why := range env.CheckAnswer(FinalAnswer(view), a) {
			failed = append(failed, "final answer "+why)
		}
	}
	if len(failed) > 0 {
		return trajectory.Judgement{Kind: "rule", Score: 0, Reason: strings.Join(failed, "; ")}
	}
	return trajectory.Judgement{Kind: "rule", Score: 1, Reason: "all required calls made and all success assertions hold"}
}

// unplaced marks a required call not yet looked for.
const unplaced = -2

// afterNames describes the calls an After names: "get_policy (required_calls[0])".
func afterNames(s *scenario.Scenario, after []int) string {
	var parts []string
	for _, k := range after {
		if k >= 0 && k < len(s.RequiredCalls) {
			parts = append(parts, fmt.Sprintf("%s (required_calls[%d])", s.RequiredCalls[k].Tool, k))
		}
	}
	return strings.Join(parts, " and ")
}
