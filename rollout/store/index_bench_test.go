package store_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
)

// BenchmarkIndexSpilled opens, sorts by scenario, groups, compacts and
// walks the index of runs of 2 Mi and 4 Mi records (two and four times the
// entries an index holds before it spills), held in memory and spilled to
// its temporary file, and reports the most heap found live by a garbage
// collection meanwhile (peak-live-MiB, sampled every 2 ms) and the most
// heap in use, garbage not yet collected included (peak-heap-MiB): held,
// the index grows with the run; spilled, it does not. The records hold
// only their identity, which is all the index reads.
func BenchmarkIndexSpilled(b *testing.B) {
	for _, tc := range []struct {
		records int
		held    bool
	}{{2 << 20, true}, {2 << 20, false}, {4 << 20, false}} {
		mode := "spilled"
		if tc.held {
			mode = "held"
		}
		b.Run(fmt.Sprintf("%dMi/%s", tc.records>>20, mode), func(b *testing.B) {
			dir := identityRun(b, tc.records)
			if tc.held {
				defer store.SetSpillEntries(1 << 30)()
			}
			for b.Loop() {
				stop := watchHeap()
				ix, err := store.OpenIndex(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := ix.Sort(store.ByScenario); err != nil {
					b.Fatal(err)
				}
				if gs := ix.Groups(store.ByScenario); len(gs) != 43 {
					b.Fatalf("%d groups", len(gs))
				}
				ix.Compact()
				for i := range ix.Len() {
					_ = ix.TrajID(i)
				}
				if ix.Len() != tc.records || ix.Spilled() == tc.held {
					b.Fatalf("%d records, spilled %v", ix.Len(), ix.Spilled())
				}
				ix.Close()
				live, heap := stop()
				b.ReportMetric(live/(1<<20), "peak-live-MiB")
				b.ReportMetric(heap/(1<<20), "peak-heap-MiB")
			}
		})
	}
}

// identityRun writes a run folder of n records that hold only their
// identity, their traj_ids in no order (as concurrent episodes finish).
func identityRun(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := store.WriteManifest(dir, store.Manifest{Version: "bench", Run: "r", Plan: store.Plan{Checkpoint: "ck"}}); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"traj_id":"%016x","run":"r","checkpoint":"ck","framework":"normal","scenario_id":"s%02d","rollout":%d,"seed":%d,"success":true}`+"\n",
			uint64(i)*0x9e3779b97f4a7c15, i%43, i/43, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// watchHeap samples the heap until the returned function is called, which
// returns the most live heap a collection found and the most heap in use,
// in bytes.
func watchHeap() func() (live, heap float64) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	var mu sync.Mutex
	var peakLive, peak uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peakLive = max(peakLive, sample[0].Value.Uint64())
			peak = max(peak, sample[1].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (float64, float64) {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return float64(peakLive), float64(peak)
	}
}
