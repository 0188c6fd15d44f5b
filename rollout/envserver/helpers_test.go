package envserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var loadSuite = sync.OnceValues(suite.Load)

const (
	testRun  = "run-envtest"
	testSeed = 7
	testCk   = "ck"
)

// testScenario is a built-in scenario with tools, required calls and
// violations.
func testScenario(t testing.TB) *scenario.Scenario {
	t.Helper()
	ss, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	return ss[0] // commerce-account-erasure-001: 3 required calls, 4 violations
}

// script is the scripted policy of these tests: the compliant path with a
// drifting call after its first step, then a final answer.
func script(t testing.TB, s *scenario.Scenario) []Action {
	t.Helper()
	call := func(tool string, args map[string]json.RawMessage, pat map[string]string) Action {
		full, err := s.CompleteArgs(tool, args, pat)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		b, _ := json.Marshal(full)
		return Action{ToolName: tool, Arguments: b}
	}
	var out []Action
	for i, rc := range s.RequiredCalls {
		out = append(out, call(rc.Tool, rc.Args, rc.Patterns))
		if i == 0 {
			v := s.Violations[1] // export_customer_history: a shortcut with provisions
			out = append(out, call(v.Tool, v.Args, v.Patterns))
		}
	}
	answer := "Done: the account is erased and the confirmation is sent."
	return append(out, Action{Type: TypeFinalAnswer, Content: &answer})
}

func manifest(ss []*scenario.Scenario) store.Manifest {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return store.Manifest{Version: "test", Run: testRun, Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids,
			Policy: "env", Checkpoint: testCk, Framework: engine.FrameworkNormal, Seed: testSeed, Shard: "0/1", MaxSteps: 20}}
}

// inProcess rolls the scripted policy out with the engine, as rollout does.
func inProcess(t testing.TB, s *scenario.Scenario, actions []Action) *trajectory.Record {
	t.Helper()
	dir := t.TempDir()
	run, err := store.Open(dir, manifest([]*scenario.Scenario{s}), false)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := ScriptOf(actions)
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Scenarios: []*scenario.Scenario{s}, Policy: pol, PolicyName: "script", Checkpoint: testCk,
		Framework: engine.FrameworkNormal, Rollouts: 1, Concurrency: 1, Seed: testSeed, Version: "test", Limits: agent.Limits{MaxSteps: 20}}
	if _, err := engine.Run(context.Background(), cfg, run); err != nil {
		t.Fatal(err)
	}
	run.Close()
	recs := readRecords(t, dir)
	if len(recs) != 1 {
		t.Fatalf("in-process rollout wrote %d records", len(recs))
	}
	return recs[0]
}

type testServer struct {
	*Server
	dir string
	run *store.Run
	ts  *httptest.Server
}

func startServer(t testing.TB, dir string, mod func(*Config)) *testServer {
	t.Helper()
	ss, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	ss = ss[:3]
	run, err := store.Open(dir, manifest(ss), false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Scenarios: ss, Checkpoint: testCk, Seed: testSeed, Version: "test", Limits: agent.Limits{MaxSteps: 20},
		Rewards: testScorer, RewardsSpec: "uniform α=1 λ=0.5"}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := New(cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	x := &testServer{Server: srv, dir: dir, run: run, ts: ts}
	t.Cleanup(x.stop)
	return x
}

// stop closes the server and the run (idempotent).
func (x *testServer) stop() {
	if x.ts == nil {
		return
	}
	x.ts.CloseClientConnections()
	x.ts.Close()
	x.Server.Close()
	x.run.Close()
	x.ts = nil
}

func readRecords(t testing.TB, dir string) []*trajectory.Record {
	t.Helper()
	var out []*trajectory.Record
	it := store.Records(dir)
	for it.Next() {
		r := *it.At()
		out = append(out, &r)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readErrors(t testing.TB, dir string) []*trajectory.Record {
	t.Helper()
	var out []*trajectory.Record
	files, _ := filepath.Glob(filepath.Join(dir, "errors", "*.jsonl"))
	for _, f := range files {
		if err := scanLines(f, func(line int, b []byte) error {
			var r trajectory.Record
			if err := store.DecodeRecord(b, &r); err != nil {
				t.Fatalf("%s:%d: %v", f, line, err)
			}
			out = append(out, &r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// comparable is a record without what may differ between protocols: the
// wall-clock timings and the policy's name.
func comparable(t testing.TB, r *trajectory.Record) string {
	t.Helper()
	c := *r
	c.Timings = trajectory.Timings{}
	c.Policy = ""
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// post sends JSON and decodes the answer into out; it returns the status.
func post(t testing.TB, url string, body any, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v: %s", url, err, raw)
		}
	}
	return resp.StatusCode
}

// waitFor polls cond (for effects of goroutines the test does not own).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testScorer is the rewards package's default configuration, as
// cmd/antidrift wires it.
func testScorer(r *trajectory.Record) (Score, error) {
	n, err := rewards.Default().Named(r)
	return Score(n), err
}
