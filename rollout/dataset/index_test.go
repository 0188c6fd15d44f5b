package dataset_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// indexRun writes a run folder of n records per scenario, in reverse
// traj_id order in the file, and returns its path.
func indexRun(t *testing.T, scenarios []string, n int) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(dir, store.Manifest{Version: "test", Run: "r", Plan: store.Plan{Checkpoint: "base"}}))
	var lines []string
	for _, sid := range scenarios {
		for i := range n {
			r := trajectory.Record{TrajID: trajectory.TrajID("r", "base", "native", sid, i, 1), Run: "r", Checkpoint: "base",
				Framework: "native", ScenarioID: sid, Rollout: i, Seed: 1, Status: trajectory.StatusCompleted,
				Messages: []trajectory.Message{{Role: "user", Content: fmt.Sprintf("%s task %d", sid, i)}}}
			b, err := json.Marshal(r)
			require.NoError(t, err)
			lines = append(lines, string(b)+"\n")
		}
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "a.jsonl"), []byte(strings.Join(lines, "")), 0o644))
	return dir
}

// Each, EachAt, LoadAt, Key and Count see a scenario as Load does: the
// same records at the same ranks, whatever window the decoding uses.
func TestIndexStreamsAScenarioAsLoadSeesIt(t *testing.T) {
	ix, err := dataset.OpenIndex(indexRun(t, []string{"s-a", "s-b"}, 150))
	require.NoError(t, err)
	defer ix.Close()
	for _, sid := range ix.Scenarios() {
		all, err := ix.Load(sid)
		require.NoError(t, err)
		require.Len(t, all, 150)
		assert.Equal(t, 150, ix.Count(sid))
		var size int64
		for k, r := range all {
			b, err := json.Marshal(r)
			require.NoError(t, err)
			size += int64(len(b)) + 1
			assert.Equal(t, r.TrajID, ix.Key(sid, k).TrajID)
			assert.Equal(t, sid, ix.Key(sid, k).ScenarioID)
		}
		assert.Equal(t, size, ix.Bytes(sid), "Bytes is the lines' size")

		next := 0
		require.NoError(t, ix.Each(sid, func(k int, r *trajectory.Record) error {
			assert.Equal(t, next, k)
			assert.Equal(t, all[k].TrajID, r.TrajID)
			assert.Equal(t, all[k].Messages, r.Messages)
			next++
			return nil
		}))
		assert.Equal(t, 150, next)

		ks := []int{149, 0, 7, 7, 80}
		var got []string
		require.NoError(t, ix.EachAt(sid, ks, func(k int, r *trajectory.Record) error {
			got = append(got, fmt.Sprintf("%d:%s", k, r.TrajID))
			return nil
		}))
		var want []string
		for _, k := range ks {
			want = append(want, fmt.Sprintf("%d:%s", k, all[k].TrajID))
		}
		assert.Equal(t, want, got)

		r, err := ix.LoadAt(sid, 42)
		require.NoError(t, err)
		assert.Equal(t, all[42], r)
	}

	stop := fmt.Errorf("stop")
	seen := 0
	err = ix.Each("s-a", func(k int, r *trajectory.Record) error {
		if seen++; k == 3 {
			return stop
		}
		return nil
	})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 4, seen, "Each stops at fn's first error")

	_, err = ix.LoadAt("s-a", 150)
	assert.ErrorContains(t, err, `scenario "s-a" has no trajectory of rank 150`)
	assert.ErrorContains(t, ix.EachAt("s-a", []int{-1}, func(int, *trajectory.Record) error { return nil }), "no rank -1")
	assert.ErrorContains(t, ix.EachAt("nope", []int{0}, func(int, *trajectory.Record) error { return nil }), `no scenario "nope"`)
	assert.NoError(t, ix.Each("nope", func(int, *trajectory.Record) error { t.Fatal("called"); return nil }))
	assert.Zero(t, ix.Count("nope"))
}
