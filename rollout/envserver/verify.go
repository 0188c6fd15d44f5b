package envserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Script is a policy that answers with fixed assistant turns, in order:
// a trajectory's turns replayed, or a test's scripted actions. One Script
// serves one episode.
type Script struct {
	mu    sync.Mutex
	turns []policy.Response
	next  int
}

// NewScript is a policy answering with the given turns.
func NewScript(turns []policy.Response) *Script { return &Script{turns: turns} }

// ScriptOf is the script of a list of actions, as the server would turn
// them into assistant turns.
func ScriptOf(actions []Action) (*Script, error) {
	turns := make([]policy.Response, len(actions))
	for i, a := range actions {
		r, err := a.response(i)
		if err != nil {
			return nil, fmt.Errorf("actions[%d]: %w", i, err)
		}
		turns[i] = r
	}
	return NewScript(turns), nil
}

// Complete returns the next turn; past the last one the episode ends as a
// model error (the trajectory stops before the episode would).
func (s *Script) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.turns) {
		return policy.Response{}, fmt.Errorf("%w: the trajectory has no assistant turn %d (it stops before a final answer)", policy.ErrModel, s.next+1)
	}
	r := s.turns[s.next]
	s.next++
	return r, nil
}

// Left is the number of turns not asked for.
func (s *Script) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turns) - s.next
}

// Mismatch is a recorded tool result that differs from what the mock
// environment returns for the same call at the same point.
type Mismatch struct {
	Turn       int    `json:"turn"`    // assistant turn ordinal (0-based)
	Message    int    `json:"message"` // index in the trace's messages (-1: the trace has none)
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
	Recorded   string `json:"recorded"`
	Mock       string `json:"mock"` // "" when the mock never ran the call
	Why        string `json:"why"`
}

// Verdict is the result of replaying a trace.
type Verdict struct {
	ScenarioID string `json:"scenario_id"`
	// Consistent: the prompts are the scenario's, every recorded tool
	// result is the mock's, and every assistant turn was replayed; the
	// labels then describe what the agent did in what it saw.
	Consistent bool               `json:"consistent"`
	Mismatches []Mismatch         `json:"mismatches"`
	Notes      []string           `json:"notes,omitempty"`
	Labels     *Labels            `json:"labels"`
	Rewards    *Rewards           `json:"rewards,omitempty"`
	Record     *trajectory.Record `json:"record"`
}

// ReplayConfig sets the episode a trace is replayed as.
type ReplayConfig struct {
	Engine  engine.Config // framework, filter, limits, checkpoint, version
	Run     string
	Rollout int
	Seed    int64 // used when the trace has none
	// Protocol ends the recorded policy name (client:POLICY/PROTOCOL).
	Protocol string
}

// Replay runs a trace's assistant turns through the scenario's mock
// environment with the engine's own loop, labels the result, and compares
// the trace's tool results with the mock's.
func Replay(sc *agent.Scenario, tr Trace, rc ReplayConfig) (*Verdict, error) {
	msgs, err := tr.parseMessages()
	if err != nil {
		return nil, err
	}
	if tr.ScenarioID != sc.S.ID {
		return nil, fmt.Errorf("%w: scenario_id %q, replayed against %q", ErrBadTrace, tr.ScenarioID, sc.S.ID)
	}
	finish := map[int]trajectory.Step{}
	for _, st := range tr.Steps {
		finish[st.Turn] = st
	}
	var turns []policy.Response
	for i, m := range msgs {
		if m.Role != trajectory.RoleAssistant {
			continue
		}
		r := policy.Response{Message: m, FinishReason: "stop"}
		if len(m.ToolCalls) > 0 {
			r.FinishReason = "tool_calls"
		}
		if st, ok := finish[i]; ok {
			if st.FinishReason != "" {
				r.FinishReason = st.FinishReason
			}
			if st.Usage != nil {
				r.Usage = *st.Usage
			}
		}
		turns = append(turns, r)
	}
	seed := rc.Seed
	if tr.Seed != nil {
		seed = *tr.Seed
	}
	cfg := rc.Engine
	if cfg.Framework == "" {
		cfg.Framework = engine.FrameworkNormal
	}
	script := NewScript(turns)
	cfg.Policy = script
	cfg.PolicyName = PolicyName(cleanClient(strings.TrimPrefix(tr.Policy, "client:")), rc.Protocol)
	p := engine.Planned{Scenario: sc.S, Rollout: rc.Rollout, Seed: seed,
		TrajID: trajectory.TrajID(rc.Run, cfg.Checkpoint, cfg.Framework, sc.S.ID, rc.Rollout, seed)}
	rec, _, err := engine.RunOne(context.Background(), cfg, rc.Run, sc, p)
	if err != nil {
		return nil, fmt.Errorf("envserver: replay %s: %w", sc.S.ID, err)
	}
	v := &Verdict{ScenarioID: sc.S.ID, Record: rec, Labels: labelsOf(rec), Mismatches: []Mismatch{}}
	v.Notes = append(v.Notes, promptNotes(msgs, rec.Messages)...)
	v.Mismatches = compareResults(msgs, rec.Messages)
	if n := script.Left(); n > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d assistant turn(s) of the trace were not replayed: the episode ended first (status %s)", n, rec.Status))
	}
	if rec.Status == trajectory.StatusModelError && script.Left() == 0 {
		v.Notes = append(v.Notes, "the trace stops before a final answer")
	}
	v.Consistent = len(v.Mismatches) == 0 && len(v.Notes) == 0
	return v, nil
}

// promptNotes compares the trace's system and first user message with the
// scenario's (as the replay sent them).
func promptNotes(trace, replay []trajectory.Message) []string {
	var out []string
	first := func(ms []trajectory.Message, role string) (string, bool) {
		for _, m := range ms {
			if m.Role == role {
				return m.Content, true
			}
			if m.Role == trajectory.RoleAssistant {
				break
			}
		}
		return "", false
	}
	for _, role := range []string{trajectory.RoleSystem, trajectory.RoleUser} {
		a, okA := first(trace, role)
		b, okB := first(replay, role)
		if okA != okB || a != b {
			out = append(out, fmt.Sprintf("the trace's %s prompt differs from the scenario's", role))
		}
	}
	return out
}

// resultKey places a tool result: the assistant turn it answers and its
// call id (ids may repeat across turns, never within one).
type resultKey struct {
	turn int
	id   string
}

type placed struct {
	msg   trajectory.Message
	index int
}

func toolResults(msgs []trajectory.Message) (map[resultKey]placed, []resultKey) {
	out := map[resultKey]placed{}
	var order []resultKey
	turn := -1
	for i, m := range msgs {
		switch m.Role {
		case trajectory.RoleAssistant:
			turn++
		case trajectory.RoleTool:
			k := resultKey{turn, m.ToolCallID}
			if _, dup := out[k]; !dup {
				order = append(order, k)
			}
			out[k] = placed{m, i}
		}
	}
	return out, order
}

// compareResults lists the trace's tool results that the mock's differ
// from (compared as JSON values when both parse), and the mock's results
// the trace lacks.
func compareResults(trace, replay []trajectory.Message) []Mismatch {
	got, order := toolResults(trace)
	want, wantOrder := toolResults(replay)
	out := []Mismatch{}
	for _, k := range order {
		t := got[k]
		r, ok := want[k]
		switch {
		case !ok:
			out = append(out, Mismatch{Turn: k.turn, Message: t.index, ToolCallID: k.id, Tool: t.msg.Name, Recorded: t.msg.Content,
				Why: "the mock never ran this call (the replayed episode ended before it, or the turn made no such call)"})
		case !sameJSON(t.msg.Content, r.msg.Content):
			out = append(out, Mismatch{Turn: k.turn, Message: t.index, ToolCallID: k.id, Tool: r.msg.Name, Recorded: t.msg.Content, Mock: r.msg.Content,
				Why: "the recorded result differs from the mock's"})
		}
	}
	for _, k := range wantOrder {
		if _, ok := got[k]; !ok {
			r := want[k]
			out = append(out, Mismatch{Turn: k.turn, Message: -1, ToolCallID: k.id, Tool: r.msg.Name, Mock: r.msg.Content,
				Why: "the trace has no result for this call"})
		}
	}
	return out
}

// sameJSON compares two tool results as JSON values, or as text when
// either is not JSON.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// verifyRequest is POST /verify's body: a trace, and dry_run to label
// without writing the record.
type verifyRequest struct {
	Trace
	DryRun bool `json:"dry_run,omitempty"`
}

// handleVerify replays a posted trace, writes its labelled record (unless
// dry_run) and answers the verdict.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	// Lenient: a trace may carry fields of its own (a whole record does).
	var req verifyRequest
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(b, &req)
	}
	if err != nil {
		httpError(w, fmt.Errorf("%w: body: %v", ErrBadTrace, err))
		return
	}
	v, err := s.Verify(req.Trace, req.DryRun)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// Verify replays a trace against a served scenario and, unless dryRun,
// records it (a rollout index of the scenario's counter).
func (s *Server) Verify(tr Trace, dryRun bool) (*Verdict, error) {
	sc := s.byID[tr.ScenarioID]
	if sc == nil {
		if tr.ScenarioID == "" {
			return nil, fmt.Errorf("%w: scenario_id is missing", ErrBadTrace)
		}
		return nil, fmt.Errorf("%w: unknown scenario_id %q", ErrBadTrace, tr.ScenarioID)
	}
	s.mu.Lock()
	rollout := s.next[sc.S.ID]
	if !dryRun {
		s.next[sc.S.ID]++
	}
	s.mu.Unlock()
	if s.counter != nil && !dryRun {
		r, err := s.counter.Next(sc.S.ID)
		if err != nil {
			return nil, fmt.Errorf("envserver: rollout index of %s: %w", sc.S.ID, err)
		}
		rollout = r
	}
	v, err := Replay(sc, tr, ReplayConfig{Engine: s.engineConfig(), Run: s.runName, Rollout: rollout,
		Seed: engine.EpisodeSeed(s.cfg.Seed, sc.S.ID, rollout), Protocol: "verify"})
	if err != nil {
		return nil, err
	}
	if v.Record.Status != trajectory.StatusInfraError {
		if v.Rewards, err = s.rewardsOf(v.Record, true); err != nil {
			return nil, err
		}
	}
	if !dryRun {
		if err := s.write(v.Record); err != nil {
			return nil, err
		}
	}
	return v, nil
}
