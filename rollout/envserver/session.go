package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Protocols a session can come through (recorded in the policy name).
const (
	ProtoHTTP = "http"
	ProtoWS   = "ws"
	ProtoMCP  = "mcp"
)

// Errors callers branch on (HTTP status, WebSocket code, MCP error).
var (
	// ErrCapacity: --max-sessions sessions are open (OpenEnv's
	// CAPACITY_REACHED).
	ErrCapacity = errors.New("CAPACITY_REACHED")
	// ErrEnded: a step after the episode ended.
	ErrEnded = errors.New("the episode has ended")
	// ErrNoSession: no open episode has that id.
	ErrNoSession = errors.New("no such episode")
	// ErrBadReset: a reset names an unknown scenario or task, or a bad seed.
	ErrBadReset = errors.New("invalid reset")
)

// Observation is what the client's model sees before its next turn, and at
// the end the episode's labels and rewards.
type Observation struct {
	EpisodeID  string `json:"episode_id"`
	TrajID     string `json:"traj_id"`
	ScenarioID string `json:"scenario_id"`
	// Step counts the assistant turns taken so far.
	Step int `json:"step"`
	// Messages is the conversation as the episode's next request holds it:
	// system prompt, user turn, the turns so far and their tool results.
	Messages []trajectory.Message `json:"messages"`
	// Tools are the tools visible at this step (OpenAI function schemas);
	// empty for the text frameworks, whose prompt describes them.
	Tools []json.RawMessage `json:"tools"`
	// ToolResults answer the last action's calls, in call order.
	ToolResults []trajectory.Message `json:"tool_results,omitempty"`
	// Errors say what was wrong with the last action's calls (unknown tool,
	// tool not offered, invalid arguments): each call was still recorded,
	// as a model's would be, and answered with a tool error.
	Errors []string `json:"errors,omitempty"`
	// Done, Labels and Rewards are set when the episode has ended.
	Done    bool     `json:"done"`
	Labels  *Labels  `json:"labels,omitempty"`
	Rewards *Rewards `json:"rewards,omitempty"`
}

// Labels are the record's labels, as rollout writes them.
type Labels struct {
	Status     trajectory.Status    `json:"status"`
	Error      string               `json:"error,omitempty"`
	Success    bool                 `json:"success"`
	Judge      trajectory.Judgement `json:"judge"`
	Drift      bool                 `json:"drift"`
	DriftSteps []int                `json:"drift_steps"`
	Matches    []drift.Match        `json:"drift_matches"`
}

func labelsOf(rec *trajectory.Record) *Labels {
	return &Labels{Status: rec.Status, Error: rec.Error, Success: rec.Success, Judge: rec.Judge,
		Drift: rec.Drift, DriftSteps: rec.DriftSteps, Matches: rec.Matches}
}

// session is one episode in progress: the engine's loop runs in its own
// goroutine with the session as its policy (Complete), and every client
// operation hands it one turn and waits for the next request or the end.
type session struct {
	srv      *Server
	id       string
	protocol string
	sc       *agent.Scenario
	planned  engine.Planned
	process  bool // per-turn process rewards at the end

	client atomic.Pointer[string]
	last   atomic.Int64 // unix nanoseconds of the last client operation

	mu       sync.Mutex // one client operation at a time
	reqs     chan policy.Request
	acts     chan policy.Response
	finished chan outcome
	gone     chan struct{} // closed when the client left
	goneOnce sync.Once
	goneWhy  string
	cur      *policy.Request // the request the client is answering
	steps    int
	final    *Observation // set once the episode has ended
	slot     bool         // holds a --max-sessions slot
}

type outcome struct {
	rec *trajectory.Record
	err error
}

// Complete is the client's turn, for the episode loop: the request goes out
// as an observation and the loop waits for the client's action. A client
// that left ends the episode as an infrastructure error.
func (s *session) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	select {
	case s.reqs <- req:
	case <-s.gone:
		return policy.Response{}, s.leftErr()
	case <-ctx.Done():
		return policy.Response{}, ctx.Err()
	}
	select {
	case a := <-s.acts:
		return a, nil
	case <-s.gone:
		return policy.Response{}, s.leftErr()
	case <-ctx.Done():
		return policy.Response{}, ctx.Err()
	}
}

func (s *session) leftErr() error {
	return fmt.Errorf("%w: the client left mid-episode (%s)", policy.ErrInfra, s.goneWhy)
}

func (s *session) touch() { s.last.Store(time.Now().UnixNano()) }

func (s *session) clientName() string {
	if p := s.client.Load(); p != nil {
		return *p
	}
	return "anonymous"
}

// start runs the episode loop and returns the first observation.
func (s *session) start() (*Observation, error) {
	cfg := s.srv.engineConfig()
	cfg.Policy = s
	go func() {
		// Not the server's context: a shutdown abandons sessions (gone), so
		// that every started episode still ends in a record.
		rec, _, err := engine.RunOne(context.Background(), cfg, s.srv.runName, s.sc, s.planned)
		s.finished <- outcome{rec, err}
	}()
	return s.wait(nil)
}

// step hands the loop one action and returns what follows it.
func (s *session) step(a Action) (*Observation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	if s.final != nil {
		return nil, fmt.Errorf("%w: episode %s ended with status %s; reset to start another", ErrEnded, s.id, s.final.Labels.Status)
	}
	resp, err := a.response(s.steps)
	if err != nil {
		return nil, err
	}
	prev := s.cur
	s.steps++
	s.acts <- resp
	obs, err := s.wait(&resp)
	if err != nil {
		return nil, err
	}
	obs.Errors = callErrors(s.sc, prev, resp.Message, obs.ToolResults)
	return obs, nil
}

// wait reads what the loop does next: another request (an observation), or
// the end of the episode (the record written, labels and rewards).
func (s *session) wait(sent *policy.Response) (*Observation, error) {
	select {
	case req := <-s.reqs:
		s.cur = &req
		obs := s.observe(req)
		if sent != nil {
			obs.ToolResults = lastResults(req.Messages, len(sent.Message.ToolCalls))
		}
		return obs, nil
	case out := <-s.finished:
		return s.finish(out, sent)
	}
}

// observe is the observation of a request.
func (s *session) observe(req policy.Request) *Observation {
	obs := &Observation{EpisodeID: s.id, TrajID: s.planned.TrajID, ScenarioID: s.sc.S.ID, Step: s.steps,
		Messages: req.Messages, Tools: make([]json.RawMessage, 0, len(req.Tools))}
	wire := s.srv.wire[s.sc.S.ID]
	for _, t := range req.Tools {
		b, ok := wire[t.Name]
		if !ok { // not a scenario tool: cannot happen with the engine's loops
			b, _ = json.Marshal(map[string]any{"type": "function", "function": t})
		}
		obs.Tools = append(obs.Tools, b)
	}
	return obs
}

// finish records the ended episode and builds the final observation.
func (s *session) finish(out outcome, sent *policy.Response) (*Observation, error) {
	defer s.srv.release(s)
	if out.err != nil {
		// No record: only a broken engine gets here (the context is never
		// cancelled); say so rather than pretend the episode ended.
		s.final = &Observation{EpisodeID: s.id, Done: true, Labels: &Labels{Status: trajectory.StatusInfraError, Error: out.err.Error()}}
		return nil, fmt.Errorf("envserver: episode %s: %w", s.id, out.err)
	}
	rec := out.rec
	rec.Policy = PolicyName(s.clientName(), s.protocol)
	if err := s.srv.write(rec); err != nil {
		s.final = &Observation{EpisodeID: s.id, Done: true, Labels: labelsOf(rec)}
		return nil, err
	}
	obs := &Observation{EpisodeID: s.id, TrajID: rec.TrajID, ScenarioID: rec.ScenarioID, Step: s.steps,
		Messages: rec.Messages, Tools: rec.Tools, Done: true, Labels: labelsOf(rec)}
	if obs.Tools == nil {
		obs.Tools = []json.RawMessage{}
	}
	if sent != nil && rec.Status != trajectory.StatusInfraError {
		obs.ToolResults = lastResults(rec.Messages, len(sent.Message.ToolCalls))
	}
	if rec.Status != trajectory.StatusInfraError {
		rw, err := s.srv.rewardsOf(rec, s.process)
		if err != nil {
			return nil, err
		}
		obs.Rewards = rw
	}
	s.final = obs
	return obs, nil
}

// leave ends the episode because the client went away (closed the
// connection, reset, idled out, or the server is shutting down): the loop
// ends as an infrastructure error and the record goes to errors/.
func (s *session) leave(why string) {
	s.goneOnce.Do(func() {
		s.goneWhy = why
		close(s.gone)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final != nil {
		return
	}
	for {
		select {
		case <-s.reqs: // a request nobody will answer: the loop then sees gone
		case out := <-s.finished:
			s.finish(out, nil) //nolint:errcheck // the client is gone; write errors surface in the server's log
			return
		}
	}
}

// state is the session's OpenEnv State.
func (s *session) state() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := map[string]any{"episode_id": s.id, "step_count": s.steps, "traj_id": s.planned.TrajID,
		"scenario_id": s.sc.S.ID, "rollout": s.planned.Rollout, "seed": s.planned.Seed,
		"protocol": s.protocol, "client": s.clientName(), "done": s.final != nil}
	if s.final != nil && s.final.Labels != nil {
		st["status"] = s.final.Labels.Status
	}
	return st
}

// lastResults are the tool messages answering the last n calls.
func lastResults(msgs []trajectory.Message, n int) []trajectory.Message {
	if n == 0 {
		return nil
	}
	var out []trajectory.Message
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == trajectory.RoleTool; i-- {
		out = append(out, msgs[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// callErrors explains the calls of a turn that the environment refused.
// They were recorded as the model's attempts (a call to an undefined tool is
// boundary drift); the client learns why each failed.
func callErrors(sc *agent.Scenario, prev *policy.Request, msg trajectory.Message, results []trajectory.Message) []string {
	var out []string
	offered := map[string]bool{}
	if prev != nil {
		for _, t := range prev.Tools {
			offered[t.Name] = true
		}
	}
	content := map[string]string{}
	for _, r := range results {
		content[r.ToolCallID] = r.Content
	}
	for _, tc := range msg.ToolCalls {
		name := tc.Function.Name
		switch {
		case sc.S.Tool(name) == nil:
			out = append(out, fmt.Sprintf("unknown tool %q: the scenario has no such tool (recorded as a call outside the boundary)", name))
		case prev != nil && prev.Tools != nil && !offered[name]:
			out = append(out, fmt.Sprintf("tool %q was not offered at this step (recorded as an attempt)", name))
		case tc.Function.ArgsError != "":
			out = append(out, fmt.Sprintf("invalid arguments for %s: %s", name, tc.Function.ArgsError))
		default:
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal([]byte(content[tc.ID]), &e) == nil && strings.HasPrefix(e.Error, "invalid arguments for "+name+":") {
				out = append(out, e.Error)
			}
		}
	}
	return out
}

// PolicyName is the recorded policy of a served episode: the client's name
// and the protocol it came through.
func PolicyName(client, protocol string) string {
	return "client:" + client + "/" + protocol
}
