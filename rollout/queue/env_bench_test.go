//go:build unix

package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/envserver"
	"github.com/antidrift/antidrift/rollout/store"
)

// BenchmarkEnvServeQueue: 256 HTTP clients at once, each playing a
// scenario's compliant path ANTIDRIFT_BENCH_ENV_EPISODES times (default 4),
// against one env serve writing its folder ("single") and against two
// replicas behind the embedded queue with the collector writing the folder
// ("queue": a counter CAS per reset, a signed publication per episode, the
// collector's checks and writes). Clients, servers, NATS and the writer
// share one process; CPU is getrusage's for all of it.
func BenchmarkEnvServeQueue(b *testing.B) {
	const sessions = 256
	episodes := benchInt(b, "ANTIDRIFT_BENCH_ENV_EPISODES", 4)
	ss := envScenarios(b)
	m := envManifest(ss)
	actions := envScript(b, ss[0])
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions, MaxIdleConns: sessions}}
	do := func(url string, body, out any) error {
		raw, _ := json.Marshal(body)
		resp, err := client.Post(url, "application/json", bytes.NewReader(raw))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", url, resp.StatusCode, data)
		}
		return json.Unmarshal(data, out)
	}
	play := func(base string) error {
		var r envserver.Response
		if err := do(base+"/reset", map[string]any{"scenario_id": ss[0].ID, "client": "bench"}, &r); err != nil {
			return err
		}
		id := r.Observation.EpisodeID
		for _, a := range actions {
			if err := do(base+"/step", map[string]any{"episode_id": id, "action": a}, &r); err != nil {
				return err
			}
		}
		if !r.Done {
			return fmt.Errorf("episode %s did not end", id)
		}
		return nil
	}
	cpuNow := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, mode := range []string{"single", "queue"} {
		b.Run(mode, func(b *testing.B) {
			var steps int64
			var wall, cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "run")
				var bases []string
				var stop func()
				var written func() int64
				cfg := envConfig(ss)
				cfg.MaxSessions = sessions
				if mode == "single" {
					run, err := store.Open(dir, m, false)
					if err != nil {
						b.Fatal(err)
					}
					srv, err := envserver.New(cfg, run)
					if err != nil {
						b.Fatal(err)
					}
					hs := httptest.NewServer(srv.Handler())
					bases = []string{hs.URL}
					written = func() int64 { return int64(sessions * episodes) } // written before each answer
					stop = func() { hs.Close(); srv.Close(); run.Close() }
				} else {
					ts := startTestServer(b)
					col := startCollector(b, ts.url(), dir, m, ss)
					var reps []*replica
					for range 2 {
						x := startReplicaWith(b, ts.url(), m, ss, func(c *envserver.Config) { c.MaxSessions = sessions })
						reps = append(reps, x)
						bases = append(bases, x.hs.URL)
					}
					written = col.records.Load
					stop = func() {
						for _, x := range reps {
							x.stop()
						}
						col.stop()
					}
				}
				var failed atomic.Value
				var wg sync.WaitGroup
				b.StartTimer()
				c0, t0 := cpuNow(), time.Now()
				for i := range sessions {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range episodes {
							if err := play(bases[i%len(bases)]); err != nil {
								failed.Store(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				for failed.Load() == nil && written() < int64(sessions*episodes) { // the folder holds them all
					time.Sleep(time.Millisecond)
				}
				wall += time.Since(t0)
				cpu += cpuNow() - c0
				b.StopTimer()
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
				stop()
				if n := len(envRecords(b, dir)); n != sessions*episodes {
					b.Fatalf("%d records, want %d", n, sessions*episodes)
				}
				steps += int64(sessions * episodes * len(actions))
				b.StartTimer()
			}
			b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
			b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(steps), "cpu-us/step")
			b.ReportMetric(float64(cpu.Microseconds())/float64(steps/int64(len(actions))), "cpu-us/episode")
		})
	}
}
