package view

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
)

// benchTrajectories is the size of the run the viewer benchmark opens:
// the built-in suite × as many rollouts as make about 43,000 trajectories.
const benchTrajectories = 43000

// benchRunDir makes the benchmark's run once (a simulated checkpoint,
// sim:base, in process) and keeps it in the temporary folder for later
// runs of the benchmark. A kept run is not checked against the suite: the
// suite, once loaded, would stay in the heap the benchmark measures.
func benchRunDir(b *testing.B) string {
	dir := filepath.Join(os.TempDir(), "antidrift-bench-view-"+strconv.Itoa(benchTrajectories))
	if _, err := store.ReadManifest(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
			return dir
		}
	}
	os.RemoveAll(dir)
	makeRun(b, dir, "sim:base", benchTrajectories/suiteSize(b))
	if err := os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkViewOpen opens a 43,000-trajectory run as `antidrift view` does
// (indexing in the background, then following the run for growth) and
// reports:
//
//	first-page-ms   from New to a full first page of the list, served while indexing
//	index-ms        until every record is indexed
//	filter-ms       median of filter changes on the full index (server side)
//	search-ms       one text search over every message
//	heap-MiB        live heap with the whole run indexed
func BenchmarkViewOpen(b *testing.B) {
	dir := benchRunDir(b)
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		start := time.Now()
		s, err := New([]string{dir}, nil)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Index() }()
		ctx, stopWatch := context.WithCancel(context.Background())
		go s.Watch(ctx, 500*time.Millisecond)
		// The first page is there once it holds a full page of rows.
		q, _ := parseQuery(url.Values{})
		for {
			res, err := s.runs.list(q, s.search)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Rows) == q.Size {
				break
			}
			time.Sleep(time.Millisecond)
		}
		first := time.Since(start)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		indexed := time.Since(start)

		var filters []float64
		for _, v := range []url.Values{
			{"drift": {"true"}}, {"domain": {"finance"}}, {"type": {"data"}, "success": {"true"}},
			{"sort": {"-tokens"}}, {"kind": {"purpose_limitation"}, "page": {"3"}}, {"status": {"max_steps"}},
			{"scenario": {"health-flu-return-001"}}, {},
		} {
			q, err := parseQuery(v)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if _, err := s.runs.list(q, s.search); err != nil {
				b.Fatal(err)
			}
			filters = append(filters, float64(time.Since(t0).Microseconds())/1000)
		}
		sort.Float64s(filters)
		t0 := time.Now()
		q, _ = parseQuery(url.Values{"q": {"serial returners"}})
		res, err := s.runs.list(q, s.search)
		if err != nil {
			b.Fatal(err)
		}
		search := time.Since(t0)

		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(first.Microseconds())/1000, "first-page-ms")
		b.ReportMetric(float64(indexed.Milliseconds()), "index-ms")
		b.ReportMetric(filters[len(filters)/2], "filter-ms")
		b.ReportMetric(float64(search.Milliseconds()), "search-ms")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(len(s.runs.recs)), "trajectories")
		if res.Total == 0 {
			b.Fatal("the search found nothing")
		}
		stopWatch()
		runtime.KeepAlive(s)
	}
}
