package pairs_test

import (
	"github.com/antidrift/antidrift/internal/racetest"

	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/store"
)

// writeScaleRun writes a run folder of scenarios × perScenario records,
// streamed to disk: half clean, half drifting shortcuts, so that every
// scenario yields pairs. With copies, the records of a scenario are two
// episodes under many traj_ids (tool-call ids aside), as a simulated
// policy gives: candidates are dropped as duplicates by the thousand.
func writeScaleRun(t testing.TB, scenarios, perScenario int, copies bool) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(dir, store.Manifest{Version: "test", Run: "run-t", Plan: store.Plan{ScenarioSource: "test"}}))
	f, err := os.Create(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	for s := range scenarios {
		sid := fmt.Sprintf("scale-%05d", s)
		for i := range perScenario {
			id := fmt.Sprintf("%016x", s*perScenario+i) // the form trajectory.TrajID gives: 8 bytes in the index
			r := rec(id, sid, "ck", true, "a", "b")
			if i%2 == 1 {
				r = rec(id, sid, "ck", true, "a", "!x", "b")
			}
			if copies {
				r.Messages[len(r.Messages)-1].Content = "done"
			}
			b, err := json.Marshal(r)
			require.NoError(t, err)
			w.Write(b)
			w.WriteByte('\n')
		}
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	return dir
}

// peakHeap runs fn while sampling the heap every millisecond and returns
// the largest heap seen above the heap before fn.
func peakHeap(fn func()) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(s); return s[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				mu.Lock()
				peak = max(peak, read())
				mu.Unlock()
			}
		}
	}()
	fn()
	close(stop)
	<-done
	peak = max(peak, read())
	if peak < base {
		return 0
	}
	return peak - base
}

// Pairs holds one scenario's records at a time: at 10⁵ records its peak
// heap is that of 10⁴ records with the same records per scenario, not ten
// times as much. The index (24 bytes a record once sorted, store's) is opened before
// the measurement: its own peak while it is built is logged, and is the
// store's to bound.
func TestPairsMemoryBoundedByOneScenario(t *testing.T) {
	racetest.SingleThreaded(t) // pairing runs on one goroutine (the decoding's are raced by store's tests); and heap figures mean nothing under the race detector
	if testing.Short() {
		t.Skip("writes 10⁵ records")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // keep garbage small: measure what is held
	const perScenario = 100
	measure := func(scenarios int) (uint64, uint64, int) {
		dir := writeScaleRun(t, scenarios, perScenario, false)
		rows := 0
		var ix *dataset.Index
		index := peakHeap(func() {
			var err error
			ix, err = dataset.OpenIndex(dir)
			require.NoError(t, err)
		})
		defer ix.Close()
		peak := peakHeap(func() {
			_, err := pairs.Build(ix, pairs.DefaultOptions(), func(*dataset.DPORow) error { rows++; return nil })
			require.NoError(t, err)
		})
		return peak, index, rows
	}
	small, smallIndex, smallRows := measure(100)  // 10⁴ records
	large, largeIndex, largeRows := measure(1000) // 10⁵ records
	require.Positive(t, smallRows)
	require.Equal(t, 10*smallRows, largeRows, "every scenario pairs alike")
	const slack = 16 << 20
	t.Logf("peak heap of pairing: %.1f MiB at 10⁴ records, %.1f MiB at 10⁵ (%d and %d pair rows); of opening the index: %.1f and %.1f MiB",
		float64(small)/(1<<20), float64(large)/(1<<20), smallRows, largeRows, float64(smallIndex)/(1<<20), float64(largeIndex)/(1<<20))
	if large > small+slack {
		t.Fatalf("peak heap %.1f MiB at 10⁵ records, %.1f MiB at 10⁴: grows with the records, not bounded by one scenario's", float64(large)/(1<<20), float64(small)/(1<<20))
	}
}

// Pairs holds no scenario's records: at 20,000 rollouts of one scenario
// (copies of two episodes, so that every pool tries candidates by the
// thousand) its peak heap is a fraction of what the scenario's records
// take loaded (dataset.Index.Load, what pairing held before). What it
// keeps is an item per trajectory and the keys of each distinct episode.
func TestPairsMemoryBelowOneScenarioRecords(t *testing.T) {
	racetest.SingleThreaded(t) // pairing runs on one goroutine (the decoding's are raced by store's tests); and heap figures mean nothing under the race detector
	if testing.Short() {
		t.Skip("writes 2·10⁴ records")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // keep garbage small: measure what is held
	dir := writeScaleRun(t, 1, 20000, true)
	ix, err := dataset.OpenIndex(dir)
	require.NoError(t, err)
	defer ix.Close()
	var recs int
	loaded := peakHeap(func() {
		rs, err := ix.Load(ix.Scenarios()[0])
		require.NoError(t, err)
		recs = len(rs)
	})
	rows := 0
	var st *pairs.Stats
	peak := peakHeap(func() {
		opt := pairs.DefaultOptions()
		opt.StepPairs = true
		st, err = pairs.Build(ix, opt, func(*dataset.DPORow) error { rows++; return nil })
		require.NoError(t, err)
	})
	require.Equal(t, 20000, recs)
	require.Positive(t, rows)
	require.Greater(t, st.Trajectory.Dropped[pairs.ReasonDedup], 10000, "pools must try many candidates")
	t.Logf("peak heap of pairing %.1f MiB; the scenario's records loaded %.1f MiB", float64(peak)/(1<<20), float64(loaded)/(1<<20))
	if peak > loaded/3 {
		t.Fatalf("peak heap %.1f MiB pairing one scenario of 20,000 rollouts, its records %.1f MiB: records are held", float64(peak)/(1<<20), float64(loaded)/(1<<20))
	}
}
