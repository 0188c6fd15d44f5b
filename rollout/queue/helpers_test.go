package queue

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const testVersion = "test-1"

// spec is a run as the tests plan it. The same spec gives the same plan
// (and run name) in the test process and in its subprocesses.
type spec struct {
	Policy   string // "sim:base" or "openai:sim:base"
	BaseURL  string
	Rollouts int
	Seed     int64
	Conc     int
	// OmitTemperature and TurnTokens are the run's --temperature omit and
	// --turn-tokens.
	OmitTemperature bool
	TurnTokens      int
	// Framework (default normal) and Filter, the exposure filter's
	// settings as rollout records them.
	Framework string
	Filter    *store.FilterPlan
}

func (sp spec) framework() string {
	if sp.Framework == "" {
		return engine.FrameworkNormal
	}
	return sp.Framework
}

// filter is sp.Filter as the engine takes it.
func (sp spec) filter(t testing.TB) agent.FilterOptions {
	o, err := engine.FilterOf(sp.Filter)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// testSuite is the scenarios the queue tests run: the first
// perDomainInTests of each domain of the built-in suite, in its order
// (fewer under the race detector: see race_on_test.go). The queue's
// behaviour (delivery, faults, checks, equality with a local run) does not
// depend on how many scenarios a run has, and the whole suite would make
// each fault test (and the race pass) several times slower.
func testSuite(t testing.TB) []*scenario.Scenario {
	t.Helper()
	ss, err := suite.Load()
	if err != nil {
		t.Fatal(err)
	}
	return suite.PerDomain(ss, perDomainInTests)
}

// config is the engine configuration of sp; Policy is set for local runs.
func (sp spec) config(t testing.TB, ss []*scenario.Scenario) engine.Config {
	t.Helper()
	cfg := engine.Config{Scenarios: ss, PolicyName: sp.Policy, Checkpoint: sp.Policy, Framework: sp.framework(), Filter: sp.filter(t),
		Rollouts: sp.Rollouts, Concurrency: sp.Conc, Seed: sp.Seed, Version: testVersion,
		Limits: agent.Limits{MaxSteps: 20, OmitTemperature: sp.OmitTemperature, MaxTurnTokens: sp.TurnTokens}}
	kind, name, _ := strings.Cut(sp.Policy, ":")
	if kind == "sim" {
		prof, err := sim.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Policy = sim.New(prof, ss)
	} else {
		c, err := openai.New(openai.Config{BaseURL: sp.BaseURL, Model: name, Concurrency: max(sp.Conc, 1), MaxRetries: 2})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Policy = c
	}
	return cfg
}

func (sp spec) manifest(ss []*scenario.Scenario) store.Manifest {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	m := store.Manifest{Version: testVersion, Run: "qtest", Created: "2026-01-01T00:00:00Z",
		Plan: store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids,
			Policy: sp.Policy, Checkpoint: sp.Policy, Framework: sp.framework(), Filter: sp.Filter, Rollouts: sp.Rollouts,
			Seed: sp.Seed, Shard: "0/1", MaxSteps: 20, OmitTemperature: sp.OmitTemperature, MaxTurnTokens: sp.TurnTokens,
			ToolOrder: engine.PlanToolOrder(agent.ToolOrderSeeded)},
		Settings: store.Settings{Concurrency: sp.Conc},
	}
	if strings.HasPrefix(sp.Policy, "openai:") {
		m.Plan.Model = strings.TrimPrefix(sp.Policy, "openai:")
		m.Settings.BaseURL = sp.BaseURL
	}
	return m
}

func (sp spec) open(t testing.TB, dir string, ss []*scenario.Scenario) *store.Run {
	t.Helper()
	run, err := store.Open(dir, sp.manifest(ss), false)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// local runs sp in-process (no queue) and returns its records.
func (sp spec) local(t testing.TB) map[string]string {
	t.Helper()
	ss := testSuite(t)
	dir := filepath.Join(t.TempDir(), "local")
	run := sp.open(t, dir, ss)
	sum, err := engine.Run(context.Background(), sp.config(t, ss), run)
	if err != nil || sum.InfraErrors > 0 {
		t.Fatalf("local run: %v (%+v)", err, sum)
	}
	return folderRecords(t, dir, sum.Planned)
}

// folderRecords reads a run folder's records, keyed by traj_id, with their
// timings blanked, and checks that it holds want of them, each once, with
// no torn line.
func folderRecords(t testing.TB, dir string, want int) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("%s: torn last line", f)
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var r trajectory.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if _, dup := out[r.TrajID]; dup {
				t.Fatalf("%s: duplicate record %s", f, r.TrajID)
			}
			r.Timings = trajectory.Timings{}
			nb, _ := json.Marshal(r)
			out[r.TrajID] = string(nb)
		}
	}
	if len(out) != want {
		t.Fatalf("%s holds %d records, want %d", dir, len(out), want)
	}
	return out
}

func sameRecords(t testing.TB, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	var ids []string
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if g, w := got[id], want[id]; g != w {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			lo := max(i-200, 0)
			t.Fatalf("record %s differs from the local run's at byte %d:\n got …%.300s\nwant …%.300s", id, i, g[lo:], w[lo:])
		}
	}
}

// testServer is an embedded server that can be restarted on its port
// from its store.
type testServer struct {
	t    testing.TB
	dir  string
	addr string
	*Server
}

func startTestServer(t testing.TB) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ts := &testServer{t: t, dir: t.TempDir(), addr: addr}
	ts.start()
	t.Cleanup(func() {
		if ts.Server != nil {
			ts.Stop()
		}
	})
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	var err error
	for i := 0; i < 50; i++ { // the port may linger for a moment after a stop
		if ts.Server, err = StartServer(ServerOptions{Addr: ts.addr, StoreDir: ts.dir}); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	ts.t.Fatal(err)
}

func (ts *testServer) restart() {
	ts.Stop()
	ts.Server = nil
	time.Sleep(300 * time.Millisecond)
	ts.start()
}

func (ts *testServer) url() string { return "nats://" + ts.addr }

func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, js, err := Connect(context.Background(), url, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, js
}

// simServer serves the simulated policies over HTTP with a latency per
// completion, so that episodes take long enough to be killed mid-way.
func simServer(t testing.TB, latency time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(sim.NewServer(testSuite(t), latency))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// startWorkers runs n in-process workers until the test ends; stop ends
// them early.
func startWorkers(t testing.TB, url string, n, conc int, mod func(*Worker)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		nc, js := connect(t, url)
		w := &Worker{NC: nc, JS: js, Name: fmt.Sprintf("w%d", i), Concurrency: conc, Version: testVersion, Log: testLog{t}}
		if mod != nil {
			mod(w)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Serve(ctx) }()
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// syncBuf is a log the coordinator and the test share.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testLog sends a worker's or coordinator's lines to the test log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
