package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/store"
)

// fixtureLines are the record lines of the fixture's sim:base run.
func fixtureLines(t *testing.T) (store.Manifest, [][]byte) {
	t.Helper()
	src := filepath.Join(fixture(t), "runs", "base")
	m, err := store.ReadManifest(src)
	require.NoError(t, err)
	names, err := filepath.Glob(filepath.Join(src, "trajectories", "*.jsonl"))
	require.NoError(t, err)
	var lines [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(l) > 0 {
				lines = append(lines, l)
			}
		}
	}
	return m, lines
}

// TestLiveRunIsFollowed: a run being written is indexed as it grows (only
// complete lines; a partial last line waits for its end), a shard file it
// starts later is picked up, and its state goes from live to finished, or
// to stopped when it stops short of its plan.
func TestLiveRunIsFollowed(t *testing.T) {
	m, lines := fixtureLines(t)
	dir := filepath.Join(t.TempDir(), "live")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644))
	part0 := filepath.Join(dir, "trajectories", "part-0-of-2.jsonl")
	f, err := os.OpenFile(part0, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer f.Close()
	write := func(b []byte) {
		_, err := f.Write(b)
		require.NoError(t, err)
	}
	for _, l := range lines[:3] {
		write(l)
	}
	half := len(lines[3]) / 2
	write(lines[3][:half])

	s, err := New([]string{dir}, nil)
	require.NoError(t, err)
	require.NoError(t, s.Index())
	count := func() (int, string) {
		q, _ := parseQuery(nil)
		res, err := s.runs.list(q, s.search)
		require.NoError(t, err)
		require.Empty(t, res.Progress.Error)
		return res.Total, res.Runs[0].State
	}
	n, state := count()
	assert.Equal(t, 3, n, "the partial fourth line waits")
	assert.Equal(t, stateLive, state, "it grew just now")

	// A search cached now sees records indexed later.
	q, _ := parseQuery(map[string][]string{"q": {"a"}})
	first, err := s.runs.list(q, s.search)
	require.NoError(t, err)

	write(lines[3][half:])
	write(lines[4])
	s.runs.refresh(time.Now())
	n, _ = count()
	assert.Equal(t, 5, n)
	again, err := s.runs.list(q, s.search)
	require.NoError(t, err)
	assert.Equal(t, first.Total+2, again.Total, "the cached search covers the new records")

	// Another shard's file, started later.
	part1 := filepath.Join(dir, "trajectories", "part-1-of-2.jsonl")
	require.NoError(t, os.WriteFile(part1, bytes.Join(lines[5:8], nil), 0o644))
	s.runs.refresh(time.Now())
	n, _ = count()
	assert.Equal(t, 8, n)

	// Nobody writes it and it is short of its plan: stopped.
	s.runs.refresh(time.Now().Add(2 * liveWindow))
	_, state = count()
	assert.Equal(t, stateStopped, state)

	// A writer's lock held by this (live) process: live again.
	lock, err := store.LockDir(dir, "test")
	require.NoError(t, err)
	s.runs.refresh(time.Now().Add(2 * liveWindow))
	_, state = count()
	assert.Equal(t, stateLive, state)
	require.NoError(t, lock.Release())

	// The whole plan written: finished.
	for _, l := range lines[8:] {
		write(l)
	}
	s.runs.refresh(time.Now())
	n, state = count()
	assert.Equal(t, len(lines), n)
	assert.Equal(t, stateFinished, state)
	q0, _ := parseQuery(nil)
	res, err := s.runs.list(q0, s.search)
	require.NoError(t, err)
	assert.Equal(t, res.Progress.TotalBytes, res.Progress.Bytes, "every byte written is indexed and counted once")

	// A bad line stops following that file and says where.
	write([]byte("not json\n"))
	s.runs.refresh(time.Now())
	res, err = s.runs.list(q0, s.search)
	require.NoError(t, err)
	assert.Contains(t, res.Progress.Error, "part-0-of-2.jsonl:")
}

// TestWriterHoldsStaleLock: a lock file left by a process that is gone
// (a crashed writer) does not make a run live.
func TestWriterHoldsStaleLock(t *testing.T) {
	dir := t.TempDir()
	assert.False(t, writerHolds(dir))
	host, _ := os.Hostname()
	b, _ := json.Marshal(store.Holder{PID: 1 << 22, Host: host})
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.LockName), b, 0o644))
	assert.False(t, writerHolds(dir), "no such process")
	b, _ = json.Marshal(store.Holder{PID: os.Getpid(), Host: host})
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.LockName), b, 0o644))
	assert.True(t, writerHolds(dir))
}

// TestRunLabels: runs of one checkpoint are told apart by the settings
// that differ (and a synth round in the path).
func TestRunLabels(t *testing.T) {
	mk := func(path, ckpt string, seed int64) *runDir {
		return &runDir{Path: path, Manifest: store.Manifest{Run: "r", Created: "2026-12-01T00:00:00Z",
			Plan: store.Plan{Checkpoint: ckpt, Framework: "normal", Seed: seed, Rollouts: 2, Shard: "0/1"}}}
	}
	dirs := []*runDir{mk("out/seeds/x/round-1/qc", "a", 7), mk("out/seeds/x/round-2/qc", "a", 8), mk("runs/b", "b", 7)}
	labelRuns(dirs)
	assert.Equal(t, []string{"framework normal", "seed 7", "round 1"}, dirs[0].Distinct)
	assert.Equal(t, 2, dirs[1].Round)
	assert.Equal(t, []string{"framework normal", "seed 7"}, dirs[2].Distinct)
	assert.Equal(t, "r · out/seeds/x/round-1/qc · 2026-12-01T00:00:00Z · framework normal · seed 7 · round 1", dirs[0].Label)
}

// TestRunsToldApart: two runs of one checkpoint (another seed) stay two in
// the list's run filter, its metrics groups and compare, which can keep
// just the two of them.
func TestRunsToldApart(t *testing.T) {
	m, lines := fixtureLines(t)
	root := t.TempDir()
	for i, seed := range []int64{7, 8} {
		dir := filepath.Join(root, fmt.Sprintf("run-%d", i))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
		mm := m
		mm.Plan.Seed = seed
		b, err := json.Marshal(mm)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644))
		var out []byte
		for _, l := range lines {
			// Another seed draws other ids.
			out = append(out, bytes.Replace(l, []byte(`"traj_id":"`), []byte(fmt.Sprintf(`"traj_id":"s%d`, seed)), 1)...)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"), out, 0o644))
	}
	s, err := New([]string{root}, nil)
	require.NoError(t, err)
	require.NoError(t, s.Index())
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	var all, second listResult
	getJSON(t, hs, "/api/trajectories?size=500", 200, &all)
	require.Len(t, all.Runs, 2)
	assert.Contains(t, all.Runs[0].Distinct, "seed 7")
	assert.Contains(t, all.Runs[1].Distinct, "seed 8")
	assert.NotEqual(t, all.Runs[0].Label, all.Runs[1].Label)
	assert.Equal(t, 2*len(lines), all.Total)
	require.Len(t, all.Groups, 2, "one metrics group per run, though the checkpoint is the same")

	getJSON(t, hs, "/api/trajectories?size=500&run=1", 200, &second)
	assert.Equal(t, len(lines), second.Total)
	for _, r := range second.Rows {
		assert.Equal(t, 1, r.RunDir)
		assert.True(t, strings.HasPrefix(r.TrajID, "s8"))
	}

	sc := second.Rows[0].Scenario
	var c struct {
		Groups []compareGroup `json:"groups"`
	}
	getJSON(t, hs, "/api/compare/"+sc+"?runs=0,1", 200, &c)
	require.Len(t, c.Groups, 2)
	assert.Equal(t, c.Groups[0].Checkpoint, c.Groups[1].Checkpoint)
	getJSON(t, hs, "/api/compare/"+sc+"?runs=1", 200, &c)
	require.Len(t, c.Groups, 1)
	assert.Equal(t, 1, c.Groups[0].RunDir)
	var e map[string]string
	getJSON(t, hs, "/api/compare/"+sc+"?runs=9", 400, &e)
	assert.Contains(t, e["error"], "runs=")
	getJSON(t, hs, "/api/trajectories?run=x", 400, &e)
	assert.Contains(t, e["error"], "run=")
}
