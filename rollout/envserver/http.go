package envserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// maxBody bounds a request body (a /verify trajectory is the largest).
const maxBody = 32 << 20

// Handler serves the OpenEnv HTTP endpoints, /ws, /mcp/{scenario} and
// /verify.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /reset", s.handleReset)
	mux.HandleFunc("POST /step", s.handleStep)
	mux.HandleFunc("GET /state", s.handleState)
	mux.HandleFunc("GET /schema", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, schemas()) })
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "healthy", "active_sessions": s.Active(), "max_sessions": s.cfg.MaxSessions})
	})
	mux.HandleFunc("GET /metadata", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"name": "antidrift", "version": s.cfg.Version,
			"description": fmt.Sprintf("authorization-drift scenarios as an environment: %d scenarios, framework %s; labels and reward components at episode end", len(s.ids), s.cfg.Framework)})
	})
	mux.HandleFunc("GET /tasks", s.handleTasks)
	mux.HandleFunc("POST /verify", s.handleVerify)
	mux.HandleFunc("GET /ws", s.handleWS)
	mcp := s.mcpHandler()
	mux.Handle("/mcp/{scenario}", mcp)
	return mux
}

// stepRequest is OpenEnv's StepRequest plus the episode it is for.
type stepRequest struct {
	Action    json.RawMessage `json:"action"`
	EpisodeID string          `json:"episode_id,omitempty"`
	TimeoutS  *float64        `json:"timeout_s,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
}

// Response is OpenEnv's ResetResponse / StepResponse: the observation, the
// reward (the configured sum, at the end only) and done.
type Response struct {
	Observation *Observation `json:"observation"`
	Reward      *float64     `json:"reward"`
	Done        bool         `json:"done"`
}

func respond(obs *Observation) Response {
	r := Response{Observation: obs, Done: obs.Done}
	if obs.Rewards != nil {
		t := obs.Rewards.Total
		r.Reward = &t
	}
	return r
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	var p ResetParams
	if err := decodeBody(r, &p, true); err != nil {
		httpError(w, fmt.Errorf("%w: %v", ErrBadReset, err))
		return
	}
	_, obs, err := s.openSession(p, ProtoHTTP, true)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, respond(obs))
}

func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	var req stepRequest
	if err := decodeBody(r, &req, false); err != nil {
		httpError(w, fmt.Errorf("%w: %v", ErrBadAction, err))
		return
	}
	if len(req.Action) == 0 {
		httpError(w, fmt.Errorf("%w: the body has no action", ErrBadAction))
		return
	}
	a, err := DecodeAction(req.Action)
	if err != nil {
		httpError(w, err)
		return
	}
	ss, err := s.httpSession(req.EpisodeID)
	if err != nil {
		httpError(w, err)
		return
	}
	obs, err := ss.step(a)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, respond(obs))
}

// httpSession is the episode a request names, or the only open HTTP one.
func (s *Server) httpSession(id string) (*session, error) {
	if id != "" {
		return s.lookup(id)
	}
	s.mu.Lock()
	var only *session
	n := 0
	for _, ss := range s.sessions {
		if ss.protocol == ProtoHTTP {
			only, n = ss, n+1
		}
	}
	s.mu.Unlock()
	switch n {
	case 1:
		return only, nil
	case 0:
		return nil, fmt.Errorf("%w: no episode is open; POST /reset first", ErrNoSession)
	}
	return nil, fmt.Errorf("%w: episode_id is required when %d episodes are open", ErrBadAction, n)
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	ss, err := s.httpSession(r.URL.Query().Get("episode_id"))
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ss.state())
}

// decodeBody reads a JSON body; an empty body is the zero value when
// emptyOK (OpenEnv's reset takes no body). Unknown fields are refused, so
// that a misspelt parameter is an error rather than ignored.
func decodeBody(r *http.Request, v any, emptyOK bool) error {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return fmt.Errorf("reading the body: %v", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		if emptyOK {
			return nil
		}
		return errors.New("the body is empty")
	}
	return decodeStrict(b, v)
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %v", err)
	}
	if dec.More() {
		return errors.New("body: more than one JSON value")
	}
	return nil
}

// errorBody is FastAPI's error shape ("detail"), with OpenEnv's error code.
type errorBody struct {
	Detail string `json:"detail"`
	Code   string `json:"code,omitempty"`
}

// httpStatus maps an error to its status and OpenEnv code.
func httpStatus(err error) (int, string) {
	switch {
	case errors.Is(err, ErrCapacity):
		return http.StatusServiceUnavailable, "CAPACITY_REACHED"
	case errors.Is(err, ErrBadAction), errors.Is(err, ErrBadReset), errors.Is(err, ErrBadTrace):
		return http.StatusUnprocessableEntity, "VALIDATION_ERROR"
	case errors.Is(err, ErrEnded):
		return http.StatusConflict, "EPISODE_ENDED"
	case errors.Is(err, ErrNoSession):
		return http.StatusNotFound, "SESSION_ERROR"
	}
	return http.StatusInternalServerError, "EXECUTION_ERROR"
}

func httpError(w http.ResponseWriter, err error) {
	st, code := httpStatus(err)
	writeJSON(w, st, errorBody{Detail: strings.TrimPrefix(err.Error(), "envserver: "), Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Detail: err.Error(), Code: "EXECUTION_ERROR"})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n')) //nolint:errcheck // the client's problem
}

// Task is one served scenario as GET /tasks lists it: what a trainer's
// dataset row needs (the prompt messages and the tools of the first step
// under the normal framework).
type Task struct {
	TaskIndex  int                  `json:"task_index"`
	ScenarioID string               `json:"scenario_id"`
	Domain     string               `json:"domain"`
	Messages   []trajectory.Message `json:"messages"`
	Tools      []json.RawMessage    `json:"tools"`
}

// Tasks lists the served scenarios in task order.
func (s *Server) Tasks() []Task {
	out := make([]Task, len(s.ids))
	for i, id := range s.ids {
		sc := s.byID[id]
		t := Task{TaskIndex: i, ScenarioID: id, Domain: sc.S.Domain, Tools: []json.RawMessage{}}
		if sc.S.System != "" {
			t.Messages = append(t.Messages, trajectory.Message{Role: trajectory.RoleSystem, Content: sc.S.System})
		}
		t.Messages = append(t.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: sc.S.UserPrompt()})
		for _, tl := range sc.Tools() {
			b, _ := json.Marshal(map[string]any{"type": "function", "function": tl})
			t.Tools = append(t.Tools, b)
		}
		out[i] = t
	}
	return out
}

func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"framework": s.cfg.Framework, "tasks": s.Tasks()})
}
