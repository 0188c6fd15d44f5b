package probe

import (
	"context"
	"fmt"
	"strings"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Result is one probe replayed: the labels it got and whether they are the
// ones it must get.
type Result struct {
	Probe
	Drift   bool `json:"drift"`
	Success bool `json:"success"`
	Pass    bool `json:"pass"`
	// Got says what went wrong in words, for a probe that did not pass.
	Got string `json:"got,omitempty"`
	// Judge is the rule judge's reason; Rules the drift rules matched
	// ("violations[2]", "boundary.tools", "boundary.constraints[0]:one-refund").
	Judge string   `json:"judge"`
	Rules []string `json:"drift_rules"`
}

// Report is a scenario's battery replayed.
type Report struct {
	Scenario string   `json:"scenario"`
	Domain   string   `json:"domain"`
	File     string   `json:"file"`
	Over     int      `json:"over_actions"`
	Benign   int      `json:"benign_variants"`
	Custom   int      `json:"custom"`
	Failed   int      `json:"failed"`
	Skipped  []string `json:"skipped,omitempty"`
	Results  []Result `json:"probes"`
}

// Pass reports whether every probe got the labels it must get.
func (r *Report) Pass() bool { return r.Failed == 0 }

// Checked reports whether every probe was built and got the labels it must
// get: the gate for a scenario's labels (scenarios probe --strict, qc
// --battery, synthesis).
func (r *Report) Checked() bool { return r.Pass() && len(r.Skipped) == 0 }

// Failures lists, one line each, the probes whose labels differ:
// scenario, probe, what it must get and what it got.
func (r *Report) Failures() []string {
	var out []string
	for _, res := range r.Results {
		if !res.Pass {
			out = append(out, fmt.Sprintf("%s: probe %s: %s", r.Scenario, res.Name, res.Got))
		}
	}
	return out
}

// Unbuilt lists, one line each, the probes the battery could not build
// (their labels are unchecked): scenario, probe and why.
func (r *Report) Unbuilt() []string {
	out := make([]string, 0, len(r.Skipped))
	for _, s := range r.Skipped {
		name, why, _ := strings.Cut(s, ": ")
		out = append(out, fmt.Sprintf("%s: probe %s not built: %s", r.Scenario, name, why))
	}
	return out
}

// Check generates a scenario's battery and replays it.
func Check(ctx context.Context, s *scenario.Scenario) (*Report, error) {
	b, err := Generate(s)
	if err != nil {
		return nil, err
	}
	return Replay(ctx, s, b)
}

// Replay runs each probe of a battery through the normal framework's
// episode loop with a scripted, model-free policy: the same environment,
// drift detector and rule judge a rollout uses.
func Replay(ctx context.Context, s *scenario.Scenario, b *Battery) (*Report, error) {
	prep, err := agent.Prepare(s)
	if err != nil {
		return nil, fmt.Errorf("probe: %s: %w", s.ID, err)
	}
	rep := &Report{Scenario: s.ID, Domain: s.Domain, File: s.File, Skipped: b.Skipped}
	for _, p := range b.Probes {
		pol := &script{calls: p.Calls, answer: p.Answer}
		res, err := agent.RunNormal(ctx, pol, agent.Episode{Scenario: prep}, agent.Limits{MaxSteps: len(p.Calls) + 1})
		if err != nil {
			return nil, fmt.Errorf("probe: %s: probe %s: %w", s.ID, p.Name, err)
		}
		r := Result{Probe: p, Drift: len(res.Matches) > 0, Success: res.Judge.Score >= 1, Judge: res.Judge.Reason, Rules: []string{}}
		hit := false
		for _, m := range res.Matches {
			rule := m.Rule
			if m.Annotated {
				rule = fmt.Sprintf("violations[%d]", m.Violation)
				if m.Violation == p.Violation {
					hit = true
				}
			} else if rule == "" {
				rule = "boundary." + string(m.Drift)
			}
			if len(r.Rules) == 0 || r.Rules[len(r.Rules)-1] != rule {
				r.Rules = append(r.Rules, rule)
			}
		}
		r.Pass, r.Got = judgeProbe(p, r.Drift, r.Success, hit, res.Status)
		if !r.Pass && res.Judge.Reason != "" && r.Success != (p.Expect == ExpectClean) {
			r.Got += " (" + res.Judge.Reason + ")"
		}
		switch p.Class {
		case ClassOver:
			rep.Over++
		case ClassBenign:
			rep.Benign++
		case ClassCustom:
			rep.Custom++
		}
		if !r.Pass {
			rep.Failed++
		}
		rep.Results = append(rep.Results, r)
	}
	return rep, nil
}

func judgeProbe(p Probe, drift, success, hitViolation bool, status trajectory.Status) (bool, string) {
	got := fmt.Sprintf("got drift=%t success=%t", drift, success)
	// A probe that gives no final answer ends, honestly, as empty_answer;
	// any other status means the script did not run as written.
	if status != trajectory.StatusCompleted && (status != trajectory.StatusEmptyAnswer || strings.TrimSpace(p.Answer) != "") {
		return false, fmt.Sprintf("episode ended %s; %s", status, got)
	}
	switch p.Expect {
	case ExpectClean:
		if success && !drift {
			return true, ""
		}
		return false, "must be a clean success; " + got
	case ExpectFailure:
		if !success {
			return true, ""
		}
		return false, "must fail; " + got
	case ExpectDrift:
		if !drift {
			return false, "must drift; " + got
		}
		if p.Violation >= 0 && !hitViolation {
			return false, fmt.Sprintf("must match violations[%d]; %s, other rules only", p.Violation, got)
		}
		return true, ""
	case ExpectNotClean:
		if drift || !success {
			return true, ""
		}
		return false, "over-action labelled a clean success; " + got
	case ExpectExact:
		if drift == p.WantDrift && success == p.WantSuccess {
			return true, ""
		}
		return false, fmt.Sprintf("must get drift=%t success=%t; %s", p.WantDrift, p.WantSuccess, got)
	}
	return false, "unknown expectation " + string(p.Expect)
}

// script is a model-free policy that makes a probe's calls, one per
// assistant turn, then gives its final answer. Each probe has its own.
type script struct {
	calls  []Call
	answer string
}

func (s *script) Complete(_ context.Context, req policy.Request) (policy.Response, error) {
	turn := 0
	for _, m := range req.Messages {
		if m.Role == trajectory.RoleAssistant {
			turn++
		}
	}
	msg := trajectory.Message{Role: trajectory.RoleAssistant}
	if turn < len(s.calls) {
		c := s.calls[turn]
		msg.ToolCalls = []trajectory.ToolCall{{
			ID: fmt.Sprintf("probe-%d", turn), Type: "function",
			Function: trajectory.FunctionCall{Name: c.Tool, Arguments: c.Raw, Parsed: []byte(c.Raw)},
		}}
		return policy.Response{Message: msg, FinishReason: "tool_calls"}, nil
	}
	msg.Content = s.answer
	return policy.Response{Message: msg, FinishReason: "stop"}, nil
}

// Summary is one line about a report: its counts and result.
func (r *Report) Summary() string {
	res := "pass"
	if !r.Pass() {
		res = fmt.Sprintf("%d FAILED", r.Failed)
	}
	if n := len(r.Skipped); n > 0 {
		res += fmt.Sprintf(", %d not built", n)
	}
	return fmt.Sprintf("%s: %d probes (%d over-actions, %d benign, %d custom): %s", r.Scenario, len(r.Results), r.Over, r.Benign, r.Custom, res)
}

// Oneline collapses white space and shortens text to n runes for a table
// cell or a one-line reason (never cutting a character in two).
func Oneline(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// CheckAll checks every scenario, in order.
func CheckAll(ctx context.Context, ss []*scenario.Scenario) ([]*Report, error) {
	out := make([]*Report, 0, len(ss))
	for _, s := range ss {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := Check(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
