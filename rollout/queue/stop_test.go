package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/store"
)

// switchable serves the simulated policies, or refuses every request the
// way a misconfigured endpoint does, as the test says; it counts requests.
type switchable struct {
	refuse   atomic.Pointer[refusal]
	requests atomic.Int64
	inner    http.Handler
}

type refusal struct {
	status int
	body   string
}

func newSwitchable(t *testing.T) (*switchable, string) {
	s := &switchable{inner: sim.NewServer(testSuite(t), 0)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if rf := s.refuse.Load(); rf != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rf.status)
		_, _ = w.Write([]byte(rf.body))
		return
	}
	s.inner.ServeHTTP(w, r)
}

// queuedRun is the built-in suite, one rollout each, queued on a fresh
// server for two workers of 4 slots against the endpoint at url; run
// coordinates it (again, to resume) into dir.
func queuedRun(t *testing.T, url string) (run func() (engine.Summary, error), dir string) {
	return queuedSpec(t, spec{Policy: "openai:sim:base", BaseURL: url, Rollouts: 1, Seed: 9, Conc: 4}, nil)
}

// queuedSpec is queuedRun of any spec, mod setting the coordinator.
func queuedSpec(t *testing.T, sp spec, mod func(*Coordinator)) (run func() (engine.Summary, error), dir string) {
	ts := startTestServer(t)
	startWorkers(t, ts.url(), 2, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	dir = filepath.Join(t.TempDir(), "run")
	return func() (engine.Summary, error) { return coordinate(t, ctx, ts.url(), sp, dir, nil, mod) }, dir
}

// A fatal endpoint error (here a bad key) stops a queued run as it stops a
// local one: the coordinator returns at once naming the worker and the
// error, nothing is recorded, and the workers stop taking the run's items
// instead of burning their deliveries. Rerun once the endpoint is fixed,
// the same workers take the run again and finish it.
func TestFatalEndpointErrorStopsTheQueuedRun(t *testing.T) {
	ep, url := newSwitchable(t)
	ep.refuse.Store(&refusal{401, `{"error":{"message":"Invalid API key","type":"invalid_request_error"}}`})
	run, dir := queuedRun(t, url)
	sum, err := run() // before the change, this ran until its deadline
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("want the run stopped by the 401, got %v (%+v)", err, sum)
	}
	if sum.Ran != 0 {
		t.Errorf("%d records written for a refused endpoint", sum.Ran)
	}
	time.Sleep(3 * time.Second) // the workers' next polls: they must not take the run again
	before := ep.requests.Load()
	time.Sleep(3 * time.Second)
	if after := ep.requests.Load(); after != before {
		t.Errorf("the workers kept running the stopped run: %d more requests", after-before)
	}
	t.Logf("%d requests before the run stopped", before)
	if before > 3*2*4 { // a few fetches per worker slot at most; before the change it grew without end
		t.Errorf("%d requests to an endpoint refusing the key; want a few per worker slot", before)
	}

	ep.refuse.Store(nil)
	sum, err = run()
	if err != nil || sum.Ran != sum.Planned || sum.Statuses["model_error"] != 0 {
		t.Fatalf("rerun after the fix: %+v, %v", sum, err)
	}
	folderRecords(t, dir, sum.Planned)
}

// An endpoint refusing every request with a 4xx that is not known to be
// fatal (a parameter a gateway rejects) must not fill the run with
// model_error records: the workers' first-wave gate holds the refused
// episodes back and stops the run, as engine.Run does. Fixed and rerun,
// the run finishes with no model_error at all.
func TestEndpointRefusingEveryRequestStopsTheQueuedRun(t *testing.T) {
	if raceEnabled {
		// The stop travels the same path as in
		// TestFatalEndpointErrorStopsTheQueuedRun (a worker's report, the
		// coordinator's stop) and the workers' probation is exercised by
		// TestSomeRefusalsAreRecordedOnceTheEndpointAnswers; the race pass
		// keeps both.
		t.Skip("run without the race detector (make test's first pass)")
	}
	ep, url := newSwitchable(t)
	ep.refuse.Store(&refusal{400, `{"error":{"message":"request rejected by gateway policy 7","type":"BadRequestError"}}`})
	run, dir := queuedRun(t, url)
	sum, err := run()
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), engine.ErrRefused.Error()) ||
		!strings.Contains(err.Error(), "request rejected by gateway policy 7") {
		t.Fatalf("want the run stopped as refused, got %v (%+v)", err, sum)
	}
	if sum.Ran != 0 {
		t.Errorf("%d records written for an endpoint refusing every request: %v", sum.Ran, sum.Statuses)
	}
	folderRecords(t, dir, 0)

	ep.refuse.Store(nil)
	sum, err = run()
	if err != nil || sum.Ran != sum.Planned || sum.Statuses["model_error"] != 0 {
		t.Fatalf("rerun after the fix: %+v, %v", sum, err)
	}
	folderRecords(t, dir, sum.Planned)
}

// The probation decides on the first outcomes: refusals alike up to the
// window stop the run; anything else first (an answer, another refusal)
// lets every later outcome be recorded.
func TestRefusalProbation(t *testing.T) {
	r400 := httpErr{400, "bad request: policy 7"}
	r400b := httpErr{400, "bad request: policy 8"}
	r500 := httpErr{500, "internal"}
	for _, tc := range []struct {
		name    string
		planned int
		seq     []error
		want    []probationVerdict
	}{
		{"refused alike", 10, []error{r400, r400, r400, nil}, []probationVerdict{probationHold, probationHold, probationRefused, probationRefused}},
		{"answer first", 10, []error{nil, r400, r400, r400}, []probationVerdict{probationRecord, probationRecord, probationRecord, probationRecord}},
		{"answer after holds", 10, []error{r400, nil, r400}, []probationVerdict{probationHold, probationRecord, probationRecord}},
		{"another refusal", 10, []error{r400, r400b, r400}, []probationVerdict{probationHold, probationRecord, probationRecord}},
		// The same server error on a whole first wave stops the run as a
		// refusal does (issue 29); another error releases the hold.
		{"a 5xx is held like a refusal", 10, []error{r500, r400, r400, r400}, []probationVerdict{probationHold, probationRecord, probationRecord, probationRecord}},
		{"the same 5xx three times", 10, []error{r500, r500, r500}, []probationVerdict{probationHold, probationHold, probationRefused}},
		{"one planned", 1, []error{r400}, []probationVerdict{probationRefused}},
		{"two planned", 2, []error{r400, r400}, []probationVerdict{probationHold, probationRefused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRefusalProbation("p1", tc.planned)
			for i, e := range tc.seq {
				v, why := g.admit(e, e, false)
				if v != tc.want[i] {
					t.Fatalf("outcome %d: %v, want %v", i, v, tc.want[i])
				}
				if (v == probationRefused) != (why != nil) || why != nil && !errors.Is(why, engine.ErrRefused) {
					t.Fatalf("outcome %d: %v with error %v", i, v, why)
				}
			}
		})
	}
}

// Past the probation, a worker's episodes ending in the same server error
// mid-episode are held while they come in a row (their items come back);
// engine.ServerErrorStreak of them stop the run; another outcome ends the
// streak; an item on its last delivery is recorded, not held.
func TestServerErrorStreakStopsTheRun(t *testing.T) {
	r500 := httpErr{500, "internal"}
	r502 := httpErr{502, "bad gateway"}
	g := newRefusalProbation("p1", 100)
	if v, _ := g.admit(nil, nil, false); v != probationRecord {
		t.Fatalf("an answer first: %v", v)
	}
	for i := 0; i < engine.ServerErrorStreak-1; i++ {
		if v, why := g.admit(nil, r500, false); v != probationHold || why != nil {
			t.Fatalf("streak episode %d: %v %v, want held", i, v, why)
		}
	}
	if v, _ := g.admit(nil, r502, false); v != probationHold {
		t.Fatalf("another server error starts another streak: %v", v)
	}
	if v, _ := g.admit(nil, nil, false); v != probationRecord {
		t.Fatalf("an answer ends the streak: %v", v)
	}
	if v, _ := g.admit(nil, r500, true); v != probationRecord {
		t.Fatalf("a last delivery is recorded: %v", v)
	}
	for i := 1; i < engine.ServerErrorStreak-1; i++ {
		g.admit(nil, r500, false)
	}
	v, why := g.admit(nil, r500, false)
	if v != probationRefused || !errors.Is(why, engine.ErrServerFailing) {
		t.Fatalf("the streak's last episode: %v %v, want the run stopped", v, why)
	}
	if v, _ := g.admit(nil, nil, false); v != probationRefused {
		t.Fatalf("after the stop: %v", v)
	}
}

// httpErr is an endpoint's answer with an HTTP status.
type httpErr struct {
	status int
	msg    string
}

func (e httpErr) Error() string   { return e.msg }
func (e httpErr) HTTPStatus() int { return e.status }

// An endpoint that refuses only some requests (one scenario's prompt) is
// no endpoint-wide refusal: the run finishes, the refused episode recorded
// as the model error it is, and every other episode as a local run has it.
func TestSomeRefusalsAreRecordedOnceTheEndpointAnswers(t *testing.T) {
	ss := testSuite(t)
	marker := ss[len(ss)/2].ID
	inner := sim.NewServer(ss, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(ss[len(ss)/2].Instruction[:24])) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":{"message":"prompt rejected by moderation","type":"BadRequestError"}}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	run, dir := queuedRun(t, srv.URL+"/v1")
	sum, err := run()
	if err != nil || sum.Ran != sum.Planned {
		t.Fatalf("%+v, %v", sum, err)
	}
	if sum.Statuses["model_error"] != 1 {
		t.Fatalf("want the one refused episode (%s) as a model error: %v", marker, sum.Statuses)
	}
	got := folderRecords(t, dir, sum.Planned)
	for id, rec := range got {
		if strings.Contains(rec, `"scenario_id":"`+marker+`"`) != strings.Contains(rec, `"status":"model_error"`) {
			t.Errorf("record %s: the refused scenario is %s: %.200s", id, marker, rec)
		}
	}
}

// The workers send what the run's flags say: no temperature for a
// reasoning model (--temperature omit), the per-turn limit in the field
// --token-param names. A worker that sent a temperature here would stop
// the run (the endpoint refuses it, as OpenAI's reasoning models do).
func TestWorkersSendTheRunsRequestSettings(t *testing.T) {
	var sawMaxTokens, sawCompletionTokens atomic.Int64
	inner := sim.NewServer(testSuite(t), 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"temperature"`)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":{"message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}}`))
			return
		}
		if bytes.Contains(body, []byte(`"max_tokens"`)) {
			sawMaxTokens.Add(1)
		}
		if bytes.Contains(body, []byte(`"max_completion_tokens"`)) {
			sawCompletionTokens.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	sp := spec{Policy: "openai:sim:base", BaseURL: srv.URL + "/v1", Rollouts: 1, Seed: 9, Conc: 4, OmitTemperature: true, TurnTokens: 512}
	run, _ := queuedSpec(t, sp, func(c *Coordinator) {
		c.TokenParam = openai.TokenMaxCompletionTokens
		c.ReadyWait = -1
	})
	sum, err := run()
	if err != nil || sum.Ran != sum.Planned || sum.Statuses["model_error"] != 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	if n := sawMaxTokens.Load(); n != 0 {
		t.Errorf("%d requests sent max_tokens; the run said max_completion_tokens", n)
	}
	if sawCompletionTokens.Load() == 0 {
		t.Error("no request sent max_completion_tokens")
	}
}

// A queued run of the gated framework uses the exposure filter the run
// planned (its risk penalty and weights), not the defaults: every record
// equals a local run's with the same settings, and those differ from the
// default filter's.
func TestWorkersUseTheRunsExposureFilter(t *testing.T) {
	sp := spec{Policy: "sim:base", Rollouts: 1, Seed: 5, Conc: 4, Framework: engine.FrameworkGated,
		Filter: &store.FilterPlan{RiskLambda: 4, RiskWeights: "low=0,medium=2,high=5"}}
	want := sp.local(t)
	def := sp
	def.Filter = nil
	if same := def.local(t); len(same) == len(want) {
		differ := 0
		for id, rec := range want {
			if same[id] != rec {
				differ++
			}
		}
		if differ == 0 {
			t.Fatal("the filter settings change no record: the test shows nothing")
		}
	}
	run, dir := queuedSpec(t, sp, nil)
	sum, err := run()
	if err != nil || sum.Ran != sum.Planned {
		t.Fatalf("%+v, %v", sum, err)
	}
	sameRecords(t, folderRecords(t, dir, sum.Planned), want)
}

// What a worker reports reaches its log and the coordinator's without the
// credentials of any URL it quotes.
func TestWorkerReportsRedactURLs(t *testing.T) {
	ts := startTestServer(t)
	nc, js := connect(t, ts.url())
	var log syncBuf
	w := &Worker{NC: nc, JS: js, Name: "w0", Log: &log}
	w.report(&RunConfig{RunID: "r1", RunKey: "k"}, "fatal", "Post http://alice:pa55@gpu-7:8000/v1/chat/completions?key=sk-abc: connection refused")
	for _, secretText := range []string{"alice", "pa55", "sk-abc"} {
		if strings.Contains(log.String(), secretText) {
			t.Errorf("the log holds %q: %s", secretText, log.String())
		}
	}
	if !strings.Contains(log.String(), "gpu-7:8000/v1/chat/completions") {
		t.Errorf("the log lost the endpoint: %s", log.String())
	}
}

// A server that cuts conversations silently (Ollama's num_ctx) gives
// context_truncated records; the coordinator warns once, as a local run
// does.
func TestCoordinatorWarnsOnceOfCutConversations(t *testing.T) {
	inner := sim.NewServer(testSuite(t), 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		var resp map[string]any
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &resp) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		// The prompt the server kept shrinks as the conversation grows.
		resp["usage"] = map[string]any{"prompt_tokens": 4000 - 100*len(req.Messages), "completion_tokens": 10, "total_tokens": 4010 - 100*len(req.Messages)}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	sp := spec{Policy: "openai:sim:base", BaseURL: srv.URL + "/v1", Rollouts: 1, Seed: 9, Conc: 4}
	var warned []string
	run, _ := queuedSpec(t, sp, func(c *Coordinator) {
		c.Config.Warn = func(msg string) { warned = append(warned, msg) }
	})
	sum, err := run()
	if err != nil || sum.Ran != sum.Planned {
		t.Fatalf("%+v, %v", sum, err)
	}
	if sum.Statuses["context_truncated"] == 0 {
		t.Fatalf("no episode was cut: %v", sum.Statuses)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "num_ctx") {
		t.Fatalf("want one num_ctx warning, got %q", warned)
	}
}

// Queued runs against each server family's quirks (Ollama cutting the
// context, llama.cpp loading its model, an OpenAI reasoning model refusing
// max_tokens and any temperature) give exactly a local run's records.
func TestQueuedRunsMatchLocalRunsOnEveryServerFamily(t *testing.T) {
	ss := testSuite(t)
	prof, err := sim.Lookup("base")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode fakeserver.Mode
		sp   func(*spec)
	}{
		{"vllm", fakeserver.Mode{Family: fakeserver.FamilyVLLM}, nil},
		{"ollama-num-ctx", fakeserver.Mode{Family: fakeserver.FamilyOllama, NumCtx: 300}, nil},
		{"llamacpp-loading", fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, LoadingPolls: 3}, nil},
		{"openai-reasoning", fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true, FixedTemperature: true},
			func(sp *spec) { sp.OmitTemperature, sp.TurnTokens = true, 4096 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := func() string {
				mode := tc.mode
				return fakeserver.Start(t, fakeserver.Options{Mode: &mode, Handler: fakeserver.PolicyHandler(sim.New(prof, ss))}).URL()
			}
			sp := spec{Policy: "openai:sim:base", BaseURL: server(), Rollouts: 1, Seed: 13, Conc: 4}
			if tc.sp != nil {
				tc.sp(&sp)
			}
			want := sp.local(t)
			sp.BaseURL = server() // a fresh one: loading again, say
			run, dir := queuedSpec(t, sp, nil)
			sum, err := run()
			if err != nil || sum.Ran != sum.Planned {
				t.Fatalf("%+v, %v", sum, err)
			}
			sameRecords(t, folderRecords(t, dir, sum.Planned), want)
		})
	}
}
