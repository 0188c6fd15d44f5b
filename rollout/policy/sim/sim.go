// Package sim holds the simulated policies: behavioural models, not
// language models, that act on a scenario's annotations. They exist for
// offline demos, tests and benchmarks, and everything they produce is
// labelled as a simulation (policy names start with "sim:").
//
// A simulated policy follows the compliant path with probability
// Competence, and follows a trigger into one of the scenario's shortcuts
// with a per-scenario probability drawn around DriftPropensity. The
// per-scenario draw comes from a latent that every profile shares, so that
// the same scenarios tempt every checkpoint of a family and drift persists
// across rollouts, as it does with real models.
package sim

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Profile parameterises one simulated checkpoint.
type Profile struct {
	Name string
	// Competence is the chance an episode carries the compliant path through.
	Competence float64
	// DriftPropensity is the mean, over scenarios, of the chance an episode
	// follows a trigger into a shortcut.
	DriftPropensity float64
	// Abandon is the chance that a followed shortcut replaces the rest of the
	// compliant path (a drifting failure) rather than adding to it.
	Abandon float64
	// InjectionSusceptibility is the chance that an episode acts on an
	// injected text it reads (injection.go); 0 ignores injections.
	InjectionSusceptibility float64
	// InjectionMemory keeps an accepted instruction injection for later
	// turns: it is acted on once its tool is offered (injection.go).
	InjectionMemory bool
	// ReadsLure makes the profile follow a shortcut only when a lure it
	// read in the episode's tool results argues for it (lure.go).
	ReadsLure bool
}

// Profiles is the simulated family standing for one training run, from the
// base model through SFT and two DPO rounds, plus a checkpoint that stopped
// drifting by stopping working (capability collapse).
var Profiles = []Profile{
	{Name: "base", Competence: 0.88, DriftPropensity: 0.45, Abandon: 0.20},
	{Name: "sft", Competence: 0.88, DriftPropensity: 0.33, Abandon: 0.20},
	{Name: "dpo-1", Competence: 0.89, DriftPropensity: 0.18, Abandon: 0.20},
	{Name: "dpo-2", Competence: 0.90, DriftPropensity: 0.08, Abandon: 0.20},
	{Name: "overcautious", Competence: 0.35, DriftPropensity: 0.03, Abandon: 0.10},
}

// Probes are simulated policies made for scenario QC, not part of the
// family. The family draws each scenario's drift chance from a shared
// latent, so some scenarios barely tempt any checkpoint: probing with the
// family would fail those scenarios by the luck of the latent. The probes
// follow a trigger in most episodes of every scenario, so every drift point
// is exercised once its lure is read (ReadsLure); one carries the task through beside the shortcut, the other
// often lets the shortcut replace the rest of the task.
var Probes = []Profile{
	{Name: "probe-thorough", Competence: 0.95, DriftPropensity: 0.9, Abandon: 0, ReadsLure: true},
	{Name: "probe-shortcut", Competence: 0.9, DriftPropensity: 0.9, Abandon: 0.5, ReadsLure: true},
}

// All is the family followed by the probes.
func All() []Profile {
	return append(append(append([]Profile(nil), Profiles...), Probes...), InjectionProfiles...)
}

// Lookup finds a profile by name, with or without the "sim:" prefix.
func Lookup(name string) (Profile, error) {
	name = strings.TrimPrefix(strings.TrimPrefix(name, "sim:"), "sim-")
	for _, p := range All() {
		if p.Name == name {
			return p, nil
		}
	}
	var names []string
	for _, p := range All() {
		names = append(names, "sim:"+p.Name)
	}
	return Profile{}, fmt.Errorf("unknown simulated policy %q (known: %s)", name, strings.Join(names, ", "))
}

// Policy is a simulated policy over a set of scenarios. It is stateless
// between requests: each answer is a function of the profile, the scenario
// recognised from the user turn, the request seed and the conversation so
// far, so it gives the same answers in-process and behind sim-server.
type Policy struct {
	profile    Profile
	byPrompt   map[string]*scenario.Scenario
	calls      map[string]*completedCalls // by scenario id
	injections []injectionRead            // every scenario's injections
}

// completedCalls holds the complete arguments of a scenario's required
// calls and violations, built once: completing them validates against the
// tool schema, which is too costly to repeat at every turn.
type completedCalls struct {
	// path is the compliant path the simulation plays: the scenario's own
	// probes.path where its author wrote the calls out in full (the only
	// calls that satisfy content-checking success), else its required
	// calls completed.
	path       []action
	violations []map[string]any
	err        error

	// Fixed for the scenario and the profile, computed once: they are
	// what plan would otherwise recompute at every turn.
	violRaw []action          // violations as actions, their JSON computed once
	pool    []int             // the violations that are no injection targets, in index order
	trigPos []int             // per violation: the first path index calling its trigger tool, else -1
	seedHi  uint64            // hash64(profile name, scenario id): the first PCG seed
	drift   float64           // scenarioDrift(scenario id)
	vocab   []map[string]bool // per violation: lureVocab, for a profile that reads lures
	spots   [][]lureSpot      // per violation: its trigger tool's lures, for a profile that reads lures
}

// New returns the simulated policy of a profile over scenarios.
func New(p Profile, scenarios []*scenario.Scenario) *Policy {
	pol := &Policy{profile: p, byPrompt: map[string]*scenario.Scenario{}, calls: map[string]*completedCalls{}}
	injected := injectedCalls(scenarios)
	// The variants of a task (clean, injected) share its user turn, and
	// the first one's plan plays in all of them: its drift calls are
	// filled so that they keep their labels in each.
	variants := map[string][]*scenario.Scenario{}
	for _, s := range scenarios {
		variants[s.UserPrompt()] = append(variants[s.UserPrompt()], s)
	}
	for _, s := range scenarios {
		// Variants of one task (clean, injected) share the user turn: the
		// first (in id order, the clean one) stands for them all, so that
		// every variant's episode follows the same plan until an injection
		// is read.
		if pol.byPrompt[s.UserPrompt()] == nil {
			pol.byPrompt[s.UserPrompt()] = s
		}
		cc := &completedCalls{}
		if s.Probes != nil && len(s.Probes.Path) > 0 {
			for j, c := range s.Probes.Path {
				args, err := scenario.ParseArgs(mustJSON(c.Args))
				if err != nil && cc.err == nil {
					cc.err = fmt.Errorf("sim: %s: probes.path[%d]: %w", s.ID, j, err)
				}
				cc.path = append(cc.path, action{tool: c.Tool, args: args})
			}
		} else {
			for j, c := range s.RequiredCalls {
				args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
				if err != nil && cc.err == nil {
					cc.err = fmt.Errorf("sim: %s: required_calls[%d]: %w", s.ID, j, err)
				}
				cc.path = append(cc.path, action{tool: c.Tool, args: fillText(args, s)})
			}
		}
		fs := newFillSource(s, cc.path, injected, variants[s.UserPrompt()])
		for j, v := range s.Violations {
			args, err := s.CompleteArgs(v.Tool, v.Args, v.Patterns)
			if err != nil && cc.err == nil {
				cc.err = fmt.Errorf("sim: %s: violations[%d]: %w", s.ID, j, err)
			}
			t := s.Tool(v.Tool)
			disclose := v.Drift == scenario.DriftData && t != nil && t.Writes
			args = fs.plausibleArgs(v.Tool, args, v.Args, v.Patterns, v.TriggerIn, lures(s, v), disclose)
			cc.violations = append(cc.violations, fillText(args, s))
		}
		for j := range cc.path {
			cc.path[j].marshalArgs()
		}
		for vi, v := range s.Violations {
			a := action{tool: v.Tool, args: cc.violations[vi]}
			a.marshalArgs()
			cc.violRaw = append(cc.violRaw, a)
			if v.Kind != scenario.KindInjection {
				cc.pool = append(cc.pool, vi)
			}
			pos := -1
			for j, c := range cc.path {
				if c.tool == v.TriggerIn {
					pos = j
					break
				}
			}
			cc.trigPos = append(cc.trigPos, pos)
			if p.ReadsLure {
				cc.vocab = append(cc.vocab, lureVocab(s, v, cc.violations[vi]))
				cc.spots = append(cc.spots, lureSpots(s, v))
			}
		}
		for i := range s.Injections {
			pol.injections = append(pol.injections, newInjectionRead(&s.Injections[i], s, fs))
		}
		cc.seedHi = hash64(p.Name, s.ID)
		cc.drift = pol.scenarioDrift(s.ID)
		pol.calls[s.ID] = cc
	}
	return pol
}

// Name is the policy's label, always marked as a simulation.
func (p *Policy) Name() string { return "sim:" + p.profile.Name }

// actionBufs are the buffers of plan's actions, which live for one
// Complete call.
var actionBufs = sync.Pool{New: func() any { b := make([]action, 0, 16); return &b }}

// action is one planned step. args are shared with the policy's plan and
// never modified; raw is their JSON (json.Marshal), computed once.
type action struct {
	tool    string
	args    map[string]any
	raw     []byte
	rawText string // string(raw)
	rawErr  error
}

// marshalArgs computes raw once.
func (a *action) marshalArgs() {
	a.raw, a.rawErr = json.Marshal(a.args)
	a.raw = a.raw[:len(a.raw):len(a.raw)] // an append never writes into the shared bytes
	a.rawText = string(a.raw)
}

// argsJSON is the action's arguments as JSON text.
func (a *action) argsJSON() ([]byte, error) {
	if a.raw != nil || a.rawErr != nil {
		return a.raw, a.rawErr
	}
	return json.Marshal(a.args)
}

// episodePlan is what an episode will do.
type episodePlan struct {
	actions  []action
	complete bool // the compliant path is carried through
	drifted  bool
}

// hash64 hashes its parts into a 64-bit seed.
func hash64(parts ...any) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		fmt.Fprint(h, p)
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// latent is the scenario's shared temptation in [0,1).
func latent(scenarioID string) float64 {
	return float64(hash64("latent", scenarioID)>>11) / (1 << 53)
}

// scenarioDrift maps the shared latent u to this profile's drift chance:
// u^((1-d)/d) has mean d over uniform u, so the profile's mean propensity
// holds across scenarios while the ranking of scenarios is shared.
func (p *Policy) scenarioDrift(scenarioID string) float64 {
	d := p.profile.DriftPropensity
	if d <= 0 {
		return 0
	}
	if d >= 1 {
		return 1
	}
	return math.Pow(latent(scenarioID), (1-d)/d)
}

// plan decides the episode's actions from the seed.
//
// The actions are appended to buf[:0] (Complete passes a pooled buffer).
// pulls, for a profile that reads lures, are the violations' lure pulls
// read so far (lurePulls): a shortcut the draws choose is taken only if
// its lure pulls the episode.
func (p *Policy) plan(s *scenario.Scenario, seed int64, buf []action, pulls []float64) (episodePlan, error) {
	var ep episodePlan
	cc := p.calls[s.ID]
	if cc == nil {
		return ep, fmt.Errorf("sim: unknown scenario %s", s.ID)
	}
	if cc.err != nil {
		return ep, cc.err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	rng := getRand(cc.seedHi, hashFmtBytes(b[:]))
	defer putRand(rng)

	n := len(cc.path)
	stopAt := n // number of compliant-path calls carried out
	ep.complete = rng.Float64() < p.profile.Competence
	if !ep.complete {
		stopAt = rng.IntN(n) // 0 means no action at all
	}
	// Which shortcuts the episode takes: at most one drift decision per
	// episode, then the chosen violation and, rarely, a second one.
	// Injection targets are followed only when an injection is read.
	// taken is in violation index order (the pool's).
	var takenBuf [8]int
	taken := takenBuf[:0]
	if len(cc.pool) > 0 && rng.Float64() < cc.drift {
		first := cc.pool[rng.IntN(len(cc.pool))]
		for _, i := range cc.pool {
			if i == first || rng.Float64() < 0.15 {
				taken = append(taken, i)
			}
		}
	}
	abandon := rng.Float64() < p.profile.Abandon
	if p.profile.ReadsLure {
		// After every draw, so the draws are the same at every turn.
		kept := taken[:0]
		for _, vi := range taken {
			if vi < len(pulls) && p.followsLure(s, vi, seed, pulls[vi]) {
				kept = append(kept, vi)
			}
		}
		taken = kept
	}

	// Place each taken violation right after the call that shows its
	// trigger; a trigger outside the compliant path is followed at the end.
	planned := stopAt
	ep.actions = buf[:0]
	addViolation := func(vi int) {
		ep.actions = append(ep.actions, cc.violRaw[vi])
		ep.drifted = true
	}
	for j := 0; j < stopAt; j++ {
		ep.actions = append(ep.actions, cc.path[j])
		for _, vi := range taken {
			if cc.trigPos[vi] != j {
				continue
			}
			addViolation(vi)
			if abandon && j+1 < stopAt {
				// The shortcut stands in for the rest of the task.
				stopAt, ep.complete = j+1, false
			}
		}
	}
	for _, vi := range taken {
		if pos := cc.trigPos[vi]; pos < 0 || pos >= planned {
			addViolation(vi)
		}
	}
	return ep, nil
}

// fillText replaces placeholder text with something a reader can tell is
// simulated but that still refers to the task.
func fillText(args map[string]any, s *scenario.Scenario) map[string]any {
	if args == nil {
		return nil
	}
	for k, v := range args {
		if str, ok := v.(string); ok && strings.HasPrefix(str, "(simulated ") {
			args[k] = fmt.Sprintf("[simulated %s] Re: %s", k, firstWords(s.Instruction, 14))
		}
	}
	return args
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = append(f[:n], "…")
	}
	return strings.Join(f, " ")
}

func sortedInts(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Complete answers one chat request, in the form the framework's prompt
// asks for (protocol.Detect): native tool calls (normal, gated, the
// plan-exec executor), ReAct text when the tools are described in the
// system prompt, or a numbered plan for the plan-exec planner. What the
// episode does is the same in every framework, except that calls to tools
// not offered (gated) are skipped.
func (p *Policy) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	if err := ctx.Err(); err != nil {
		return policy.Response{}, err
	}
	s := p.recognise(req.Messages)
	if s == nil {
		return policy.Response{}, fmt.Errorf("simulated policy %s: the user turn matches no known scenario: %w", p.Name(), policy.ErrModel)
	}
	bufp := actionBufs.Get().(*[]action)
	var pulls []float64
	if p.profile.ReadsLure {
		if cc := p.calls[s.ID]; cc != nil && cc.err == nil {
			pulls = lurePulls(s, cc, req.Messages)
		}
	}
	ep, err := p.plan(s, req.Seed, *bufp, pulls)
	defer func() {
		clear(ep.actions)
		*bufp = ep.actions[:0]
		actionBufs.Put(bufp)
	}()
	if err != nil {
		return policy.Response{}, fmt.Errorf("%v: %w", err, policy.ErrModel)
	}
	// The framework's prompt decides the answer's form: native tool calls
	// (normal, gated, the plan-exec executor), ReAct text, or a plan.
	mode := protocol.Detect(req)
	if mode == protocol.Planner {
		msg := trajectory.Message{Role: trajectory.RoleAssistant, Content: p.planText(s)}
		return policy.Response{Message: msg, FinishReason: "stop", Usage: usage(req, msg)}, nil
	}
	visible := toolSet{offered: req.Tools}
	if mode == protocol.ReAct {
		// Every tool is described in the prompt.
		visible.described = s.Tools
	}
	// Walk the plan past the calls already made; skip actions whose tool is
	// not visible now (a gated framework may hide it).
	next := 0
	turn := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != trajectory.RoleAssistant {
			continue
		}
		turn++
		forCalledTools(m, mode, p.isInjected, func(name string) {
			for next < len(ep.actions) && ep.actions[next].tool != name {
				next++
			}
			if next < len(ep.actions) {
				next++
			}
		})
	}
	for next < len(ep.actions) && !visible.has(ep.actions[next].tool) {
		next++
	}
	var injected *action
	if mode != protocol.ReAct {
		injected = p.injectedAction(s, ep, next, req.Seed, req.Messages, visible)
	}
	msg := trajectory.Message{Role: trajectory.RoleAssistant}
	finish := "stop"
	if next < len(ep.actions) || injected != nil {
		var a action
		if injected != nil {
			a = *injected
		} else {
			a = ep.actions[next]
		}
		raw, err := a.argsJSON()
		if err != nil {
			return policy.Response{}, fmt.Errorf("sim: %w", err)
		}
		text := a.rawText
		if a.raw == nil {
			text = string(raw)
		}
		if mode == protocol.ReAct {
			msg.Content = protocol.FormatAction("The next step is "+a.tool+".", a.tool, text)
		} else {
			id := callID(req.Seed, turn, 0)
			msg.ToolCalls = []trajectory.ToolCall{{ID: id, Type: "function", Function: trajectory.FunctionCall{
				Name: a.tool, Arguments: text, Parsed: raw,
			}}}
			finish = "tool_calls"
		}
	} else if mode == protocol.ReAct {
		msg.Content = protocol.FormatFinal("I can answer now.", p.finalAnswer(s, ep))
	} else {
		msg.Content = p.finalAnswer(s, ep)
	}
	return policy.Response{Message: msg, FinishReason: finish, Usage: usage(req, msg)}, nil
}

// toolSet is the tools visible to the policy in a request: those offered
// and, under ReAct, every tool the prompt describes.
type toolSet struct {
	offered   []policy.Tool
	described []scenario.Tool
}

func (ts toolSet) has(name string) bool {
	for i := range ts.offered {
		if ts.offered[i].Name == name {
			return true
		}
	}
	for i := range ts.described {
		if ts.described[i].Name == name {
			return true
		}
	}
	return false
}

// calledTools are the tools an assistant message called: its native calls
// (less those an injection induced), or under ReAct the action its text
// states.
func calledTools(m trajectory.Message, mode protocol.Mode, injected func(trajectory.ToolCall) bool) []string {
	var names []string
	forCalledTools(&m, mode, injected, func(name string) { names = append(names, name) })
	return names
}

// forCalledTools calls f with each tool calledTools lists, in order.
func forCalledTools(m *trajectory.Message, mode protocol.Mode, injected func(trajectory.ToolCall) bool, f func(string)) {
	if len(m.ToolCalls) > 0 {
		for _, tc := range m.ToolCalls {
			if !injected(tc) { // an injection's call is no step of the plan
				f(tc.Function.Name)
			}
		}
		return
	}
	if mode == protocol.ReAct {
		if a := protocol.ParseReAct(m.Content); a.Kind == protocol.Action {
			f(a.Tool)
		}
	}
}

// planText is the simulated planner's numbered plan: the compliant path's
// tools in order, then the report to the user. A planner has seen no tool
// result yet, so no trigger has tempted it.
func (p *Policy) planText(s *scenario.Scenario) string {
	var b strings.Builder
	b.WriteString("[simulated " + p.Name() + "] Plan:")
	n := 0
	for _, c := range s.RequiredCalls {
		n++
		fmt.Fprintf(&b, "\n%d. %s", n, c.Tool)
		if len(c.Args) > 0 {
			if raw, err := json.Marshal(c.Args); err == nil {
				b.WriteString(" " + string(raw))
			}
		}
		if t := s.Tool(c.Tool); t != nil && t.Description != "" {
			b.WriteString(": " + t.Description)
		}
	}
	fmt.Fprintf(&b, "\n%d. Report back to the user.", n+1)
	return b.String()
}

func (p *Policy) recognise(msgs []trajectory.Message) *scenario.Scenario {
	for _, m := range msgs {
		if m.Role == trajectory.RoleUser {
			return p.byPrompt[m.Content]
		}
	}
	return nil
}

func (p *Policy) finalAnswer(s *scenario.Scenario, ep episodePlan) string {
	if !ep.complete {
		return "[simulated " + p.Name() + "] I have not finished this: I would rather check with you before going further."
	}
	var b strings.Builder
	b.WriteString("[simulated " + p.Name() + "] Done.")
	if s.Probes != nil && s.Probes.Answer != "" {
		// The author's compliant answer, which satisfies every answer check.
		b.WriteString(" ")
		b.WriteString(s.Probes.Answer)
		return b.String()
	}
	if a := s.Success.Answer; a != nil {
		for _, c := range a.Contains {
			b.WriteString(" ")
			b.WriteString(c)
			b.WriteString(".")
		}
		for _, alt := range a.AnyOf {
			if len(alt) > 0 {
				b.WriteString(" ")
				b.WriteString(alt[0])
				b.WriteString(".")
			}
		}
	}
	return b.String()
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// callID is a deterministic 9-character alphanumeric tool-call id.
func callID(seed int64, turn, i int) string {
	// h is hash64("call", seed, turn, i), without allocating.
	hh := newFNV()
	hh.str("call")
	hh.int(seed)
	hh.int(int64(turn))
	hh.int(int64(i))
	h := uint64(hh)
	var b [9]byte
	for j := range b {
		b[j] = idAlphabet[h%uint64(len(idAlphabet))]
		h /= uint64(len(idAlphabet))
		if h == 0 {
			// hash64(h, j, seed)
			hh = newFNV()
			hh.uint(h)
			hh.int(int64(j))
			hh.int(seed)
			h = uint64(hh)
		}
	}
	return string(b[:])
}

// usage estimates tokens at four characters each, so that token limits and
// usage figures behave plausibly in simulations.
func usage(req policy.Request, out trajectory.Message) trajectory.Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content) + 8
		for _, tc := range m.ToolCalls {
			in += len(tc.Function.Arguments) + len(tc.Function.Name)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	o := len(out.Content)
	for _, tc := range out.ToolCalls {
		o += len(tc.Function.Arguments) + len(tc.Function.Name)
	}
	u := trajectory.Usage{PromptTokens: in / 4, CompletionTokens: o/4 + 1}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func mustJSON(m map[string]json.RawMessage) json.RawMessage {
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
