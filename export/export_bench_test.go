package export

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// The data benchmark: export the trajectories of a run the demo's size
// (the five simulated checkpoints × 43 built-in scenarios × 8 rollouts =
// 1720 records, rolled out in-process) and of one ten times larger (the
// same episodes as 80 rollouts per scenario, with distinct ids), and report
// throughput and peak heap. Memory must stay flat from 1× to 10×: rows are
// streamed one row group at a time; only the record index (~64 B a record)
// grows with the input.
//
//	go test -run '^$' -bench . -benchtime 1x ./export/

var (
	benchOnce sync.Once
	benchDirs map[string][]string // "1x", "10x" → run folders
	benchRoot string
	benchErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

func benchRuns(b *testing.B) map[string][]string {
	benchOnce.Do(func() {
		benchRoot, benchErr = os.MkdirTemp("", "antidrift-export-bench-")
		if benchErr != nil {
			return
		}
		benchDirs = map[string][]string{}
		for _, p := range []string{"base", "sft", "dpo-1", "dpo-2", "overcautious"} {
			one := simRun(b, filepath.Join(benchRoot, "1x", p), p, 8, 1, 64)
			benchDirs["1x"] = append(benchDirs["1x"], one)
			ten := filepath.Join(benchRoot, "10x", p)
			if benchErr = replicate(one, ten, 10); benchErr != nil {
				return
			}
			benchDirs["10x"] = append(benchDirs["10x"], ten)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDirs
}

// replicate writes a run folder holding every record of src k times, as
// rollouts r + 8·i with their own traj_id.
func replicate(src, dst string, k int) error {
	m, err := store.ReadManifest(src)
	if err != nil {
		return err
	}
	m.Plan.Rollouts *= k
	if err := os.MkdirAll(filepath.Join(dst, "trajectories"), 0o755); err != nil {
		return err
	}
	if err := store.WriteManifest(dst, m); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dst, "trajectories", "part-0-of-1.jsonl"))
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	it := store.Records(src)
	defer it.Close()
	for it.Next() {
		rec := *it.At()
		base := rec.Rollout
		for i := 0; i < k; i++ {
			rec.Rollout = base + 8*i
			rec.TrajID = trajectory.TrajID(rec.Run, rec.Checkpoint, rec.Framework, rec.ScenarioID, rec.Rollout, rec.Seed)
			line, err := json.Marshal(&rec)
			if err != nil {
				return err
			}
			bw.Write(append(line, '\n'))
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func dirBytes(dirs []string) int64 {
	var n int64
	for _, d := range dirs {
		fs, _ := filepath.Glob(filepath.Join(d, "trajectories", "*.jsonl"))
		for _, f := range fs {
			if st, err := os.Stat(f); err == nil {
				n += st.Size()
			}
		}
	}
	return n
}

// peakHeap samples the heap every millisecond until stop is closed: the
// largest heap in use (live plus garbage not yet collected, which GOGC lets
// grow to about twice the live heap) and the largest live heap a
// collection found.
func peakHeap(stop <-chan struct{}, live, objects *uint64, done *sync.WaitGroup) {
	defer done.Done()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > *live {
			*live = v
		}
		if v := s[1].Value.Uint64(); v > *objects {
			*objects = v
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// exportOnce exports dirs into a new folder and measures it.
type exportRun struct {
	rows          int64
	elapsed       time.Duration
	live, objects uint64 // peak live heap (memory pass), peak heap in use
	base          uint64 // live heap before the export
	alloc         uint64
	parquetBytes  int64
}

// exportOnce exports dirs; with probe > 0 it collects garbage every probe
// rows and records the live heap then (the memory pass).
func exportOnce(b *testing.B, dirs []string, fmts []string, probe int) exportRun {
	out := b.TempDir()
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	var live, obj uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go peakHeap(stop, &live, &obj, &wg)
	var maxLive atomic.Uint64
	var n atomic.Int64
	split := func(string) string { // called on every core (ExportRuns builds rows in parallel)
		if k := n.Add(1); probe > 0 && k%int64(probe) == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			for cur := maxLive.Load(); ms.HeapAlloc > cur && !maxLive.CompareAndSwap(cur, ms.HeapAlloc); cur = maxLive.Load() {
			}
		}
		return "train"
	}
	start := time.Now()
	res, err := ExportRuns(RunsConfig{Dirs: dirs, Table: TableTrajectories, Out: out, Formats: fmts, NoCard: true, Split: split})
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&ms1)
	if err != nil {
		b.Fatal(err)
	}
	r := exportRun{rows: res.Table.Rows, elapsed: elapsed, alloc: ms1.TotalAlloc - ms0.TotalAlloc}
	// Whole-process figures: the test binary's own heap (the built-in
	// suite, the benchmark's bookkeeping) is a few MiB of them.
	r.live, r.objects, r.base = maxLive.Load(), obj, ms0.HeapAlloc
	if st, err := os.Stat(filepath.Join(out, TableTrajectories+".parquet")); err == nil {
		r.parquetBytes = st.Size()
	}
	return r
}

// BenchmarkExportTrajectories reports, per input size and formats:
// rows/s and input-MB/s (run-folder JSONL read per second) with the default
// GC; peak-heap-MiB, the largest heap in use (live plus uncollected garbage)
// sampled every millisecond with the default GC; peak-live-MiB, the largest
// live heap, measured in a second export that collects garbage every 128
// rows (the same phases of every row group at both sizes). Heap figures
// are the whole process's, base-heap-MiB of them before the export.
func BenchmarkExportTrajectories(b *testing.B) {
	runs := benchRuns(b)
	for _, size := range []string{"1x", "10x"} {
		for _, fmts := range [][]string{{FormatParquet}, AllFormats} {
			name := size + "/parquet"
			if len(fmts) > 1 {
				name = size + "/parquet+arrow+jsonl"
			}
			b.Run(name, func(b *testing.B) {
				dirs := runs[size]
				in := dirBytes(dirs)
				var rows int64
				var elapsed time.Duration
				var peakObj, peakLive, alloc, base uint64
				var pq int64
				for i := 0; i < b.N; i++ {
					r := exportOnce(b, dirs, fmts, 0)
					rows += r.rows
					elapsed += r.elapsed
					alloc += r.alloc
					peakObj = max(peakObj, r.objects)
					pq = r.parquetBytes
					b.StopTimer()
					m := exportOnce(b, dirs, fmts, 128)
					peakLive, base = max(peakLive, m.live), m.base
					b.StartTimer()
				}
				sec := elapsed.Seconds()
				b.ReportMetric(float64(rows)/sec, "rows/s")
				b.ReportMetric(float64(in)*float64(b.N)/sec/1e6, "input-MB/s")
				b.ReportMetric(float64(peakLive)/(1<<20), "peak-live-MiB")
				b.ReportMetric(float64(peakObj)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(base)/(1<<20), "base-heap-MiB")
				b.ReportMetric(float64(alloc)/float64(b.N)/(1<<20), "alloc-MiB/op")
				b.ReportMetric(float64(in)/1e6, "input-MB")
				b.ReportMetric(float64(pq)/1e6, "parquet-MB")
			})
		}
	}
}
