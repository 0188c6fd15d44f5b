package store_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/internal/racetest"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// iterated is everything an Iterator reports, in order.
type iterated struct {
	recs []trajectory.Record
	pos  []string
	err  string
}

func iterate(dirs ...string) iterated {
	var out iterated
	it := store.Records(dirs...)
	defer it.Close()
	for it.Next() {
		out.recs = append(out.recs, *it.At())
		f, l := it.Pos()
		out.pos = append(out.pos, fmt.Sprintf("%s:%d", f, l))
	}
	if it.Err() != nil {
		out.err = it.Err().Error()
	}
	return out
}

// simRun rolls sim:base out over the built-in suite into a run folder and
// adds a second file (thousands of lines: many decoding batches). Under the
// race detector it rolls out two scenarios a domain (hundreds of lines,
// still several batches): instrumented, decoding the whole suite's lines
// again for every core count took minutes.
func simRun(t *testing.T, rollouts int) string {
	t.Helper()
	ss, err := suite.Load()
	if err != nil {
		t.Fatal(err)
	}
	if racetest.Enabled {
		ss = suite.PerDomain(ss, 2)
	}
	p, err := sim.Lookup("sim:base")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	for _, shard := range []engine.Shard{{I: 0, N: 1}} {
		cfg := engine.Config{Scenarios: ss, Policy: sim.New(p, ss), PolicyName: "sim:base", Checkpoint: "sim:base",
			Rollouts: rollouts, Concurrency: 8, Seed: 5, Version: "test", Shard: shard}
		run, err := store.Open(dir, store.Manifest{Version: "test", Run: "r", Created: "2026-01-01T00:00:00Z",
			Plan: store.Plan{ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids,
				Policy: "sim:base", Checkpoint: "sim:base", Framework: engine.FrameworkNormal, Rollouts: rollouts, Seed: 5, Shard: shard.String()}}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Run(context.Background(), cfg, run); err != nil {
			t.Fatal(err)
		}
		run.Close()
		// A second file: the same episodes under other traj_ids.
		b, err := os.ReadFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(`{"traj_id":"`), []byte(`{"traj_id":"z`))
		if err := os.WriteFile(filepath.Join(dir, "trajectories", "part-1-of-1.jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withProcs runs fn with GOMAXPROCS set to n.
func withProcs(n int, fn func()) {
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	fn()
}

// The parallel decoding hands out exactly what reading one line at a time
// gives, for any number of cores: the same records in the same order, the
// same positions, and the same first error.
func TestRecordsSameForAnyCoreCount(t *testing.T) {
	dir := simRun(t, 24)
	// The reference: every line of the files, in order, decoded alone.
	var want iterated
	files, _ := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	for _, f := range files {
		for i, l := range corpus.FileLines(t, f) {
			var r trajectory.Record
			if err := store.DecodeRecord(l, &r); err != nil {
				t.Fatal(err)
			}
			want.recs = append(want.recs, r)
			want.pos = append(want.pos, fmt.Sprintf("%s:%d", f, i+1))
		}
	}
	least := 2000
	if racetest.Enabled {
		least = 600
	}
	if len(want.recs) < least {
		t.Fatalf("only %d records: want several decoding batches (%d)", len(want.recs), least)
	}

	// A damaged copy: a bad line deep in the second file, then a torn tail.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.CopyFS(bad, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	badLine := len(lines) * 2 / 3 // deep in the file: many batches before it
	lines[badLine] = []byte("{\"traj_id\": 7}\n")
	lines = append(lines[:len(lines)-1], []byte("\n  \n"), []byte(`{"traj_id":"x"`))
	if err := os.WriteFile(filepath.Join(bad, "trajectories", filepath.Base(files[1])), bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}

	hostile, _ := filepath.Glob(filepath.Join("..", "..", "cmd", "antidrift", "testdata", "hostile", "runs", "*"))
	for _, n := range []int{1, 2, 4} {
		withProcs(n, func() {
			got := iterate(dir)
			if got.err != "" || !reflect.DeepEqual(got.recs, want.recs) || !reflect.DeepEqual(got.pos, want.pos) {
				t.Fatalf("GOMAXPROCS=%d: %d records (error %q), want the %d read one line at a time", n, len(got.recs), got.err, len(want.recs))
			}
			ref := iterated{}
			withProcs(1, func() { ref = iterate(bad) })
			got = iterate(bad)
			if got.err == "" || got.err != ref.err || len(got.recs) != len(ref.recs) || !reflect.DeepEqual(got.pos, ref.pos) {
				t.Fatalf("GOMAXPROCS=%d on the damaged copy: %d records, error %q; with one core %d records, error %q", n, len(got.recs), got.err, len(ref.recs), ref.err)
			}
			if wantErr := "store: " + filepath.Join(bad, "trajectories", filepath.Base(files[1])) + fmt.Sprintf(":%d: not a valid record:", badLine+1); len(got.err) < len(wantErr) || got.err[:len(wantErr)] != wantErr {
				t.Fatalf("damaged copy: error %q, want it to start %q", got.err, wantErr)
			}
			for _, h := range hostile {
				var one iterated
				withProcs(1, func() { one = iterate(h) })
				if many := iterate(h); !reflect.DeepEqual(one, many) {
					t.Errorf("GOMAXPROCS=%d, %s: %d records, error %q; with one core %d, error %q", n, h, len(many.recs), many.err, len(one.recs), one.err)
				}
			}
		})
	}
}

// Stopping early releases the reader and the decoders.
func TestRecordsCloseEarly(t *testing.T) {
	dir := simRun(t, 8)
	before := runtime.NumGoroutine()
	for range 20 {
		it := store.Records(dir)
		if !it.Next() {
			t.Fatal(it.Err())
		}
		it.Close()
		it.Close() // twice is fine
	}
	runtime.GC()
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Fatalf("%d goroutines before, %d after closing 20 iterators early", before, after)
	}
}

// Index.Each, LoadGroup and EachAt decode ahead on every core and give
// what loading one record at a time gives, errors included.
func TestIndexEachSameForAnyCoreCount(t *testing.T) {
	dir := simRun(t, 12)
	ix, err := store.OpenIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.Sort(store.ByScenario, store.ByRollout)
	var want []trajectory.Record
	for i := range ix.Len() {
		r, err := ix.Load(i)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, *r)
	}
	shuffled := make([]int, ix.Len())
	for k := range shuffled {
		shuffled[k] = (k * 7919) % ix.Len()
	}
	groups := ix.Groups(store.ByScenario)
	for _, n := range []int{1, 2, 4} {
		withProcs(n, func() {
			var got []trajectory.Record
			if err := ix.Each(func(i int, r *trajectory.Record) error {
				if i != len(got) {
					t.Fatalf("position %d, want %d", i, len(got))
				}
				got = append(got, *r)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("GOMAXPROCS=%d: Each differs from Load", n)
			}
			k := 0
			if err := ix.EachAt(shuffled, func(i int, r *trajectory.Record) error {
				if i != shuffled[k] || !reflect.DeepEqual(*r, want[i]) {
					t.Fatalf("GOMAXPROCS=%d: EachAt's record %d is not position %d", n, k, shuffled[k])
				}
				k++
				return nil
			}); err != nil || k != len(shuffled) {
				t.Fatalf("GOMAXPROCS=%d: EachAt: %d records, %v", n, k, err)
			}
			for _, g := range groups[:3] {
				recs, err := ix.LoadGroup(g)
				if err != nil {
					t.Fatal(err)
				}
				for j, r := range recs {
					if !reflect.DeepEqual(*r, want[g.From+j]) {
						t.Fatalf("GOMAXPROCS=%d: LoadGroup record %d differs", n, j)
					}
				}
			}
			// fn's error stops the walk there.
			calls := 0
			stop := fmt.Errorf("stop")
			if err := ix.Each(func(i int, _ *trajectory.Record) error {
				calls++
				if i == 100 {
					return stop
				}
				return nil
			}); err != stop || calls != 101 {
				t.Fatalf("GOMAXPROCS=%d: %d calls, error %v; want 101 calls and fn's error", n, calls, err)
			}
		})
	}

	// A line damaged after indexing: the same error, after the same
	// records, for any number of cores.
	files, _ := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(`"traj_id":"`)) // the first record's id
	copy(b[at+len(`"traj_id":"`):], "zzzz")
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	var first string
	for _, n := range []int{1, 2, 4} {
		withProcs(n, func() {
			calls := 0
			err := ix.Each(func(int, *trajectory.Record) error { calls++; return nil })
			if err == nil {
				t.Fatalf("GOMAXPROCS=%d: no error for a record changed after indexing", n)
			}
			msg := fmt.Sprintf("%d records, %v", calls, err)
			if first == "" {
				first = msg
			} else if msg != first {
				t.Fatalf("GOMAXPROCS=%d: %s; with one core: %s", n, msg, first)
			}
		})
	}
}
