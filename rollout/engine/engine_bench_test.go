package engine_test

// Engine benchmarks (`make bench`).
//
// BenchmarkEngineInProcess drives the built-in suite through engine.Run with
// the in-process simulated policy sim:base and reports throughput and CPU per
// step (a step is one assistant turn, i.e. one policy call):
//
//	steps/s             steps completed per second of engine.Run wall time
//	cpu-us/step         process CPU (user+sys, getrusage) per step, policy included
//	policy-cpu-us/step  CPU of the sim policy alone per call, measured in a
//	                    separate loop replaying the same requests
//	engine-cpu-us/step  cpu-us/step − policy-cpu-us/step (target ≤ 50)
//	allocs/step, B/step heap allocations per step, policy included
//
// BenchmarkEngineHTTP drives the suite through an openai client against
// sim.NewServer on a loopback httptest server, with C episodes and requests
// in flight and L of added latency per completion, and compares the step
// rate to the ideal C/L (target ≥ 0.9 at C = 256, L = 200ms):
//
//	steps/s, ideal-steps/s, ratio             over the whole engine.Run
//	best-steps/s, best-ratio                  the best whole run this plan
//	                                          allows with every step taking
//	                                          exactly L (its drain tail, when
//	                                          fewer than C episodes are left)
//	steady-steps/s, steady-ratio              between the 10% and 90% marks
//	                                          of the steps (no ramp-up, no tail)
//	cpu-us/step                               process CPU per step, client,
//	                                          server and engine together
//	call-overhead-ms                          mean policy call time minus L
//	                                          (client, loopback, server, and
//	                                          waiting for a CPU)
//	server-overhead-ms                        mean server handler time minus L
//	between-calls-ms                          mean time from an answer to the
//	                                          episode's next request (agent:
//	                                          tools, drift detection)
//	retries                                   HTTP retries (should be 0)
//
// ANTIDRIFT_BENCH_C (default 256), ANTIDRIFT_BENCH_LATENCY (default 200ms;
// a Go duration or milliseconds) and ANTIDRIFT_BENCH_STEPS (default 128·C,
// the HTTP run's approximate number of steps; the drain tail costs the
// whole-run ratio about one longest episode, so shorter runs score lower)
// override the HTTP settings.

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

const (
	benchSeed = 1
	// benchInProcessRollouts × the suite is one in-process iteration.
	benchInProcessRollouts = 64
	// benchInProcessConcurrency is the CLI's default --concurrency.
	benchInProcessConcurrency = 32
)

// benchCounter wraps a policy and counts successful calls; with lastEnd it
// also records when each call returned, relative to start.
type benchCounter struct {
	inner policy.Policy
	n     atomic.Int64
	busy  atomic.Int64 // total nanoseconds inside successful calls

	start  time.Time
	mu     sync.Mutex
	stamps []time.Duration
	// lastEnd (nil: nothing recorded) holds when each episode (by seed) last
	// got an answer; gaps sums the times from an answer to the episode's
	// next request.
	lastEnd map[int64]time.Time
	gaps    time.Duration
	nGaps   int
}

func (c *benchCounter) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	t0 := time.Now()
	resp, err := c.inner.Complete(ctx, req)
	if err == nil {
		t1 := time.Now()
		c.n.Add(1)
		c.busy.Add(int64(t1.Sub(t0)))
		if c.lastEnd != nil {
			c.mu.Lock()
			c.stamps = append(c.stamps, t1.Sub(c.start))
			if last, ok := c.lastEnd[req.Seed]; ok {
				c.gaps += t0.Sub(last)
				c.nGaps++
			}
			c.lastEnd[req.Seed] = t1
			c.mu.Unlock()
		}
	}
	return resp, err
}

// benchRecorder wraps a policy and keeps every request it sees, so that the
// policy's own cost can be measured apart from the engine's.
type benchRecorder struct {
	inner policy.Policy
	mu    sync.Mutex
	reqs  []policy.Request
}

func (r *benchRecorder) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	// The agent only appends to its message slice, so the prefix seen here
	// stays as it is.
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Complete(ctx, req)
}

func benchSuite(b *testing.B) []*scenario.Scenario {
	b.Helper()
	ss, err := suite.Load()
	if err != nil {
		b.Fatalf("loading the built-in suite: %v", err)
	}
	return ss
}

// benchOpen opens a fresh run folder for cfg.
func benchOpen(b *testing.B, dir string, cfg engine.Config) *store.Run {
	b.Helper()
	ids := make([]string, len(cfg.Scenarios))
	for i, s := range cfg.Scenarios {
		ids[i] = s.ID
	}
	man := store.Manifest{
		Version: cfg.Version, Run: "bench", Created: time.Now().UTC().Format(time.RFC3339),
		Plan: store.Plan{
			ScenarioSource: suite.Name, ScenarioHash: scenario.Hash(cfg.Scenarios), ScenarioIDs: ids,
			Policy: cfg.PolicyName, Checkpoint: cfg.Checkpoint, Framework: engine.FrameworkNormal,
			Rollouts: cfg.Rollouts, Seed: cfg.Seed, Shard: "0/1", MaxSteps: 20,
		},
		Settings: store.Settings{Concurrency: cfg.Concurrency},
	}
	run, err := store.Open(dir, man, false)
	if err != nil {
		b.Fatal(err)
	}
	return run
}

// benchRun runs cfg into a fresh folder below b.TempDir and checks that
// every planned episode produced a record other than an infra error.
func benchRun(b *testing.B, cfg engine.Config) engine.Summary {
	b.Helper()
	run := benchOpen(b, filepath.Join(b.TempDir(), "run"), cfg)
	sum, err := engine.Run(context.Background(), cfg, run)
	if err != nil {
		b.Fatal(err)
	}
	if sum.Ran != sum.Planned || sum.InfraErrors > 0 {
		b.Fatalf("planned %d, ran %d, infra errors %d, statuses %v", sum.Planned, sum.Ran, sum.InfraErrors, sum.Statuses)
	}
	return sum
}

// cpuTime is the process's user+sys CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mallocs() (n, bytes uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs, ms.TotalAlloc
}

func BenchmarkEngineInProcess(b *testing.B) {
	ss := benchSuite(b)
	base, err := sim.Lookup("sim:base")
	if err != nil {
		b.Fatal(err)
	}
	pol := sim.New(base, ss)
	cfg := engine.Config{
		Scenarios: ss, PolicyName: "sim:base", Checkpoint: "sim:base",
		Rollouts: benchInProcessRollouts, Concurrency: benchInProcessConcurrency,
		Seed: benchSeed, Version: "bench",
	}

	// The policy alone: record the run's requests, then replay them on one
	// goroutine and take the CPU per call.
	rec := &benchRecorder{inner: pol}
	cfg.Policy = rec
	benchRun(b, cfg)
	runtime.GC()
	pc0 := cpuTime(b)
	for _, req := range rec.reqs {
		if _, err := pol.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	policyCPU := cpuTime(b) - pc0
	policyPerCall := float64(policyCPU.Microseconds()) / float64(len(rec.reqs))
	rec.reqs = nil
	runtime.GC()

	var steps int64
	var wall, cpu time.Duration
	var allocs, allocBytes uint64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		cnt := &benchCounter{inner: pol}
		cfg.Policy = cnt
		run := benchOpen(b, filepath.Join(b.TempDir(), "run"), cfg)
		m0, mb0 := mallocs()
		b.StartTimer()

		c0, t0 := cpuTime(b), time.Now()
		sum, err := engine.Run(context.Background(), cfg, run)
		wall += time.Since(t0)
		cpu += cpuTime(b) - c0

		b.StopTimer()
		m1, mb1 := mallocs()
		allocs, allocBytes = allocs+m1-m0, allocBytes+mb1-mb0
		if err != nil {
			b.Fatal(err)
		}
		if sum.Ran != sum.Planned || sum.InfraErrors > 0 {
			b.Fatalf("planned %d, ran %d, statuses %v", sum.Planned, sum.Ran, sum.Statuses)
		}
		steps += cnt.n.Load()
		b.StartTimer()
	}
	b.StopTimer()
	perStep := float64(cpu.Microseconds()) / float64(steps)
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
	b.ReportMetric(perStep, "cpu-us/step")
	b.ReportMetric(policyPerCall, "policy-cpu-us/step")
	b.ReportMetric(perStep-policyPerCall, "engine-cpu-us/step")
	b.ReportMetric(float64(allocs)/float64(steps), "allocs/step")
	b.ReportMetric(float64(allocBytes)/float64(steps), "B/step")
	b.Logf("%d scenarios × %d rollouts, concurrency %d, run folder under %s", len(ss), cfg.Rollouts, cfg.Concurrency, os.TempDir())
}

func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func benchEnvDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Millisecond
	}
	b.Fatalf("%s=%q: want a duration such as 200ms", name, v)
	return 0
}

// listMakespan is the wall time of the plan on conc workers that take the
// next episode as soon as they are free, as the engine's do, when every step
// takes exactly lat and nothing else takes any time: the best whole-run
// figure the plan allows, its drain tail included.
func listMakespan(b *testing.B, plan []engine.Planned, epSteps map[string]int, conc int, lat time.Duration) time.Duration {
	b.Helper()
	free := make([]time.Duration, conc) // when each worker is next free
	var end time.Duration
	for _, p := range plan {
		n, ok := epSteps[p.TrajID]
		if !ok {
			b.Fatalf("no record for %s", p.TrajID)
		}
		w := 0
		for i := range free {
			if free[i] < free[w] {
				w = i
			}
		}
		free[w] += time.Duration(n) * lat
		end = max(end, free[w])
	}
	return end
}

func BenchmarkEngineHTTP(b *testing.B) {
	conc := benchEnvInt(b, "ANTIDRIFT_BENCH_C", 256)
	lat := benchEnvDuration(b, "ANTIDRIFT_BENCH_LATENCY", 200*time.Millisecond)
	target := benchEnvInt(b, "ANTIDRIFT_BENCH_STEPS", 128*conc)
	ss := benchSuite(b)

	// The sim server answers as the in-process policy does, so one quick
	// in-process run gives the steps per episode, hence the rollouts.
	base, err := sim.Lookup("sim:base")
	if err != nil {
		b.Fatal(err)
	}
	probe := &benchCounter{inner: sim.New(base, ss)}
	const probeRollouts = 8
	benchRun(b, engine.Config{Scenarios: ss, Policy: probe, PolicyName: "sim:base", Checkpoint: "sim:base",
		Rollouts: probeRollouts, Concurrency: 8, Seed: benchSeed, Version: "bench"})
	perEpisode := float64(probe.n.Load()) / float64(len(ss)*probeRollouts)
	rollouts := max(1, int(math.Ceil(float64(target)/(perEpisode*float64(len(ss))))))

	var handlerTime atomic.Int64
	simSrv := sim.NewServer(ss, lat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		simSrv.ServeHTTP(w, r)
		handlerTime.Add(int64(time.Since(t0)))
	}))
	defer srv.Close()
	client, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "sim:base", Concurrency: conc})
	if err != nil {
		b.Fatal(err)
	}
	cfg := engine.Config{
		Scenarios: ss, PolicyName: "openai:sim:base", Checkpoint: "sim:base",
		Rollouts: rollouts, Concurrency: conc, Seed: benchSeed, Version: "bench",
	}
	ideal := float64(conc) / lat.Seconds()

	// Steps of each episode, for the best makespan the plan allows.
	var epMu sync.Mutex
	epSteps := map[string]int{}
	cfg.OnRecord = func(rec *trajectory.Record) {
		epMu.Lock()
		epSteps[rec.TrajID] = len(rec.Steps)
		epMu.Unlock()
	}

	var steps int64
	var wall, cpu, bestWall, busy, gaps, server time.Duration
	var nGaps int
	var steadyRates []float64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		run := benchOpen(b, filepath.Join(b.TempDir(), "run"), cfg)
		handlerTime.Store(0)
		b.StartTimer()

		c0, t0 := cpuTime(b), time.Now()
		cnt := &benchCounter{inner: client, start: t0, stamps: make([]time.Duration, 0, target*2), lastEnd: map[int64]time.Time{}}
		cfg.Policy = cnt
		sum, err := engine.Run(context.Background(), cfg, run)
		wall += time.Since(t0)
		cpu += cpuTime(b) - c0

		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if sum.Ran != sum.Planned || sum.InfraErrors > 0 {
			b.Fatalf("planned %d, ran %d, infra errors %d, statuses %v", sum.Planned, sum.Ran, sum.InfraErrors, sum.Statuses)
		}
		steps += cnt.n.Load()
		busy += time.Duration(cnt.busy.Load())
		server += time.Duration(handlerTime.Load())
		gaps, nGaps = gaps+cnt.gaps, nGaps+cnt.nGaps
		bestWall += listMakespan(b, engine.Plan(cfg, run.Manifest.Run), epSteps, conc, lat)
		st := cnt.stamps
		sort.Slice(st, func(i, j int) bool { return st[i] < st[j] })
		lo, hi := len(st)/10, len(st)*9/10
		if hi > lo && st[hi] > st[lo] {
			steadyRates = append(steadyRates, float64(hi-lo)/(st[hi]-st[lo]).Seconds())
		}
		b.StartTimer()
	}
	b.StopTimer()
	rate := float64(steps) / wall.Seconds()
	steady := 0.0
	for _, r := range steadyRates {
		steady += r / float64(len(steadyRates))
	}
	b.ReportMetric(float64(conc), "C")
	b.ReportMetric(float64(lat.Milliseconds()), "L-ms")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	b.ReportMetric(rate, "steps/s")
	b.ReportMetric(ideal, "ideal-steps/s")
	b.ReportMetric(rate/ideal, "ratio")
	b.ReportMetric(float64(steps)/bestWall.Seconds(), "best-steps/s")
	b.ReportMetric(float64(steps)/bestWall.Seconds()/ideal, "best-ratio")
	b.ReportMetric(steady, "steady-steps/s")
	b.ReportMetric(steady/ideal, "steady-ratio")
	b.ReportMetric(float64(cpu.Microseconds())/float64(steps), "cpu-us/step")
	// Where a step's time goes beyond L.
	latMS := float64(lat.Microseconds()) / 1000
	b.ReportMetric(busy.Seconds()*1000/float64(steps)-latMS, "call-overhead-ms")
	b.ReportMetric(server.Seconds()*1000/float64(steps)-latMS, "server-overhead-ms")
	b.ReportMetric(gaps.Seconds()*1000/float64(max(nGaps, 1)), "between-calls-ms")
	b.ReportMetric(float64(client.Stats().Retries), "retries")
	b.Logf("C=%d L=%s: %d scenarios × %d rollouts, %.2f steps/episode", conc, lat, len(ss), rollouts, perEpisode)
}
