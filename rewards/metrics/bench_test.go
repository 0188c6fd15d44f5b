package metrics

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
)

// The demo's size: the built-in suite × 8 rollouts × the 5 simulated
// checkpoints (1,720 trajectories).
const demoRollouts = 8

var (
	benchRoot string // removed by TestMain
	benchOnce sync.Once
	benchDirs map[int][]string // multiple of the demo's size -> run folders
	benchErr  error
)

// benchRuns rolls out the simulated family at the demo's size in-process,
// then writes a copy ten times as large (each record repeated under ten
// rollout indexes, as 80 rollouts would give).
func benchRuns(b *testing.B) map[int][]string {
	benchOnce.Do(func() {
		root, err := os.MkdirTemp("", "antidrift-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchRoot = root
		benchDirs = map[int][]string{}
		ss, err := suite.Load()
		if err != nil {
			benchErr = err
			return
		}
		for _, p := range sim.Profiles {
			one := filepath.Join(root, "1x", p.Name)
			if benchErr = rollOut(one, ss, p); benchErr != nil {
				return
			}
			ten := filepath.Join(root, "10x", p.Name)
			if benchErr = replicate(one, ten, 10); benchErr != nil {
				return
			}
			benchDirs[1] = append(benchDirs[1], one)
			benchDirs[10] = append(benchDirs[10], ten)
		}
		// Warm up once-only initialisation (the scenario schema compiler),
		// so that the first measured size does not pay for it.
		runs, err := ReadRuns(benchDirs[1])
		if err == nil {
			_, err = Score(runs, Options{Bootstrap: Bootstrap{Seed: 1, Replicates: 1}}, nil)
		}
		benchErr = err
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDirs
}

func rollOut(dir string, ss []*scenario.Scenario, p sim.Profile) error {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	name := "sim:" + p.Name
	plan := store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Policy: name,
		Checkpoint: name, Framework: engine.FrameworkNormal, Rollouts: demoRollouts, Seed: 1, Shard: "0/1", MaxSteps: 20}
	run, err := store.Open(dir, store.Manifest{Version: "bench", Run: "bench-" + p.Name, Plan: plan}, false)
	if err != nil {
		return err
	}
	_, err = engine.Run(context.Background(), engine.Config{
		Scenarios: ss, Policy: sim.New(p, ss), PolicyName: name, Checkpoint: name, Framework: engine.FrameworkNormal,
		Rollouts: demoRollouts, Concurrency: runtime.GOMAXPROCS(0), Seed: 1, Version: "bench",
	}, run)
	return err
}

func replicate(from, to string, times int) error {
	m, err := store.ReadManifest(from)
	if err != nil {
		return err
	}
	m.Plan.Rollouts *= times
	if err := os.MkdirAll(filepath.Join(to, "trajectories"), 0o755); err != nil {
		return err
	}
	if err := store.WriteManifest(to, m); err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(to, "trajectories", "part-0-of-1.jsonl"))
	if err != nil {
		return err
	}
	defer out.Close()
	w := bufio.NewWriterSize(out, 1<<20)
	for j := range times {
		it := store.Records(from)
		for it.Next() {
			r := it.At()
			r.Rollout += j * demoRollouts
			r.TrajID = fmt.Sprintf("%s-%d", r.TrajID, j)
			line, err := json.Marshal(r)
			if err != nil {
				it.Close()
				return err
			}
			w.Write(append(line, '\n'))
		}
		it.Close()
		if err := it.Err(); err != nil {
			return err
		}
	}
	return w.Flush()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

// heapSampler records the largest heap (live and not yet collected
// objects) seen while it runs.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
}

func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > h.peak {
			h.peak = v
		}
	}
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-h.stop:
				read()
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) finish() uint64 {
	close(h.stop)
	<-h.done
	return h.peak
}

// BenchmarkScore scores the simulated family at the demo's size (1x, 1,720
// trajectories) and ten times it (10x, 17,200), with the default grouping
// and 1,000 bootstrap replicates. Memory must stay flat in the number of
// trajectories: peak-heap-MiB (largest heap during scoring, garbage
// included) and live-MiB (heap held after a GC, result alive) should not
// grow from 1x to 10x; B/op counts allocation churn, which does grow.
func BenchmarkScore(b *testing.B) {
	dirs := benchRuns(b)
	var peak1x uint64
	for _, mult := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dx", mult), func(b *testing.B) {
			runs, err := ReadRuns(dirs[mult])
			if err != nil {
				b.Fatal(err)
			}
			var peak, live uint64
			var n int
			b.ReportAllocs()
			for b.Loop() {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				h := sampleHeap()
				res, err := Score(runs, Options{Bootstrap: Bootstrap{Seed: 1}}, nil)
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, h.finish())
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				if after.HeapAlloc > before.HeapAlloc {
					live = max(live, after.HeapAlloc-before.HeapAlloc)
				}
				n = 0
				for _, g := range res.Groups {
					n += g.N
				}
				runtime.KeepAlive(res)
			}
			// Flat means flat: ten times the trajectories may not double the
			// peak heap (4 MiB of slack for the GC's pacing).
			if mult == 1 {
				peak1x = peak
			} else if peak1x > 0 && peak > 2*peak1x+4<<20 {
				b.Errorf("peak heap grew from %.1f MiB at 1x to %.1f MiB at %dx: scoring holds trajectories", float64(peak1x)/(1<<20), float64(peak)/(1<<20), mult)
			}
			b.ReportMetric(float64(n), "records")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(live)/(1<<20), "live-MiB")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(n)*1e6, "µs/record")
		})
	}
}
