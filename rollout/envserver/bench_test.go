//go:build unix

package envserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchSessions is the number of sessions open at once (the 256).
const benchSessions = 256

func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEpisodes is the episodes each session runs per op
// (ANTIDRIFT_BENCH_ENV_EPISODES).
func benchEpisodes(b *testing.B) int {
	if v := os.Getenv("ANTIDRIFT_BENCH_ENV_EPISODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("ANTIDRIFT_BENCH_ENV_EPISODES=%q: want a positive integer", v)
		}
		return n
	}
	return 4
}

// benchServe runs benchSessions clients at once, each playing the scripted
// episode (5 steps, a drifting call among them) episodes times through
// play, and reports steps/s and CPU per step (client and server together:
// one process).
func benchServe(b *testing.B, play func(x *testServer, sid string, actions []Action) error) {
	s := testScenario(b)
	actions := script(b, s)
	episodes := benchEpisodes(b)
	var steps int64
	var wall, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		x := startServer(b, b.TempDir(), func(c *Config) { c.MaxSessions = benchSessions })
		var failed atomic.Value
		var wg sync.WaitGroup
		b.StartTimer()
		c0, t0 := benchCPU(b), time.Now()
		for range benchSessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range episodes {
					if err := play(x, s.ID, actions); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		wall += time.Since(t0)
		cpu += benchCPU(b) - c0
		b.StopTimer()
		if err, _ := failed.Load().(error); err != nil {
			b.Fatal(err)
		}
		x.stop()
		if n := len(readRecords(b, x.dir)); n != benchSessions*episodes {
			b.Fatalf("%d records, want %d", n, benchSessions*episodes)
		}
		steps += int64(benchSessions * episodes * len(actions))
		b.StartTimer()
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/op")
	b.ReportMetric(benchSessions, "sessions")
	b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(steps), "cpu-us/step")
}

// BenchmarkServeSessions: the session layer alone (no transport): the
// engine's loop behind the bridge, records written.
func BenchmarkServeSessions(b *testing.B) {
	benchServe(b, func(x *testServer, sid string, actions []Action) error {
		ss, _, err := x.openSession(ResetParams{ScenarioID: sid, Client: "bench"}, ProtoHTTP, true)
		if err != nil {
			return err
		}
		for _, a := range actions {
			if _, err := ss.step(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkServeHTTP: the same episodes through POST /reset and POST /step
// over loopback HTTP with keep-alive connections.
func BenchmarkServeHTTP(b *testing.B) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchSessions, MaxIdleConns: benchSessions}}
	do := func(url string, body any, out any) error {
		raw, _ := json.Marshal(body)
		resp, err := client.Post(url, "application/json", bytes.NewReader(raw))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", url, resp.StatusCode, b)
		}
		return json.Unmarshal(b, out)
	}
	benchServe(b, func(x *testServer, sid string, actions []Action) error {
		var r Response
		if err := do(x.ts.URL+"/reset", ResetParams{ScenarioID: sid, Client: "bench"}, &r); err != nil {
			return err
		}
		id := r.Observation.EpisodeID
		for _, a := range actions {
			if err := do(x.ts.URL+"/step", map[string]any{"episode_id": id, "action": a}, &r); err != nil {
				return err
			}
		}
		if !r.Done {
			return fmt.Errorf("episode %s did not end", id)
		}
		return nil
	})
}
