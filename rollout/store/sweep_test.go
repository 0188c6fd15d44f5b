package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepTempsEveryLevel: temporary files and staging folders go at
// every level; other files, the lock and whatever a symlink leads to stay.
func TestSweepTempsEveryLevel(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	write := func(p string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	temps := []string{".antidrift-tmp-1/part", ".train.jsonl.tmp", "jsonl/.train.jsonl.12.tmp", "parquet/.README.md.tmp99",
		"arrow/deep/.tmp-abc", "arrow/.antidrift-tmp-2/x", "extra.partial"}
	kept := []string{"README.md", "jsonl/train.jsonl", "parquet/.hidden-but-mine", "arrow/deep/data.arrow", LockName}
	for _, p := range append(append([]string(nil), temps...), kept...) {
		write(filepath.Join(dir, p))
	}
	write(filepath.Join(outside, ".x.tmp"))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))

	SweepTemps(dir, "*.partial")
	for _, p := range temps {
		assert.NoFileExists(t, filepath.Join(dir, p), p)
	}
	assert.NoDirExists(t, filepath.Join(dir, "arrow", ".antidrift-tmp-2"))
	for _, p := range kept {
		assert.FileExists(t, filepath.Join(dir, p), p)
	}
	assert.FileExists(t, filepath.Join(outside, ".x.tmp"), "a symlink is not followed")
}

// TestResumeRefusesLinksOutOfTheFolder: a trajectory file (or the
// trajectories folder) that is a symlink leaving the run folder is refused
// before anything is written through it; a link inside the folder is fine.
func TestResumeRefusesLinksOutOfTheFolder(t *testing.T) {
	m := Manifest{Run: "r", Plan: Plan{Policy: "sim:base", ScenarioIDs: []string{"a"}, Rollouts: 1}}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir, outside string)
		ok   bool
	}{
		{"file out", func(t *testing.T, dir, outside string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(outside, "victim.jsonl"), filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")))
		}, false},
		{"dangling", func(t *testing.T, dir, outside string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(outside, "nope", "x.jsonl"), filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")))
		}, false},
		{"folder out", func(t *testing.T, dir, outside string) {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "trajectories")))
		}, false},
		{"link inside", func(t *testing.T, dir, outside string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.jsonl"), nil, 0o644))
			require.NoError(t, os.Symlink(filepath.Join(dir, "keep.jsonl"), filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			outside := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.jsonl"), []byte("{}\n"), 0o644))
			tc.make(t, dir, outside)
			require.NoError(t, WriteManifest(dir, m)) // a resume
			r, err := Open(dir, m, false)
			if tc.ok {
				require.NoError(t, err)
				r.Close()
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "outside the run folder")
			b, _ := os.ReadFile(filepath.Join(outside, "victim.jsonl"))
			assert.Equal(t, "{}\n", string(b), "nothing written through the link")
		})
	}
}

// TestCountRecordsOutsideThePlan: a record whose scenario is not in the
// plan, or whose rollout is beyond it, is counted outside (with where the
// first one is), not present, and makes the run partial.
func TestCountRecordsOutsideThePlan(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{Run: "r", Plan: Plan{Policy: "sim:base", ScenarioIDs: []string{"a", "b"}, Rollouts: 1}}
	require.NoError(t, WriteManifest(dir, m))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	lines := `{"traj_id":"1","scenario_id":"a","rollout":0}
{"traj_id":"2","scenario_id":"b","rollout":0}

{"traj_id":"3","scenario_id":"z","rollout":0}
{"traj_id":"4","scenario_id":"a","rollout":1}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"), []byte(lines), 0o644))
	p, err := Count(dir)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Present)
	assert.Equal(t, 2, p.Outside)
	assert.Equal(t, 0, p.Missing())
	assert.True(t, p.Partial())
	assert.Contains(t, p.FirstOutside, "part-0-of-1.jsonl:4: scenario \"z\" is not in plan.scenario_ids")
	assert.Contains(t, p.String(), "2 records outside its plan")
}
