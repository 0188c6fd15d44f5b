// Package agent runs one episode: a framework's loop between a policy and a
// scenario's mock environment, recording every message, the tools visible
// at each step and the drift of each call.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/exposure"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Limits bound an episode.
type Limits struct {
	MaxSteps    int           // assistant turns; 0: 20
	MaxTokens   int           // total tokens over the episode; 0: no limit
	WallTime    time.Duration // per episode; 0: no limit
	Temperature float64
	// OmitTemperature leaves temperature out of every request.
	OmitTemperature bool
	MaxTurnTokens   int // max_tokens per request; 0: not sent
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
	// Exposure replays a finished episode for the record's stored
	// exposure (rollout/exposure), compiled once per scenario.
	Exposure *exposure.Info
	gate     *Gate
	filters  filterCache // exposure filters built on demand (filters.go)
	tools    []policy.Tool
	names    []string                   // the tools' names, in order (every step's Visible when all are)
	identity []int                      // 0 … len(tools)-1: the authored order
	orders   orderCache                 // the seeded order of the run seed last asked (Order)
	prompt   string                     // S.UserPrompt()
	wire     map[string]json.RawMessage // tool name -> OpenAI function schema
	args     argsMemo                   // parsed arguments, shared by the episodes
}

// argsMemo remembers parsed call arguments by their text for every episode
// of a scenario: rollouts of one scenario make the same calls again and
// again (the same tool on the same ids), with any policy that samples
// near its mode. The maps are only read, as within an episode (parseArgs).
type argsMemo struct {
	mu sync.RWMutex
	m  map[string]parsedArgs // raw is nil: the key is the text
}

// Bounds of the memo: entries per scenario, and the longest text kept.
const (
	maxArgsMemo    = 1024
	maxArgsMemoLen = 2048
)

func (a *argsMemo) get(raw []byte) (parsedArgs, bool) {
	a.mu.RLock()
	p, ok := a.m[string(raw)]
	a.mu.RUnlock()
	return p, ok
}

func (a *argsMemo) put(raw []byte, p parsedArgs) {
	if len(raw) > maxArgsMemoLen {
		return
	}
	a.mu.Lock()
	if a.m == nil {
		a.m = map[string]parsedArgs{}
	}
	if len(a.m) < maxArgsMemo {
		a.m[string(raw)] = p
	}
	a.mu.Unlock()
}

// Prepare compiles a scenario for episodes.
func Prepare(s *scenario.Scenario) (*Scenario, error) {
	// One compiled scenario for the environment and the detector.
	c, err := scenario.Compile(s)
	if err != nil {
		return nil, err
	}
	spec, err := env.CompileFrom(c)
	if err != nil {
		return nil, err
	}
	det := drift.NewDetectorFrom(c)
	ex, err := exposure.NewInfoWith(s, spec)
	if err != nil {
		return nil, err
	}
	p := &Scenario{S: s, Spec: spec, Detector: det, Exposure: ex, gate: NewGate(s), wire: map[string]json.RawMessage{}, prompt: s.UserPrompt()}
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
		p.names = append(p.names, t.Name)
		p.identity = append(p.identity, len(p.identity))
		b, err := json.Marshal(map[string]any{"type": "function", "function": pt})
		if err != nil {
			return nil, err
		}
		p.wire[t.Name] = b
	}
	return p, nil
}

// userPrompt is S.UserPrompt(), built once.
func (p *Scenario) userPrompt() string {
	if p.prompt == "" {
		return p.S.UserPrompt() // a Scenario made without Prepare
	}
	return p.prompt
}

// Gate is the scenario's risk-aware causal gate (used by the gated framework).
func (p *Scenario) Gate() *Gate { return p.gate }

// Tools are the scenario's tools as they are offered to a model.
func (p *Scenario) Tools() []policy.Tool { return p.tools }

// Episode identifies one rollout of a scenario.
type Episode struct {
	Scenario *Scenario
	Seed     int64
	// Order is the order in which the model is shown the tools: indices
	// into Scenario.S.Tools (SeededOrder); nil keeps the authored order.
	Order []int
}

// Result is what the loop produced; the engine adds identity and timings.
type Result struct {
	Messages []trajectory.Message
	Tools    []json.RawMessage
	// ToolOrder names the tools in the order they were presented, when
	// the episode was given an order (nil: as authored).
	ToolOrder []string
	Steps     []trajectory.Step
	Matches   []drift.Match
	Status    trajectory.Status
	Error     string
	Judge     trajectory.Judgement
	Usage     trajectory.Usage
	// Plan is the plan-exec planner's plan ("" in other frameworks).
	Plan string
	// FormatErrors counts the react framework's malformed answers.
	FormatErrors int
	// Repairs counts what was mended in the model's answers.
	Repairs trajectory.Repairs
	// Cause is the policy error that ended the episode, if any (for the
	// engine's endpoint-wide refusal check); it is not recorded.
	Cause     error
	ModelTime time.Duration
	ToolTime  time.Duration
}

// RunNormal is the "normal" framework: the model sees every tool of the
// scenario and calls them natively until it answers without a tool call or
// a limit is reached.
func RunNormal(ctx context.Context, pol policy.Policy, ep Episode, lim Limits) (Result, error) {
	r, cancel := begin(ctx, pol, ep, lim)
	defer cancel()
	return r.native(ep.Scenario.S.System, false)
}

// run is one episode in progress, whatever the framework: the environment,
// the result so far and the running call index.
type run struct {
	ctx       context.Context
	pol       policy.Policy
	sc        *Scenario
	seed      int64
	lim       Limits
	e         *env.Env
	det       *drift.Episode // per-episode drift state (call-count limits)
	res       Result
	callIndex int
	// prevPrompt is the previous turn's prompt tokens; cut says why the
	// server's conversation was found cut ("" while it was not).
	prevPrompt int
	cut        string
	answered   bool         // the policy has answered at least once
	filter     Filter       // the exposure filter of a filtered loop; nil: the gate
	parsed     []parsedArgs // the episode's parsed call arguments, for the judge's replay
	pr         presented    // the tools in the order the model sees them
	// notes and usages are the free room of the arrays the steps' call
	// notes and usages are carved from: a few per episode rather than one
	// per step.
	notes  []trajectory.CallNote
	usages []trajectory.Usage
}

// stepsGuess is room for an episode's usual steps: a call per required call,
// then the answer, and a little over.
func (r *run) stepsGuess() int { return 2*len(r.sc.S.RequiredCalls) + 4 }

// noteRoom is an empty slice with room for n call notes. Appending more
// than n moves them out, never over another step's notes.
func (r *run) noteRoom(n int) []trajectory.CallNote {
	if cap(r.notes)-len(r.notes) < n {
		r.notes = make([]trajectory.CallNote, 0, max(n, r.stepsGuess()))
	}
	i := len(r.notes)
	r.notes = r.notes[:i+n]
	return r.notes[i : i : i+n]
}

// keepUsage is a pointer to a copy of u for a step.
func (r *run) keepUsage(u trajectory.Usage) *trajectory.Usage {
	if len(r.usages) == cap(r.usages) {
		r.usages = make([]trajectory.Usage, 0, r.stepsGuess())
	}
	r.usages = append(r.usages, u)
	return &r.usages[len(r.usages)-1]
}

// parsedArgs is scenario.ParseArgs of raw.
type parsedArgs struct {
	raw  []byte
	args map[string]any
	err  error
}

// maxParsedMemo bounds the memo of parsed arguments (looked up linearly).
const maxParsedMemo = 64

// parseArgs is scenario.ParseArgs, remembered for the episode (the rule
// judge replays the same calls) and for the scenario's other episodes
// (argsMemo). The maps are only read (the environment, the drift detector
// and the judge copy what they change).
func (r *run) parseArgs(raw []byte) (map[string]any, error) {
	for i := range r.parsed {
		if bytes.Equal(r.parsed[i].raw, raw) {
			return r.parsed[i].args, r.parsed[i].err
		}
	}
	p, ok := r.sc.args.get(raw)
	if !ok {
		p.args, p.err = scenario.ParseArgs(raw)
		r.sc.args.put(raw, p)
	}
	args, err := p.args, p.err
	if len(r.parsed) < maxParsedMemo {
		r.parsed = append(r.parsed, parsedArgs{raw: raw, args: args, err: err})
	}
	return args, err
}

// begin starts an episode: a fresh environment, and the episode's wall-time
// limit on ctx (release it with the returned function).
func begin(ctx context.Context, pol policy.Policy, ep Episode, lim Limits) (*run, context.CancelFunc) {
	cancel := context.CancelFunc(func() {})
	if lim.WallTime > 0 {
		ctx, cancel = context.WithTimeout(ctx, lim.WallTime)
	}
	r := &run{ctx: ctx, pol: pol, sc: ep.Scenario, seed: ep.Seed, lim: lim, e: ep.Scenario.Spec.NewSharing(), det: ep.Scenario.Detector.Episode(),
		pr: ep.Scenario.present(ep.Order)}
	if isPermutation(ep.Order, len(ep.Scenario.tools)) {
		r.res.ToolOrder = r.pr.names
	}
	return r, cancel
}

// request is a chat request with the episode's sampling settings.
func (r *run) request(msgs []trajectory.Message, tools []policy.Tool) policy.Request {
	req := policy.Request{Messages: msgs, Tools: tools, Temperature: r.lim.Temperature, OmitTemperature: r.lim.OmitTemperature, Seed: r.seed, MaxTokens: r.lim.MaxTurnTokens}
	if tools != nil {
		req.ToolChoice = "auto"
	}
	return req
}

// ask sends one request. ok is false when the episode must end: the status
// and error are then set, or fatal is the error that stops the run.
func (r *run) ask(req policy.Request) (resp policy.Response, ok bool, fatal error) {
	t0 := time.Now()
	resp, err := r.pol.Complete(r.ctx, req)
	r.res.ModelTime += time.Since(t0)
	if err != nil {
		status, isFatal := classify(r.ctx, err, r.answered)
		if isFatal {
			return resp, false, err
		}
		r.res.Status, r.res.Error, r.res.Cause = status, err.Error(), err
		return resp, false, nil
	}
	r.answered = true
	r.res.Usage = r.res.Usage.Add(resp.Usage)
	return resp, true, nil
}

// overTokens ends the episode when the token budget is spent.
func (r *run) overTokens() bool {
	if r.lim.MaxTokens > 0 && r.res.Usage.TotalTokens >= r.lim.MaxTokens {
		r.res.Status, r.res.Error = trajectory.StatusMaxSteps, fmt.Sprintf("token limit %d reached", r.lim.MaxTokens)
		return true
	}
	return false
}

// notVisible is the outcome of a call to a tool the framework did not offer.
const notVisible = judge.NotVisible

// execute runs one tool call of the assistant message at index turn and
// returns its note and the tool message answering it. hidden, when not
// nil, says which of the scenario's tools are not offered: a call to one of
// them is not executed but answered with a tool error. Every call, executed
// or not, goes through the drift detector: it is an attempt.
func (r *run) execute(tc trajectory.ToolCall, turn int, hidden func(string) bool) (trajectory.CallNote, trajectory.Message) {
	var args map[string]any
	var out env.Result
	var unmet, unapproved []string
	if len(tc.Function.Parsed) > 0 {
		args, _ = r.parseArgs(tc.Function.Parsed)
	}
	outcome := ""
	refusal := ""
	if cg, ok := r.filter.(CallGate); ok && hidden != nil && args != nil {
		refusal = cg.Refuses(r.sc.S.Tool(tc.Function.Name), r.e, args)
	} else if r.filter == nil && hidden != nil && args != nil {
		refusal = r.sc.gate.Refuses(r.sc.S.Tool(tc.Function.Name), r.e, args)
	}
	switch {
	case hidden != nil && r.sc.S.Tool(tc.Function.Name) != nil && hidden(tc.Function.Name):
		outcome = notVisible
		out = env.Result{Outcome: env.UnknownTool, Response: -1, Content: errorJSON(fmt.Sprintf("tool %s is not available", tc.Function.Name))}
	case refusal != "":
		// Outside the approved capability: refused as a hidden tool is.
		outcome = notVisible
		out = env.Result{Outcome: env.UnknownTool, Response: -1, Content: errorJSON(refusal)}
	case args == nil:
		reason := tc.Function.ArgsError
		if reason == "" {
			reason = "arguments are not a JSON object"
		}
		out = env.Result{Outcome: env.InvalidArgs, Response: -1, Content: errorJSON(fmt.Sprintf("invalid arguments for %s: %s", tc.Function.Name, reason))}
	default:
		if t := r.sc.S.Tool(tc.Function.Name); t != nil {
			unmet = r.e.Unmet(t) // before the call: its own effects do not count
			unapproved = r.e.Unapproved(t, args)
		}
		out = r.e.Call(tc.Function.Name, args)
		if out.Outcome != env.Matched && out.Outcome != env.Default {
			unmet, unapproved = nil, nil // not executed: an error the agent can correct
		}
	}
	if outcome == "" {
		outcome = out.Outcome.String()
	}
	ms := r.det.Check(drift.Call{Index: r.callIndex, Turn: turn, Name: tc.Function.Name, Args: args, Unmet: unmet, Unapproved: unapproved})
	r.det.Observe(r.callIndex, tc.Function.Name, out.Content)
	r.res.Matches = append(r.res.Matches, ms...)
	note := trajectory.CallNote{Call: r.callIndex, ID: tc.ID, Tool: tc.Function.Name, Outcome: outcome, Drift: len(ms) > 0}
	r.callIndex++
	return note, trajectory.Message{Role: trajectory.RoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: out.Content}
}

// native is the native tool-calling loop shared by normal, the exposure
// filters (gated among them) and the plan-exec executor: system is the
// system prompt ("" for none); gated offers, at each step, only the tools
// the run's filter (by default the scenario's gate) exposes.
func (r *run) native(system string, gated bool) (Result, error) {
	sc := r.sc
	res := &r.res
	if res.Messages == nil {
		// Room for the usual episode: the prompts, then a call and its
		// answer per required call, then the answer.
		res.Messages = make([]trajectory.Message, 0, 2*len(sc.S.RequiredCalls)+4)
	}
	if system != "" {
		res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleSystem, Content: system})
	}
	res.Messages = append(res.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: sc.userPrompt()})
	all := r.pr.names
	var prevVisible []string // filtered: the tools offered at the previous step
	var offered []bool       // gated: offered at some step
	if gated {
		offered = make([]bool, len(sc.tools))
	}
	if !gated {
		if res.Tools == nil && len(sc.tools) > 0 {
			res.Tools = make([]json.RawMessage, 0, len(sc.tools))
		}
		for _, t := range r.pr.tools {
			res.Tools = append(res.Tools, sc.wire[t.Name])
		}
	}
	res.Status = trajectory.StatusMaxSteps
	for step := 0; step < r.lim.maxSteps(); step++ {
		visible, tools := all, r.pr.tools
		var hidden func(string) bool
		if gated {
			filter := r.filter
			if filter == nil {
				filter = sc.gate
			}
			offer := filter.Offer(r.e, res.Messages)
			visible, tools = []string{}, []policy.Tool{}
			shown := map[string]bool{}
			for _, i := range r.pr.idx {
				if t := sc.tools[i]; offer[i] {
					visible = append(visible, t.Name)
					tools = append(tools, t)
					offered[i] = true
					shown[t.Name] = true
				}
			}
			hidden = func(name string) bool { return !shown[name] }
			if !slices.Equal(visible, prevVisible) {
				// Other tools, another prompt size: a fall in prompt tokens
				// is no sign of a cut conversation across this step.
				r.prevPrompt = 0
			}
			prevVisible = visible
		}
		resp, ok, fatal := r.ask(r.request(res.Messages, tools))
		if fatal != nil {
			return *res, fatal
		}
		if !ok {
			r.quotedCalls(res, visible)
			break
		}
		turn := len(res.Messages)
		st := trajectory.Step{Turn: turn, Visible: visible}
		msg, end := r.review(resp, turn, &st, true)
		res.Messages = append(res.Messages, msg)
		t1 := time.Now()
		if st.Calls == nil && len(msg.ToolCalls) > 0 {
			st.Calls = r.noteRoom(len(msg.ToolCalls))
		}
		for _, tc := range msg.ToolCalls {
			note, answer := r.execute(tc, turn, hidden)
			st.Calls = append(st.Calls, note)
			res.Messages = append(res.Messages, answer)
		}
		res.ToolTime += time.Since(t1)
		if res.Steps == nil {
			res.Steps = make([]trajectory.Step, 0, len(sc.S.RequiredCalls)+2)
		}
		res.Steps = append(res.Steps, st)
		if end == "" && len(msg.ToolCalls) == 0 {
			end, res.Error = finalStatus(msg, resp.FinishReason)
		}
		if end != "" {
			res.Status = end
			if end == trajectory.StatusTruncated && res.Error == "" {
				res.Error = "the turn was cut by the token limit or the context (finish_reason length)"
			}
			break
		}
		if r.overTokens() {
			break
		}
	}
	if gated {
		for _, i := range r.pr.idx {
			if offered[i] {
				res.Tools = append(res.Tools, sc.wire[sc.tools[i].Name])
			}
		}
	}
	r.settle()
	r.judge(res.Messages)
	return *res, nil
}

// judge labels the episode's success with the rule judge, on the judges'
// view (judge.ViewOf) of the given messages, and checks the final answer
// against the content rules. Infrastructure errors are retried, not judged.
func (r *run) judge(msgs []trajectory.Message) {
	view := judge.ViewOf(msgs, r.res.Steps)
	// Content rules on the final answer: drift on the last turn (call -1).
	r.res.Matches = append(r.res.Matches, r.det.Answer(judge.LastAssistantTurn(msgs), judge.FinalAnswer(view))...)
	if r.res.Status != trajectory.StatusInfraError {
		r.res.Judge = judge.Rule{}.JudgeParsed(r.sc.Spec, view, r.parseArgs)
	}
}

// classify maps a policy error to an episode status; fatal errors stop the
// run. answered says whether the policy answered at least once in this
// episode: an episode that never got a model answer is an infrastructure
// error (kept in errors/, retried on resume), even when its own wall time
// ran out waiting for an endpoint that never answers.
func classify(ctx context.Context, err error, answered bool) (trajectory.Status, bool) {
	switch {
	case errors.Is(err, policy.ErrFatal):
		return "", true
	case errors.Is(err, policy.ErrContextLength):
		return trajectory.StatusContextLength, false
	case errors.Is(err, policy.ErrModel):
		return trajectory.StatusModelError, false
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil && answered:
		// The episode's own wall-time limit, after the model had answered:
		// a budget, like max_steps.
		return trajectory.StatusMaxSteps, false
	}
	return trajectory.StatusInfraError, false
}

func errorJSON(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}
