// Package agent runs one episode: a framework's loop between a policy and a
// scenario's mock environment, recording every message, the tools visible
// at each step and the drift of each call.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Limits bound an episode.
type Limits struct {
	MaxSteps      int           // assistant turns; 0: 20
	MaxTokens     int           // total tokens over the episode; 0: no limit
	WallTime      time.Duration // per episode; 0: no limit
	Temperature   float64
	MaxTurnTokens int // max_tokens per request; 0: not sent
}

func (l Limits) maxSteps() int {
	if l.MaxSteps <= 0 {
		return 20
	}
	return l.MaxSteps
}

// Scenario is a scenario prepared for many episodes: compiled environment,
// drift detector and tool schemas, shared read-only.
type Scenario struct {
	S        *scenario.Scenario
	Spec     *env.Spec
	Detector *drift.Detector
	tools    []policy.Tool
	wire     map[string]json.RawMessage // tool name -> OpenAI function schema
}

// Prepare compiles a scenario for episodes.
func Prepare(s *scenario.Scenario) (*Scenario, error) {
	spec, err := env.Compile(s)
	if err != nil {
		return nil, err
	}
	det, err := drift.NewDetector(s)
	if err != nil {
		return nil, err
	}
	p := &Scenario{S: s, Spec: spec, Detector: det, wire: map[string]json.RawMessage{}}
	for _, t := range s.Tools {
		// Parameters as they go on the wire (compact JSON, as encoding/json
		// writes it), so that an in-process policy sees the bytes an HTTP
		// endpoint would: the simulated policies' usage depends on them.
		params := t.Parameters
		if len(params) > 0 {
			if b, err := json.Marshal(params); err == nil {
				params = b
			}
		}
		pt := policy.Tool{Name: t.Name, Description: t.Description, Parameters: params}
		p.tools = append(p.tools, pt)
		b, err := json.Marshal(map[string]any{"type": "function", "function": pt})
		if err != nil {
			return nil, err
		}
		p.wire[t.Name] = b
	}
	return p, nil
}

// Episode identifies one rollout of a scenario.
type Episode struct {
	Scenario *Scenario
	Seed     int64
}

// Result is what the loop produced; the engine adds identity and timings.
type Result struct {
	Messages  []trajectory.Message
	Tools     []json.RawMessage
	Steps     []trajectory.Step
	Matches   []drift.Match
	Status    trajectory.Status
	Error     string
	Judge     trajectory.Judgement
	Usage     trajectory.Usage
	ModelTime time.Duration
	ToolTime  time.Duration
}

// ErrFatal wraps a policy error that must stop the whole run.
var ErrFatal = policy.ErrFatal

// RunNormal is the "normal" framework: the model sees every tool of the
// scenario and calls them natively until it answers without a tool call or
// a limit is reached.
func RunNormal(ctx context.Context, pol policy.Policy, ep Episode, lim Limits) (Result, error) {
	if lim.WallTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.WallTime)
		defer cancel()
	}
	sc := ep.Scenario
	s := sc.S
	e := sc.Spec.New()
	var res Result
	if s.System != "" {
		res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleSystem, Content: s.System})
	}
	res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: s.UserPrompt()})
	visible := make([]string, len(sc.tools))
	for i, t := range sc.tools {
		visible[i] = t.Name
		res.Tools = append(res.Tools, sc.wire[t.Name])
	}
	callIndex := 0
	res.Status = trajectory.StatusMaxSteps
	for step := 0; step < lim.maxSteps(); step++ {
		req := policy.Request{
			Messages: res.Messages, Tools: sc.tools, ToolChoice: "auto",
			Temperature: lim.Temperature, Seed: ep.Seed, MaxTokens: lim.MaxTurnTokens,
		}
		t0 := time.Now()
		resp, err := pol.Complete(ctx, req)
		res.ModelTime += time.Since(t0)
		if err != nil {
			if status, fatal := classify(ctx, err); fatal {
				return res, err
			} else {
				res.Status, res.Error = status, err.Error()
			}
			break
		}
		res.Usage = res.Usage.Add(resp.Usage)
		msg := resp.Message
		msg.Role = trajectory.RoleAssistant
		turn := len(res.Messages)
		res.Messages = append(res.Messages, msg)
		st := trajectory.Step{Turn: turn, Visible: visible}
		t1 := time.Now()
		for _, tc := range msg.ToolCalls {
			var args map[string]any
			var out env.Result
			if len(tc.Function.Parsed) > 0 {
				args, _ = scenario.ParseArgs(tc.Function.Parsed)
			}
			if args == nil {
				reason := tc.Function.ArgsError
				if reason == "" {
					reason = "arguments are not a JSON object"
				}
				out = env.Result{Outcome: env.InvalidArgs, Response: -1, Content: errorJSON(fmt.Sprintf("invalid arguments for %s: %s", tc.Function.Name, reason))}
			} else {
				out = e.Call(tc.Function.Name, args)
			}
			ms := sc.Detector.Check(drift.Call{Index: callIndex, Turn: turn, Name: tc.Function.Name, Args: args})
			res.Matches = append(res.Matches, ms...)
			st.Calls = append(st.Calls, trajectory.CallNote{Call: callIndex, ID: tc.ID, Tool: tc.Function.Name, Outcome: out.Outcome.String(), Drift: len(ms) > 0})
			res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: out.Content})
			callIndex++
		}
		res.ToolTime += time.Since(t1)
		res.Steps = append(res.Steps, st)
		if len(msg.ToolCalls) == 0 {
			res.Status = trajectory.StatusCompleted
			break
		}
		if lim.MaxTokens > 0 && res.Usage.TotalTokens >= lim.MaxTokens {
			res.Status, res.Error = trajectory.StatusMaxSteps, fmt.Sprintf("token limit %d reached", lim.MaxTokens)
			break
		}
	}
	if res.Status != trajectory.StatusInfraError {
		res.Judge = judge.Rule{}.Judge(sc.Spec, judge.Strip(res.Messages, driftingIDs(res)))
	}
	return res, nil
}

// classify maps a policy error to an episode status; fatal errors stop the run.
func classify(ctx context.Context, err error) (trajectory.Status, bool) {
	switch {
	case errors.Is(err, policy.ErrFatal):
		return "", true
	case errors.Is(err, policy.ErrContextLength):
		return trajectory.StatusContextLength, false
	case errors.Is(err, policy.ErrModel):
		return trajectory.StatusModelError, false
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		// The episode's own wall-time limit, not the endpoint's fault.
		return trajectory.StatusMaxSteps, false
	}
	return trajectory.StatusInfraError, false
}

func driftingIDs(res Result) map[string]bool {
	ids := map[string]bool{}
	for _, st := range res.Steps {
		for _, c := range st.Calls {
			if c.Drift {
				ids[c.ID] = true
			}
		}
	}
	return ids
}

func errorJSON(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}
