package queue

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
)

// BenchmarkQueueHTTP measures steps/s of a rollout through the queue with
// 1, 2 and 4 in-process workers (each with concurrency C/k, sharing an
// endpoint cap of C) against sim-server with latency L per completion, as a
// ratio to the same plan run locally (engine.Run) at concurrency C, and the
// queue's overhead per episode: (T_queue − T_local)·C / episodes, the time
// an episode's slot spends on the queue rather than on the endpoint.
// ANTIDRIFT_BENCH_QUEUE_C (default 64), ANTIDRIFT_BENCH_QUEUE_LATENCY
// (default 100ms) and ANTIDRIFT_BENCH_QUEUE_ROLLOUTS (default 8 per
// scenario) shape it.
func BenchmarkQueueHTTP(b *testing.B) {
	conc := benchInt(b, "ANTIDRIFT_BENCH_QUEUE_C", 64)
	lat := benchDuration(b, "ANTIDRIFT_BENCH_QUEUE_LATENCY", 100*time.Millisecond)
	rollouts := benchInt(b, "ANTIDRIFT_BENCH_QUEUE_ROLLOUTS", 8)
	var steps atomic.Int64
	inner := sim.NewServer(testSuite(b), lat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		steps.Add(1)
		inner.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	sp := spec{Policy: "openai:sim:base", BaseURL: srv.URL + "/v1", Rollouts: rollouts, Seed: 1, Conc: conc}
	ss := testSuite(b)

	// The local run at concurrency C, once.
	steps.Store(0)
	run := sp.open(b, filepath.Join(b.TempDir(), "local"), ss)
	t0 := time.Now()
	lsum, err := engine.Run(context.Background(), sp.config(b, ss), run)
	localWall := time.Since(t0)
	if err != nil || lsum.Ran != lsum.Planned {
		b.Fatalf("local run: %+v, %v", lsum, err)
	}
	localSteps := steps.Load()
	localRate := float64(localSteps) / localWall.Seconds()

	for _, k := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", k), func(b *testing.B) {
			var rate, overhead float64
			for i := 0; i < b.N; i++ {
				ts := startTestServer(b)
				stop := startWorkers(b, ts.url(), k, (conc+k-1)/k, nil)
				nc, js := connect(b, ts.url())
				steps.Store(0)
				c := &Coordinator{NC: nc, JS: js, Config: sp.config(b, ss), Folder: sp.open(b, filepath.Join(b.TempDir(), "queued"), ss)}
				t0 := time.Now()
				sum, err := c.Run(context.Background())
				wall := time.Since(t0)
				stop()
				if err != nil || sum.Ran != sum.Planned || sum.InfraErrors > 0 {
					b.Fatalf("%+v, %v", sum, err)
				}
				rate = float64(steps.Load()) / wall.Seconds()
				overhead = (wall - localWall).Seconds() * 1000 * float64(conc) / float64(sum.Planned)
			}
			b.ReportMetric(float64(conc), "C")
			b.ReportMetric(float64(lat.Milliseconds()), "L-ms")
			b.ReportMetric(float64(lsum.Planned), "episodes")
			b.ReportMetric(localRate, "local-steps/s")
			b.ReportMetric(rate, "steps/s")
			b.ReportMetric(rate/localRate, "ratio")
			b.ReportMetric(overhead, "overhead-ms/episode")
		})
	}
}

func benchInt(b *testing.B, name string, def int) int {
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

func benchDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a duration such as 100ms", name, v)
	}
	return d
}
