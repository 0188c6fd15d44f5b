// Package fakeserver is an in-process OpenAI-compatible
// /v1/chat/completions server for tests. It validates every request the way
// the OpenAI API does for tool calling and refuses violations with HTTP 400,
// and it answers from a script or a handler, injecting the quirks and
// failures real servers (vLLM, SGLang, Ollama, llama.cpp, OpenAI) produce.
//
// Typical use:
//
//	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{
//		fakeserver.ToolCalls(fakeserver.Call{Name: "search", Arguments: `{"q":"x"}`}),
//		fakeserver.Text("done"),
//	}})
//	client := ... BaseURL: srv.URL() ...
//	require.Empty(t, srv.Violations())
package fakeserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Quirk is a deviation from the protocol that real servers commit in their
// answers; the client must tolerate each of them.
type Quirk uint

const (
	// ObjectArguments sends each call's arguments as a JSON object instead
	// of a string (Call.Arguments must then be valid JSON).
	ObjectArguments Quirk = 1 << iota
	// MissingIDs omits the tool-call "id".
	MissingIDs
	// EmptyIDs sends "id": "".
	EmptyIDs
	// NullContent sends "content": null (even with no tool calls).
	NullContent
	// StopWithToolCalls says finish_reason "stop" although there are calls.
	StopWithToolCalls
	// EOSFinish says finish_reason "eos".
	EOSFinish
	// MissingFinishReason omits finish_reason.
	MissingFinishReason
	// MissingUsage omits "usage".
	MissingUsage
	// MissingType omits the tool calls' "type".
	MissingType
)

// Call is one tool call of a scripted answer. Arguments is sent verbatim
// as the JSON string (so it may be invalid JSON or a non-object), or as an
// object with ObjectArguments.
type Call struct {
	ID        string // "" generates call_<n>
	Name      string
	Arguments string
}

// Reply is one scripted answer. The zero value answers with empty text.
type Reply struct {
	// A completion.
	Content      string
	ToolCalls    []Call
	FinishReason string            // "" → "tool_calls" with calls, else "stop"
	Usage        *trajectory.Usage // nil → made up from the request size
	Quirks       Quirk
	// Reasoning is the model's reasoning, sent as the Mode's family sends
	// it (reasoning_content, reasoning, or <think> in content).
	Reasoning string
	// Refusal is sent in the message's "refusal" field with null content,
	// as OpenAI does when a model declines (structured outputs and newer
	// chat models).
	Refusal string
	// Markup, when set, writes ToolCalls into content in that markup (see
	// RenderMarkup) with finish_reason "stop" and no structured call: the
	// server failed to parse the model's calls.
	Markup string

	reasoningField string // set by Mode.dress

	// A failure. Status != 0 answers with that status and Body (or an
	// OpenAI-style error built from ErrMessage, ErrType, ErrCode).
	Status     int
	Body       string
	ErrMessage string
	ErrType    string
	ErrCode    string
	RetryAfter string // Retry-After header, with any status

	// Timing and transport.
	Delay time.Duration // wait before answering (or until the client gives up)
	Hang  bool          // never answer: the client must time out
	Reset bool          // drop the TCP connection without an answer
}

// Request is a received request, decoded. Rejected requests are recorded
// too, with Rejection saying why.
type Request struct {
	Model       string
	Messages    []trajectory.Message
	Tools       []policy.Tool
	ToolChoice  string
	Temperature *float64
	Seed        *int64
	MaxTokens   int
	Header      http.Header
	Raw         []byte // the body as sent
	Rejection   string // why the request was refused with 400 ("" if it was not)
}

// Options configure a Server.
type Options struct {
	// APIKey, when set, must be presented as "Authorization: Bearer <key>";
	// otherwise the server answers 401 echoing the presented key, which
	// tests that clients redact keys from errors.
	APIKey string
	// Capacity, when > 0, answers 429 to requests beyond that many in
	// flight (without consuming a scripted reply).
	Capacity int
	// Script holds the replies served in order, one per valid request.
	Script []Reply
	// Handler, when set, answers every valid request instead of Script. It
	// is called concurrently.
	Handler func(*Request) Reply
	// Fallback answers valid requests once the script is exhausted; when
	// nil the server answers 500 "script exhausted".
	Fallback *Reply
	// Mode, when set, answers as one server family (see Mode).
	Mode *Mode
	// ModelName is the model /v1/models lists (default "m").
	ModelName string
	// TemperatureOptional accepts requests without a temperature (a Mode
	// with FixedTemperature implies it).
	TemperatureOptional bool
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	srv  *httptest.Server
	opts Options
	done chan struct{}

	mu          sync.Mutex
	script      []Reply
	requests    []*Request
	violations  []string
	inFlight    int
	maxInFlight int
	served      int
	healthPolls int
	busy        int // chat requests seen by Mode.Busy
	closeOnce   sync.Once
}

// New starts a server; Close it when done.
func New(opts Options) *Server {
	s := &Server{opts: opts, done: make(chan struct{}), script: append([]Reply(nil), opts.Script...)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Start starts a server that is closed when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	t.Cleanup(s.Close)
	return s
}

// URL is the base URL to give a client, ending in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Count is the number of HTTP requests received, whatever their fate.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Violations lists the protocol violations refused with 400, as
// "path: message". A correct client produces none.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// MaxInFlight is the largest number of admitted requests served at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// Served is the number of valid requests answered from the script,
// handler or fallback.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// HealthPolls is the number of GET /health requests received.
func (s *Server) HealthPolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthPolls
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		s.models(w)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/api/show" && s.opts.Mode != nil && s.opts.Mode.Family == FamilyOllama {
		s.showModel(w)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/health" {
		s.health(w)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", "")
		return
	}
	body, err := io.ReadAll(r.Body)
	req := decodeRequest(body, r.Header)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if err != nil {
		return // the client went away mid-body
	}

	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		presented := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided: "+presented+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key")
		return
	}
	optionalTemp := s.opts.TemperatureOptional || (s.opts.Mode != nil && s.opts.Mode.FixedTemperature)
	if v := validate(body, optionalTemp); v != nil {
		s.mu.Lock()
		req.Rejection = v.Error()
		s.violations = append(s.violations, v.Error())
		s.mu.Unlock()
		writeErrorParam(w, http.StatusBadRequest, v.Message, "invalid_request_error", "", v.Param)
		return
	}

	s.mu.Lock()
	loading := s.loading()
	s.mu.Unlock()
	if loading {
		writeError(w, http.StatusServiceUnavailable, "Loading model", "unavailable_error", "")
		return
	}
	if m := s.opts.Mode; m != nil && m.Busy > 0 {
		s.mu.Lock()
		busy := s.busy < m.Busy
		s.busy++
		s.mu.Unlock()
		if busy {
			s.serve(w, r, req, m.busyReply())
			return
		}
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw)
	if reply, refused := s.opts.Mode.refuse(req, raw); refused {
		s.serve(w, r, req, reply)
		return
	}

	s.mu.Lock()
	if s.opts.Capacity > 0 && s.inFlight >= s.opts.Capacity {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "Rate limit reached: too many concurrent requests", "requests", "rate_limit_exceeded")
		return
	}
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()

	reply, ok := s.next(req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "fakeserver: script exhausted", "server_error", "")
		return
	}
	s.serve(w, r, req, s.opts.Mode.dress(req, reply))
}

// next picks the reply for a valid request.
func (s *Server) next(req *Request) (Reply, bool) {
	if s.opts.Handler != nil {
		s.mu.Lock()
		s.served++
		s.mu.Unlock()
		return s.opts.Handler(req), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) > 0 {
		r := s.script[0]
		s.script = s.script[1:]
		s.served++
		return r, true
	}
	if s.opts.Fallback != nil {
		s.served++
		return *s.opts.Fallback, true
	}
	return Reply{}, false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, req *Request, reply Reply) {
	if reply.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-t.C:
		}
	}
	if reply.Reset {
		resetConnection(w)
		return
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(reply.Status)
			_, _ = w.Write([]byte(reply.Body))
			return
		}
		writeError(w, reply.Status, reply.ErrMessage, reply.ErrType, reply.ErrCode)
		return
	}
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(reply.Body))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.completion(req, reply))
}

// completion builds the response body, quirks included. Maps keep the
// quirks expressible (absent keys, objects where strings belong).
func (s *Server) completion(req *Request, reply Reply) map[string]any {
	q := reply.Quirks
	if reply.Markup != "" && len(reply.ToolCalls) > 0 {
		text := RenderMarkup(reply.Markup, reply.ToolCalls)
		if reply.Content != "" {
			text = reply.Content + "\n\n" + text
		}
		reply.Content, reply.ToolCalls = text, nil
		if reply.FinishReason == "" || reply.FinishReason == "tool_calls" {
			reply.FinishReason = "stop"
		}
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	if q&NullContent != 0 {
		msg["content"] = nil
	}
	if reply.Refusal != "" {
		msg["content"], msg["refusal"] = nil, reply.Refusal
	}
	if reply.Reasoning != "" {
		field := reply.reasoningField
		if field == "" {
			field = "reasoning_content"
		}
		msg[field] = reply.Reasoning
	}
	if len(reply.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range reply.ToolCalls {
			fn := map[string]any{"name": c.Name, "arguments": c.Arguments}
			if q&ObjectArguments != 0 {
				fn["arguments"] = json.RawMessage(c.Arguments)
			}
			call := map[string]any{"type": "function", "function": fn}
			switch {
			case q&MissingIDs != 0:
			case q&EmptyIDs != 0:
				call["id"] = ""
			case c.ID != "":
				call["id"] = c.ID
			default:
				call["id"] = fmt.Sprintf("call_%d_%d", len(req.Messages), i)
			}
			if q&MissingType != 0 {
				delete(call, "type")
			}
			calls = append(calls, call)
		}
		msg["tool_calls"] = calls
	}
	choice := map[string]any{"index": 0, "message": msg}
	finish := reply.FinishReason
	switch {
	case q&StopWithToolCalls != 0:
		finish = "stop"
	case q&EOSFinish != 0:
		finish = "eos"
	case finish == "" && len(reply.ToolCalls) > 0:
		finish = "tool_calls"
	case finish == "":
		finish = "stop"
	}
	if q&MissingFinishReason == 0 {
		choice["finish_reason"] = finish
	}
	out := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", len(req.Messages)),
		"object":  "chat.completion",
		"created": 0,
		"model":   req.Model,
		"choices": []any{choice},
	}
	if q&MissingUsage == 0 {
		u := reply.Usage
		if u == nil {
			u = madeUpUsage(req, reply)
		}
		out["usage"] = u
	}
	return out
}

// madeUpUsage: about four characters a token, deterministic.
func madeUpUsage(req *Request, reply Reply) *trajectory.Usage {
	prompt := 0
	for _, m := range req.Messages {
		prompt += 4 + len(m.Content)/4
		for _, c := range m.ToolCalls {
			prompt += len(c.Function.Arguments) / 4
		}
	}
	completion := 1 + len(reply.Content)/4
	for _, c := range reply.ToolCalls {
		completion += 4 + len(c.Arguments)/4
	}
	return &trajectory.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// resetConnection aborts the TCP connection with a RST, as a crashing
// server or a load balancer does.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

func writeError(w http.ResponseWriter, status int, message, typ, code string) {
	writeErrorParam(w, status, message, typ, code, "")
}

func writeErrorParam(w http.ResponseWriter, status int, message, typ, code, param string) {
	e := map[string]any{"message": message, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// decodeRequest decodes leniently; validity is validate's business.
func decodeRequest(body []byte, h http.Header) *Request {
	req := &Request{Raw: body, Header: h.Clone()}
	var wire struct {
		Model       string                           `json:"model"`
		Messages    []json.RawMessage                `json:"messages"`
		Tools       []struct{ Function policy.Tool } `json:"tools"`
		ToolChoice  json.RawMessage                  `json:"tool_choice"`
		Temperature *float64                         `json:"temperature"`
		Seed        *int64                           `json:"seed"`
		MaxTokens   int                              `json:"max_tokens"`
	}
	if json.Unmarshal(body, &wire) != nil {
		return req
	}
	req.Model, req.Temperature, req.Seed, req.MaxTokens = wire.Model, wire.Temperature, wire.Seed, wire.MaxTokens
	req.ToolChoice, _ = str(wire.ToolChoice)
	for _, t := range wire.Tools {
		req.Tools = append(req.Tools, t.Function)
	}
	for _, raw := range wire.Messages {
		var m trajectory.Message
		_ = json.Unmarshal(raw, &m) // arguments that are not strings stay empty
		req.Messages = append(req.Messages, m)
	}
	return req
}
