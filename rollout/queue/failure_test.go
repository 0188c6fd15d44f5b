package queue

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// The failure tests run the built-in suite through the HTTP path against
// the simulated policies with a latency per completion, so that episodes
// are in flight when something is killed; each ends with the run folder
// holding exactly the plan, every record equal to a local run's apart
// from timings.

const failLatency = 25 * time.Millisecond

func failSpec(t *testing.T) spec {
	skipFailure(t)
	return spec{Policy: "openai:sim:base", BaseURL: simServer(t, failLatency), Rollouts: 2, Seed: 11, Conc: 8}
}

func skipFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("failure tests are skipped with -short")
	}
	if raceEnabled {
		t.Skip("failure tests run without the race detector (make test runs them in its first pass)")
	}
}

// proc is a worker or coordinator subprocess (this test binary).
type proc struct {
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan error
}

func startProc(t *testing.T, role string, sp spec, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QT_ROLE="+role, "QT_POLICY="+sp.Policy, "QT_SIM="+sp.BaseURL,
		fmt.Sprintf("QT_ROLLOUTS=%d", sp.Rollouts), fmt.Sprintf("QT_SEED=%d", sp.Seed), fmt.Sprintf("QT_CONC=%d", sp.Conc))
	cmd.Env = append(cmd.Env, env...)
	p := &proc{cmd: cmd, out: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

// kill SIGKILLs the process; it reports whether it was still running.
func (p *proc) kill(t *testing.T) bool {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return false // finished already
	}
	err := <-p.done
	p.done <- err
	return true
}

func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("process did not finish in %s; output:\n%s", d, p.out.String())
		return nil
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lines counts the complete lines of the run folder's trajectories.
func lines(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))
	return bytes.Count(b, []byte{'\n'})
}

// coordinate runs a coordinator in this process until the plan is done.
func coordinate(t *testing.T, ctx context.Context, url string, sp spec, dir string, onRecord func(), mod func(*Coordinator)) (engine.Summary, error) {
	t.Helper()
	nc, js := connect(t, url)
	ss := testSuite(t)
	cfg := sp.config(t, ss)
	cfg.OnRecord = func(*trajectory.Record) {
		if onRecord != nil {
			onRecord()
		}
	}
	c := &Coordinator{NC: nc, JS: js, Config: cfg, Folder: sp.open(t, dir, ss), AckWait: time.Second, MaxDeliver: 20, Log: testLog{t}}
	if mod != nil {
		mod(c)
	}
	return c.Run(ctx)
}

func TestFailureWorkersSIGKILLed(t *testing.T) {
	sp := failSpec(t)
	want := sp.local(t)
	ts := startTestServer(t)
	workerEnv := []string{"QT_URL=" + ts.url(), "QT_WORKER_CONC=4"}
	w1 := startProc(t, "worker", sp, workerEnv...)
	w2 := startProc(t, "worker", sp, workerEnv...)
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the killer
		defer wg.Done()
		waitFor(t, 60*time.Second, "10 records", func() bool { return n.Load() >= 10 })
		w1.kill(t)
		waitFor(t, 60*time.Second, "40 records", func() bool { return n.Load() >= 40 })
		w2.kill(t)
		startProc(t, "worker", sp, workerEnv...)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run")
	sum, err := coordinate(t, ctx, ts.url(), sp, dir, func() { n.Add(1) }, nil)
	wg.Wait()
	if err != nil || sum.InfraErrors > 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
}

func TestFailureCoordinatorSIGKILLedAndRestarted(t *testing.T) {
	sp := failSpec(t)
	want := sp.local(t)
	ts := startTestServer(t)
	startWorkers(t, ts.url(), 2, 2, nil)
	dir := filepath.Join(t.TempDir(), "run")
	env := []string{"QT_URL=" + ts.url(), "QT_DIR=" + dir, "QT_ACKWAIT=1s"}
	kills := 0
	for _, at := range []int{15, 45} {
		c := startProc(t, "coordinator", sp, env...)
		waitFor(t, 60*time.Second, fmt.Sprintf("%d records", at), func() bool { return lines(dir) >= at })
		if n := lines(dir); c.kill(t) && n < len(want) {
			kills++
		}
		time.Sleep(300 * time.Millisecond) // workers keep publishing meanwhile
	}
	if kills == 0 {
		t.Fatal("the coordinator was never killed mid-run")
	}
	c := startProc(t, "coordinator", sp, env...)
	if err := c.wait(t, 90*time.Second); err != nil {
		t.Fatalf("the restarted coordinator: %v\n%s", err, c.out.String())
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
}

func TestFailureNATSServerRestartedFromItsStore(t *testing.T) {
	sp := failSpec(t)
	want := sp.local(t)
	ts := startTestServer(t)
	startWorkers(t, ts.url(), 2, 4, nil)
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		waitFor(t, 60*time.Second, "20 records", func() bool { return n.Load() >= 20 })
		ts.restart()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run")
	sum, err := coordinate(t, ctx, ts.url(), sp, dir, func() { n.Add(1) }, nil)
	wg.Wait()
	if err != nil || sum.InfraErrors > 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
}

// An endpoint that answers the whole first wave with the same server error
// stops the queued run with nothing written, as a refusing one does (a
// broken endpoint is not data, and no episode is spent on it); the resumed
// run, against a working endpoint, runs every planned episode.
func TestFailingEveryDeliveryStopsTheRunAndResumeRunsAll(t *testing.T) {
	skipFailure(t)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	t.Cleanup(broken.Close)
	good := simServer(t, 0)
	sp := spec{Policy: "openai:sim:base", BaseURL: good, Rollouts: 1, Seed: 3, Conc: 4}
	want := sp.local(t)
	ts := startTestServer(t)
	startWorkers(t, ts.url(), 2, 4, nil)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bad := sp
	bad.BaseURL = broken.URL + "/v1" // a setting, not the plan: same run
	sum, err := coordinate(t, ctx, ts.url(), bad, dir, nil, func(c *Coordinator) {
		c.AckWait, c.MaxDeliver, c.MaxRetries = 400*time.Millisecond, 2, -1
	})
	if err == nil || !strings.Contains(err.Error(), "refuses every request") || lines(dir) != 0 {
		t.Fatalf("against a broken endpoint: %+v, %v, %d records", sum, err, lines(dir))
	}
	sum, err = coordinate(t, ctx, ts.url(), sp, dir, nil, nil)
	if err != nil || sum.InfraErrors != 0 || sum.Ran != len(want) {
		t.Fatalf("resumed: %+v, %v", sum, err)
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
}

// A worker killed on every delivery of its items (here: stopped mid-episode
// with a bound of one delivery) leaves items that JetStream stops
// delivering; the coordinator records them as infrastructure errors, and
// a resume runs them.
func TestItemsOutOfDeliveriesAreReapedAsInfraErrors(t *testing.T) {
	sp := failSpec(t)
	want := sp.local(t)
	ts := startTestServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var n atomic.Int64
	stop := startWorkers(t, ts.url(), 1, 4, nil)
	go func() {
		waitFor(t, 60*time.Second, "5 records", func() bool { return n.Load() >= 5 })
		stop() // its 4 items in flight are interrupted: their one delivery is spent
		startWorkers(t, ts.url(), 1, 4, nil)
	}()
	sum, err := coordinate(t, ctx, ts.url(), sp, dir, func() { n.Add(1) }, func(c *Coordinator) { c.MaxDeliver = 1 })
	if err != nil || sum.InfraErrors == 0 || sum.Ran != len(want) {
		t.Fatalf("%+v, %v", sum, err)
	}
	got := lines(dir)
	if got+sum.InfraErrors != len(want) {
		t.Fatalf("%d records + %d infra errors, plan %d", got, sum.InfraErrors, len(want))
	}
	sum, err = coordinate(t, ctx, ts.url(), sp, dir, nil, nil)
	if err != nil || sum.Ran != sum.Planned-got {
		t.Fatalf("resumed: %+v, %v", sum, err)
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
}

func TestWorkerRefusesAnotherVersionOrSuite(t *testing.T) {
	ss := testSuite(t)
	changed := *ss[0]
	changed.Instruction += " (edited)"
	suite2 := append([]*scenario.Scenario{&changed}, ss[1:]...)
	tests := []struct {
		name string
		mod  func(*Worker)
		want string
	}{
		{"version", func(w *Worker) { w.Version = "other-9" }, "planned by antidrift test-1 and this worker is other-9"},
		{"suite", func(w *Worker) { w.Scenarios = suite2 }, "scenario-suite hash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := spec{Policy: "sim:base", Rollouts: 1, Seed: 5, Conc: 4}
			ts := startTestServer(t)
			startWorkers(t, ts.url(), 1, 4, tc.mod)
			nc, js := connect(t, ts.url())
			log := &syncBuf{}
			cfg := sp.config(t, ss)
			dir := filepath.Join(t.TempDir(), "run")
			c := &Coordinator{NC: nc, JS: js, Config: cfg, Folder: sp.open(t, dir, ss), Log: log}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			type res struct {
				sum engine.Summary
				err error
			}
			done := make(chan res, 1)
			go func() { s, err := c.Run(ctx); done <- res{s, err} }()
			waitFor(t, 30*time.Second, "the refusal", func() bool { return strings.Contains(log.String(), tc.want) })
			if lines(dir) != 0 {
				t.Fatal("a refusing worker ran episodes")
			}
			startWorkers(t, ts.url(), 1, 4, nil) // a matching worker finishes the run
			r := <-done
			if r.err != nil || r.sum.Ran != r.sum.Planned {
				t.Fatalf("%+v, %v\n%s", r.sum, r.err, log.String())
			}
		})
	}
}

// Three workers of concurrency 4 share a cap of 2 episodes in flight
// against the endpoint.
func TestEndpointCapSharedByWorkers(t *testing.T) {
	var cur, peak atomic.Int64
	inner := sim.NewServer(testSuite(t), 5*time.Millisecond)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cur.Add(1)
		for {
			p := peak.Load()
			if c <= p || peak.CompareAndSwap(p, c) {
				break
			}
		}
		defer cur.Add(-1)
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	sp := spec{Policy: "openai:sim:base", BaseURL: srv.URL + "/v1", Rollouts: 1, Seed: 9, Conc: 2}
	ts := startTestServer(t)
	startWorkers(t, ts.url(), 3, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run")
	sum, err := coordinate(t, ctx, ts.url(), sp, dir, nil, nil)
	if err != nil || sum.Ran != sum.Planned {
		t.Fatalf("%+v, %v", sum, err)
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Fatalf("peak requests in flight %d, cap 2", p)
	}
}

// An endpoint that breaks mid-run (every request a 500 from some point on)
// stops a queued run as it stops a local one: the workers hold the streak
// of episodes ending in that error instead of recording them, the run
// exits with the error, and a resume against the mended endpoint writes
// exactly a local run's records.
func TestEndpointBreakingMidRunStopsTheQueuedRun(t *testing.T) {
	skipFailure(t)
	inner := sim.NewServer(testSuite(t), 0)
	var served atomic.Int64
	breaking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 40 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"message":"CUDA error: an illegal memory access was encountered","type":"InternalServerError"}}`))
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(breaking.Close)
	good := simServer(t, 0)
	sp := spec{Policy: "openai:sim:base", BaseURL: good, Rollouts: 1, Seed: 3, Conc: 4}
	want := sp.local(t)
	ts := startTestServer(t)
	startWorkers(t, ts.url(), 1, 4, nil)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bad := sp
	bad.BaseURL = breaking.URL + "/v1"
	sum, err := coordinate(t, ctx, ts.url(), bad, dir, nil, func(c *Coordinator) {
		c.AckWait, c.MaxDeliver, c.MaxRetries = 400*time.Millisecond, 20, -1
	})
	if err == nil || !strings.Contains(err.Error(), "the same server error") {
		t.Fatalf("against an endpoint that broke: %+v, %v", sum, err)
	}
	got := lines(dir)
	if got == 0 || got >= len(want) {
		t.Fatalf("%d records of %d: the episodes before the break are written, the rest are not", got, len(want))
	}
	for id, rec := range folderRecords(t, dir, got) {
		if strings.Contains(rec, "illegal memory access") {
			t.Fatalf("%s: an episode of the streak was recorded", id)
		}
	}
	sum, err = coordinate(t, ctx, ts.url(), sp, dir, nil, nil)
	if err != nil || sum.Ran != len(want)-got {
		t.Fatalf("resumed: %+v, %v", sum, err)
	}
	sameRecords(t, folderRecords(t, dir, len(want)), want)
}
