package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var loadSuite = sync.OnceValues(suite.Load)

// fixture is a small simulated run: its engine config and its manifest.
type fixture struct {
	cfg engine.Config
	man store.Manifest
}

func newFixture(t *testing.T, run string, seed int64, shard engine.Shard) fixture {
	t.Helper()
	all, err := loadSuite()
	require.NoError(t, err)
	ss := all[:3]
	if shard.N == 0 {
		shard = engine.Shard{I: 0, N: 1}
	}
	pol := sim.New(sim.Profiles[0], ss)
	cfg := engine.Config{Scenarios: ss, Policy: pol, PolicyName: pol.Name(), Checkpoint: "base", Rollouts: 2,
		Seed: seed, Shard: shard, Concurrency: 3, Version: "test", Framework: engine.FrameworkNormal}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	man := store.Manifest{Version: "test", Run: run, Created: "2026-01-01T00:00:00Z", Plan: store.Plan{
		ScenarioSource: "builtin", ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Policy: cfg.PolicyName,
		Checkpoint: cfg.Checkpoint, Framework: cfg.Framework, Rollouts: cfg.Rollouts, Seed: seed, Shard: shard.String(),
	}}
	return fixture{cfg: cfg, man: man}
}

func (f fixture) open(t *testing.T, dir string) *store.Run {
	t.Helper()
	r, err := store.Open(dir, f.man, false)
	require.NoError(t, err)
	return r
}

// run opens dir and runs what is missing.
func (f fixture) run(t *testing.T, dir string) engine.Summary {
	t.Helper()
	sum, err := engine.Run(context.Background(), f.cfg, f.open(t, dir))
	require.NoError(t, err)
	return sum
}

func (f fixture) planIDs() []string {
	var ids []string
	for _, p := range engine.Plan(f.cfg, f.man.Run) {
		ids = append(ids, p.TrajID)
	}
	sort.Strings(ids)
	return ids
}

// records reads run folders with the iterator: the ids in order, and the
// records by id without their timings. A duplicate id fails.
func records(t *testing.T, dirs ...string) ([]string, map[string]trajectory.Record) {
	t.Helper()
	var order []string
	byID := map[string]trajectory.Record{}
	it := store.Records(dirs...)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		_, dup := byID[r.TrajID]
		require.False(t, dup, "duplicate traj_id %s", r.TrajID)
		r.Timings = trajectory.Timings{}
		order = append(order, r.TrajID)
		byID[r.TrajID] = r
	}
	require.NoError(t, it.Err())
	return order, byID
}

func sorted(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Strings(out)
	return out
}

func trajFile(dir string) string {
	return filepath.Join(dir, "trajectories", store.ShardFile("0/1"))
}

// lines splits a file into its lines, newlines kept.
func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func TestShardFile(t *testing.T) {
	assert.Equal(t, "part-0-of-1.jsonl", store.ShardFile("0/1"))
	assert.Equal(t, "part-3-of-8.jsonl", store.ShardFile("3/8"))
}

func TestTornLastLineIsTruncatedAndRerun(t *testing.T) {
	cases := []struct {
		name string
		// tear changes the complete file's bytes as a crash might
		tear      func(full [][]byte) []byte
		wantLines int // intact lines Open keeps
	}{
		{"last record cut in half", func(ls [][]byte) []byte {
			last := ls[len(ls)-1]
			return append(bytes.Join(ls[:len(ls)-1], nil), last[:len(last)/2]...)
		}, 5},
		{"last record without its newline", func(ls [][]byte) []byte {
			return bytes.TrimSuffix(bytes.Join(ls, nil), []byte("\n"))
		}, 5},
		{"zero-filled tail after a power loss", func(ls [][]byte) []byte {
			return append(bytes.Join(ls, nil), make([]byte, 300)...)
		}, 6},
		{"partial next record", func(ls [][]byte) []byte {
			return append(bytes.Join(ls, nil), []byte(`{"traj_id":"0123456789abcdef","run":"ru`)...)
		}, 6},
		{"undecodable last line", func(ls [][]byte) []byte {
			return append(bytes.Join(ls, nil), []byte("{\"traj_id\":\n")...)
		}, 6},
	}
	f := newFixture(t, "run-torn", 1, engine.Shard{})
	ref := t.TempDir()
	f.run(t, ref)
	refLines := lines(t, trajFile(ref))
	require.Len(t, refLines, 6)
	_, want := records(t, ref)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f.open(t, dir)
			torn := tc.tear(refLines)
			require.NoError(t, os.WriteFile(trajFile(dir), torn, 0o644))

			run := f.open(t, dir)
			assert.Equal(t, tc.wantLines, run.DoneCount())
			got, err := os.ReadFile(trajFile(dir))
			require.NoError(t, err)
			assert.Equal(t, bytes.Join(refLines[:tc.wantLines], nil), got, "Open truncates exactly the torn tail")

			sum, err := engine.Run(context.Background(), f.cfg, run)
			require.NoError(t, err)
			assert.Equal(t, 6-tc.wantLines, sum.Ran, "the torn episode reruns")
			assert.Equal(t, tc.wantLines, sum.Skipped)
			order, have := records(t, dir)
			assert.Equal(t, f.planIDs(), sorted(order))
			assert.Equal(t, want, have, "the rerun episode is the same as before, apart from timings")
		})
	}
}

func TestCorruptionIsAnErrorNamingFileAndLine(t *testing.T) {
	f := newFixture(t, "run-corrupt", 1, engine.Shard{})
	ref := t.TempDir()
	f.run(t, ref)
	full := lines(t, trajFile(ref))

	cases := []struct {
		name    string
		content []byte
		want    string
	}{
		{"garbage in the middle", bytes.Join([][]byte{full[0], []byte("not json\n"), full[1], full[2]}, nil), ":2: corrupt record"},
		{"half a record in the middle", bytes.Join([][]byte{full[0], full[1], full[2][:40], []byte("\n"), full[3]}, nil), ":3: corrupt record"},
		{"record without traj_id", bytes.Join([][]byte{[]byte("{\"run\":\"x\"}\n"), full[0]}, nil), ":1: corrupt record"},
		{"duplicate record", bytes.Join([][]byte{full[0], full[1], full[0]}, nil), ":3: duplicate traj_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f.open(t, dir)
			path := trajFile(dir)
			require.NoError(t, os.WriteFile(path, tc.content, 0o644))

			_, err := store.Open(dir, f.man, false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path+tc.want)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			assert.Equal(t, tc.content, after, "nothing written is lost")
		})
	}

	t.Run("iterator", func(t *testing.T) {
		dir := t.TempDir()
		f.open(t, dir)
		path := trajFile(dir)
		require.NoError(t, os.WriteFile(path, bytes.Join([][]byte{full[0], []byte("{oops\n"), full[1]}, nil), 0o644))
		it := store.Records(dir)
		defer it.Close()
		require.True(t, it.Next())
		assert.False(t, it.Next())
		require.Error(t, it.Err())
		assert.Contains(t, it.Err().Error(), path+":2:")

		require.NoError(t, os.WriteFile(path, bytes.Join([][]byte{full[0], full[1][:10]}, nil), 0o644))
		it2 := store.Records(dir)
		defer it2.Close()
		require.True(t, it2.Next())
		assert.False(t, it2.Next())
		require.Error(t, it2.Err())
		assert.Contains(t, it2.Err().Error(), path+":2: incomplete last line")
	})
}

func TestOpenChecksThePlan(t *testing.T) {
	f := newFixture(t, "run-plan", 1, engine.Shard{})
	dir := t.TempDir()
	f.run(t, dir)
	before, err := os.ReadFile(trajFile(dir))
	require.NoError(t, err)
	manBefore, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)

	// The same plan resumes, keeping the creation time; settings may change.
	same := f.man
	same.Created = "2027-01-01T00:00:00Z"
	same.Settings.Concurrency = 99
	run, err := store.Open(dir, same, false)
	require.NoError(t, err)
	assert.Equal(t, 6, run.DoneCount())
	assert.Equal(t, f.man.Created, run.Manifest.Created)
	m, err := store.ReadManifest(dir)
	require.NoError(t, err)
	assert.Equal(t, 99, m.Settings.Concurrency)
	assert.Equal(t, f.man.Created, m.Created)
	require.NoError(t, store.WriteManifest(dir, f.man))

	cases := []struct {
		name   string
		change func(*store.Plan)
		want   string
	}{
		{"rollouts", func(p *store.Plan) { p.Rollouts = 3 }, "rollouts was 2, now 3"},
		{"policy", func(p *store.Plan) { p.Policy = "sim:dpo-1" }, "policy was sim:base, now sim:dpo-1"},
		{"scenarios", func(p *store.Plan) { p.ScenarioIDs = p.ScenarioIDs[:1] }, "scenario_ids differs"},
		{"several", func(p *store.Plan) { p.Seed, p.MaxSteps = 2, 5 }, "max_steps was 0, now 5; seed was 1, now 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			other := f.man
			other.Plan.ScenarioIDs = append([]string(nil), f.man.Plan.ScenarioIDs...)
			tc.change(&other.Plan)
			_, err := store.Open(dir, other, false)
			require.Error(t, err)
			assert.ErrorIs(t, err, store.ErrPlanMismatch)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "--force")

			after, err := os.ReadFile(trajFile(dir))
			require.NoError(t, err)
			assert.Equal(t, before, after, "a refused open leaves the trajectories")
			manAfter, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			require.NoError(t, err)
			assert.Equal(t, manBefore, manAfter, "a refused open leaves the manifest")
		})
	}

	t.Run("force moves the old trajectories aside", func(t *testing.T) {
		other := f.man
		other.Plan.Rollouts = 3
		run, err := store.Open(dir, other, true)
		require.NoError(t, err)
		assert.Zero(t, run.DoneCount())
		assert.Equal(t, other.Plan, run.Manifest.Plan)
		m, err := store.ReadManifest(dir)
		require.NoError(t, err)
		assert.Equal(t, other.Plan, m.Plan)

		aside, err := filepath.Glob(filepath.Join(dir, "trajectories.replaced-*"))
		require.NoError(t, err)
		require.Len(t, aside, 1)
		moved, err := os.ReadFile(filepath.Join(aside[0], store.ShardFile("0/1")))
		require.NoError(t, err)
		assert.Equal(t, before, moved, "the old trajectories are kept, not deleted")
		left, err := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
		require.NoError(t, err)
		assert.Empty(t, left)
		order, _ := records(t, dir)
		assert.Empty(t, order)
	})
}

func TestReadManifestErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := store.ReadManifest(dir)
	assert.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{not json"), 0o644))
	_, err = store.ReadManifest(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "manifest.json"))
	_, err = store.Open(dir, store.Manifest{}, false)
	require.Error(t, err, "a broken manifest is not silently replaced")
}

func rec(id string) *trajectory.Record {
	return &trajectory.Record{TrajID: id, Run: "r", ScenarioID: "s", Status: trajectory.StatusCompleted,
		Messages: []trajectory.Message{{Role: "user", Content: "hi\nthere"}}}
}

func TestRecordsStreamsAcrossFolders(t *testing.T) {
	mk := func(run string, shards map[string][]string) string {
		dir := t.TempDir()
		r, err := store.Open(dir, store.Manifest{Run: run}, false)
		require.NoError(t, err)
		for shard, ids := range shards {
			w, err := r.Writer(shard, 2, time.Hour)
			require.NoError(t, err)
			for _, id := range ids {
				require.NoError(t, w.Append(rec(id)))
			}
			require.NoError(t, w.Close())
		}
		return dir
	}
	a := mk("a", map[string][]string{"1/2": {"a3", "a4"}, "0/2": {"a1", "a2"}})
	b := mk("b", map[string][]string{"0/1": {"b1", "b2", "b3"}})
	empty := mk("e", nil)

	var got []string
	it := store.Records(a, empty, b)
	for it.Next() {
		got = append(got, it.At().TrajID)
		assert.Equal(t, "hi\nthere", it.At().Messages[0].Content)
	}
	require.NoError(t, it.Err())
	it.Close()
	assert.Equal(t, []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3"}, got, "folders in order, files in name order")

	// The error log is not a trajectory.
	r, err := store.Open(b, store.Manifest{Run: "b"}, false)
	require.NoError(t, err)
	el, err := r.ErrorLog("0/1")
	require.NoError(t, err)
	require.NoError(t, el.Append(rec("err1")))
	require.NoError(t, el.Close())
	ids, _ := records(t, b)
	assert.Equal(t, []string{"b1", "b2", "b3"}, ids)
	_, err = os.Stat(filepath.Join(b, "errors", store.ShardFile("0/1")))
	assert.NoError(t, err)

	it = store.Records(a, t.TempDir())
	assert.False(t, it.Next())
	require.Error(t, it.Err())
	assert.Contains(t, it.Err().Error(), "is not a run folder")
	it.Close()
}

func TestWriterConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	r, err := store.Open(dir, store.Manifest{Run: "w"}, false)
	require.NoError(t, err)
	w, err := r.Writer("0/1", 7, time.Millisecond)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				assert.NoError(t, w.Append(rec(fmt.Sprintf("g%d-%02d", g, i))))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close())

	ids, _ := records(t, dir)
	assert.Len(t, ids, 400)
	r2, err := store.Open(dir, store.Manifest{Run: "w"}, false)
	require.NoError(t, err)
	assert.Equal(t, 400, r2.DoneCount())
	assert.True(t, r2.Done("g3-17"))
	assert.False(t, r2.Done("g9-00"))

	// A reopened writer appends; it does not truncate.
	w2, err := r2.Writer("0/1", 1, time.Hour)
	require.NoError(t, err)
	require.NoError(t, w2.Append(rec("late")))
	require.NoError(t, w2.Close())
	ids, _ = records(t, dir)
	assert.Len(t, ids, 401)
	assert.Equal(t, "late", ids[400])
}

func TestMerge(t *testing.T) {
	const run = "run-merge"
	shards := func(t *testing.T) (fixture, fixture, string, string) {
		f0 := newFixture(t, run, 5, engine.Shard{I: 0, N: 2})
		f1 := newFixture(t, run, 5, engine.Shard{I: 1, N: 2})
		a, b := t.TempDir(), t.TempDir()
		assert.Equal(t, 3, f0.run(t, a).Ran)
		assert.Equal(t, 3, f1.run(t, b).Ran)
		return f0, f1, a, b
	}
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

	t.Run("joins the shards of one run", func(t *testing.T) {
		_, _, a, b := shards(t)
		out := filepath.Join(t.TempDir(), "merged")
		res, err := store.Merge(out, []string{a, b}, "v2", now)
		require.NoError(t, err)
		assert.Equal(t, store.MergeResult{Records: 6, Planned: 6}, res)

		m, err := store.ReadManifest(out)
		require.NoError(t, err)
		assert.Equal(t, "0/1", m.Plan.Shard)
		assert.Equal(t, []string{a, b}, m.Shards)
		assert.Equal(t, "v2", m.Version)
		assert.Equal(t, run, m.Run)
		assert.Equal(t, now.Format(time.RFC3339), m.Created)

		order, got := records(t, out)
		_, want := records(t, a, b)
		assert.Equal(t, want, got)
		assert.Len(t, order, 6)

		// The whole run's plan finds every episode done in the merged folder.
		whole := newFixture(t, run, 5, engine.Shard{})
		assert.Equal(t, whole.planIDs(), sorted(order))
		sum := whole.run(t, out)
		assert.Equal(t, 6, sum.Skipped)
		assert.Zero(t, sum.Ran)
	})

	t.Run("again: a merge step run twice, before and after a shard is done", func(t *testing.T) {
		_, _, a, b := shards(t)
		out := filepath.Join(t.TempDir(), "merged")
		// First run of the merge step: shard b is not there yet.
		bMissing := filepath.Join(t.TempDir(), "b-later")
		require.NoError(t, os.Rename(b, bMissing))
		_, err := store.MergeAgain(out, []string{a, bMissing + "-absent"}, "v2", now)
		require.Error(t, err)
		res, err := store.MergeAgain(out, []string{a}, "v2", now)
		require.NoError(t, err)
		assert.Equal(t, store.MergeResult{Records: 3, Planned: 6}, res)
		// The shard is done; the merge step runs again, then once more.
		for i := 0; i < 2; i++ {
			res, err = store.MergeAgain(out, []string{a, bMissing}, "v2", now)
			require.NoError(t, err)
			assert.Equal(t, store.MergeResult{Records: 6, Planned: 6}, res)
			_, got := records(t, out)
			_, want := records(t, a, bMissing)
			assert.Equal(t, want, got)
			left, _ := os.ReadDir(filepath.Dir(out))
			assert.Len(t, left, 1, "nothing left beside the merge")
		}
		// A folder that is not an earlier merge of this run is never replaced.
		other := t.TempDir()
		newFixture(t, "run-other", 5, engine.Shard{I: 0, N: 2}).run(t, other)
		_, err = store.MergeAgain(other, []string{a, bMissing}, "v2", now)
		require.ErrorContains(t, err, "is not an earlier merge of run run-merge")
		_, err = store.MergeAgain(a, []string{a, bMissing}, "v2", now)
		require.ErrorContains(t, err, "is not an earlier merge", "a shard folder is not a merge")
	})

	t.Run("refusals", func(t *testing.T) {
		_, _, a, b := shards(t)
		// Another seed: not the same run.
		otherSeed := t.TempDir()
		newFixture(t, run, 6, engine.Shard{I: 1, N: 2}).run(t, otherSeed)
		// Another run name.
		otherRun := t.TempDir()
		newFixture(t, "run-other", 5, engine.Shard{I: 1, N: 2}).run(t, otherRun)
		// A copy of shard 0 that claims to be shard 1.
		dupRecords := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dupRecords, "trajectories"), 0o755))
		data, err := os.ReadFile(filepath.Join(a, "trajectories", store.ShardFile("0/2")))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dupRecords, "trajectories", store.ShardFile("1/2")), data, 0o644))
		m, err := store.ReadManifest(a)
		require.NoError(t, err)
		m.Plan.Shard = "1/2"
		require.NoError(t, store.WriteManifest(dupRecords, m))
		existing := t.TempDir()
		// A shard of a three-way split beside a two-way one.
		otherCount := t.TempDir()
		newFixture(t, run, 5, engine.Shard{I: 1, N: 3}).run(t, otherCount)

		cases := []struct {
			name   string
			out    string
			shards []string
			want   string
		}{
			{"another plan", "", []string{a, otherSeed}, "is not a shard of the same run as " + a + ": plan.seed was 5, now 6"},
			{"another shard count", "", []string{a, otherCount}, "the shard counts differ (2 and 3)"},
			{"another run", "", []string{a, otherRun}, "run was run-merge, now run-other"},
			{"the same shard twice", "", []string{a, b, a}, "are both shard 0/2"},
			{"duplicate records", "", []string{a, dupRecords}, "duplicate traj_id"},
			{"not a run folder", "", []string{a, t.TempDir()}, "manifest.json"},
			{"output exists", existing, []string{a, b}, "already exists"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				out := tc.out
				if out == "" {
					out = filepath.Join(t.TempDir(), "merged")
				}
				_, err := store.Merge(out, tc.shards, "v2", now)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				if tc.out == "" {
					// A failed merge leaves nothing behind: no folder, no
					// temporary folder beside it.
					_, err := os.Stat(out)
					assert.True(t, errors.Is(err, os.ErrNotExist), "a failed merge left %s: %v", out, err)
					left, _ := os.ReadDir(filepath.Dir(out))
					assert.Empty(t, left)
				}
			})
		}
	})
}
