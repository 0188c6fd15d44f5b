package store_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLockDirSharedInProcessAndRemovedByLastRelease(t *testing.T) {
	dir := t.TempDir()
	a, err := store.LockDir(dir, "antidrift test")
	require.NoError(t, err)
	b, err := store.LockDir(dir, "antidrift test")
	require.NoError(t, err, "one process is one writer")
	b2, _ := os.ReadFile(filepath.Join(dir, store.LockName))
	assert.Contains(t, string(b2), `"pid":`)
	assert.Contains(t, string(b2), `"command":"antidrift test"`)
	require.NoError(t, b.Release())
	assert.FileExists(t, filepath.Join(dir, store.LockName))
	require.NoError(t, a.Release())
	require.NoError(t, a.Release(), "twice is harmless")
	assert.NoFileExists(t, filepath.Join(dir, store.LockName))
	// A stale lock file (its holder died) is taken over.
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.LockName), []byte(`{"pid":999999,"host":"gone"}`), 0o644))
	c, err := store.LockDir(dir, "")
	require.NoError(t, err)
	require.NoError(t, c.Release())
}

func TestPlannedCountsTheShard(t *testing.T) {
	m := store.Manifest{Plan: store.Plan{ScenarioIDs: []string{"a", "b", "c"}, Rollouts: 3}}
	total := 0
	for i := 0; i < 4; i++ {
		m.Plan.Shard = []string{"0/4", "1/4", "2/4", "3/4"}[i]
		total += m.Planned()
	}
	assert.Equal(t, 9, total, "the shards add up to the plan")
	m.Plan.Shard = "0/4"
	assert.Equal(t, 3, m.Planned())
	m.Plan.Shard = "0/1"
	assert.Equal(t, 9, m.Planned())
	m.Plan.Shard = "3/4"
	assert.Equal(t, 2, m.Planned())
}

func TestRepairMovesCopiesAndBrokenLinesAside(t *testing.T) {
	dir := ixRun(t, "a", map[string]string{
		"part-0-of-2.jsonl": ixLine(t, ixRec("", "a", "ck", "normal", "s1", 0, 1)) + "{broken\n" + ixLine(t, ixRec("", "a", "ck", "normal", "s1", 1, 1)),
		"part-1-of-2.jsonl": ixLine(t, ixRec("", "a", "ck", "normal", "s1", 0, 1)) + ixLine(t, ixRec("", "a", "ck", "normal", "s1", 2, 1)) + `{"traj_id":"torn`,
	})
	res, err := store.Repair(dir)
	require.NoError(t, err)
	assert.Equal(t, store.RepairResult{Files: 2, Kept: 3, Duplicates: 1, Invalid: 2, Rewritten: 2, Aside: res.Aside}, res)
	ix, err := store.OpenIndex(dir)
	require.NoError(t, err, "readable again")
	assert.Equal(t, 3, ix.Len())
	ix.Close()
	moved, err := os.ReadFile(filepath.Join(res.Aside, "part-1-of-2.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(moved), `{"traj_id":"torn`)
	res, err = store.Repair(dir)
	require.NoError(t, err)
	assert.Zero(t, res.Rewritten)
}
