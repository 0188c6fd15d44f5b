package main

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readRecords returns a run folder's records by traj_id, each without its
// timings, and fails on a line that does not parse or a duplicate id.
func readRecords(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, err := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for line := 1; sc.Scan(); line++ {
			var rec map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "%s:%d", f, line)
			id, _ := rec["traj_id"].(string)
			require.NotEmpty(t, id)
			_, dup := out[id]
			require.False(t, dup, "duplicate traj_id %s at %s:%d", id, f, line)
			delete(rec, "timings")
			b, _ := json.Marshal(rec)
			out[id] = string(b)
		}
		require.NoError(t, sc.Err())
		fh.Close()
	}
	return out
}

func TestRolloutIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	args := []string{"rollout", "--policy", "sim:sft", "--rollouts", "3", "--limit", "12", "--seed", "7", "--concurrency", "8", "--json"}
	require.Equal(t, 0, run(append(args, "--out", a)))
	require.Equal(t, 0, run(append(args, "--out", b)))
	ra, rb := readRecords(t, a), readRecords(t, b)
	require.Len(t, ra, 36)
	assert.Equal(t, ra, rb, "same seed and simulated policy must give identical records apart from timings")

	// A different seed changes some episodes.
	c := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:sft", "--rollouts", "3", "--limit", "12", "--seed", "8", "--out", c, "--json"}))
	assert.NotEqual(t, ra, readRecords(t, c))
}

func TestRolloutRefusesAnotherPlan(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--out", dir, "--json"}))
	assert.Equal(t, 1, run([]string{"rollout", "--policy", "sim:dpo-1", "--rollouts", "1", "--limit", "3", "--out", dir, "--json"}))
	assert.Len(t, readRecords(t, dir), 3, "a refused run must leave the folder as it was")
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:dpo-1", "--rollouts", "1", "--limit", "3", "--out", dir, "--force", "--json"}))
	assert.Len(t, readRecords(t, dir), 3)
	aside, _ := filepath.Glob(filepath.Join(dir, "trajectories.replaced-*"))
	assert.Len(t, aside, 1, "--force moves the old trajectories aside")
}

func simServer(t *testing.T, latency time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(sim.NewServer(builtinScenarios(t), latency))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestAPIKeyNeverReachesTheRunFolder(t *testing.T) {
	const key = "sk-test-7f3a9c1e5b2d4f6a8c0e"
	t.Setenv("ANTIDRIFT_TEST_KEY", key)
	dir := t.TempDir()
	url := simServer(t, 0)
	code := run([]string{"rollout", "--policy", "openai:sim:base", "--base-url", url, "--api-key-env", "ANTIDRIFT_TEST_KEY",
		"--rollouts", "2", "--limit", "5", "--out", dir, "--json"})
	require.Equal(t, 0, code)
	require.Len(t, readRecords(t, dir), 10)
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NotContains(t, string(b), key, path)
		n++
		return nil
	}))
	assert.Greater(t, n, 1)
	m, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(m), `"api_key_env": "ANTIDRIFT_TEST_KEY"`, "the manifest names the variable, not its value")
}

// TestRolloutSurvivesSIGKILL kills a real rollout process mid-run, reruns
// the same command, and checks the folder holds exactly the plan.
func TestRolloutSurvivesSIGKILL(t *testing.T) {
	bin := antidriftBin(t) // built once per test binary
	url := simServer(t, 15*time.Millisecond)
	dir := t.TempDir()
	args := []string{"rollout", "--policy", "openai:sim:dpo-1", "--base-url", url, "--rollouts", "3",
		"--concurrency", "6", "--seed", "3", "--out", dir, "--json"}

	// Each kill comes once the run has written a record more than before
	// (not after a fixed time: on a loaded machine the process may not
	// have finished one episode by then, and the resume would test
	// nothing), while episodes are still under way.
	done := 0
	for kill := 0; kill < 2; kill++ {
		cmd := exec.Command(bin, args...)
		require.NoError(t, cmd.Start())
		deadline := time.Now().Add(2 * time.Minute)
		for len(readRecordsLenient(t, dir)) <= done && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		done = len(readRecordsLenient(t, dir))
	}
	partial := readRecordsLenient(t, dir)
	out, err := exec.Command(bin, args...).Output()
	require.NoError(t, err, "resume failed: %s", out)
	var sum runSummary
	require.NoError(t, json.Unmarshal(out, &sum))
	got := readRecords(t, dir)

	// The plan, from an uninterrupted in-process run of the same command.
	ref := t.TempDir()
	refArgs := append([]string(nil), args...)
	refArgs[len(refArgs)-2] = ref
	require.Equal(t, 0, run(refArgs))
	want := readRecords(t, ref)
	assert.Equal(t, sortedIDs(want), sortedIDs(got), "resumed run must hold exactly the planned episodes")
	assert.Equal(t, want, got, "resumed records must equal an uninterrupted run's, apart from timings")
	assert.Equal(t, len(partial), sum.Skipped, "the resume skips exactly what the killed runs finished")
	t.Logf("killed twice with %d of %d episodes done; resume ran %d", len(partial), len(want), sum.Ran)
	assert.Less(t, len(partial), len(want), "the kill came too late to test anything")
	assert.GreaterOrEqual(t, len(partial), 2, "each killed run finished an episode before its kill")
}

// readRecordsLenient counts complete lines of a folder a killed process
// left, ignoring a torn last line.
func readRecordsLenient(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range strings.SplitAfter(string(b), "\n") {
			var rec struct {
				TrajID string `json:"traj_id"`
			}
			if strings.HasSuffix(line, "\n") && json.Unmarshal([]byte(line), &rec) == nil {
				ids[rec.TrajID] = true
			}
		}
	}
	return ids
}

func sortedIDs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestShardsMergeIntoTheWholeRun(t *testing.T) {
	whole, s0, s1 := t.TempDir(), t.TempDir(), t.TempDir()
	base := []string{"rollout", "--policy", "sim:base", "--rollouts", "2", "--limit", "9", "--json"}
	require.Equal(t, 0, run(append(base, "--out", whole)))
	require.Equal(t, 0, run(append(base, "--out", s0, "--shard", "0/2")))
	require.Equal(t, 0, run(append(base, "--out", s1, "--shard", "1/2")))
	merged := filepath.Join(t.TempDir(), "merged")
	require.Equal(t, 0, run([]string{"merge", "--out", merged, s0, s1}))
	assert.Equal(t, readRecords(t, whole), readRecords(t, merged))
	// Merging a shard twice is refused.
	assert.Equal(t, 1, run([]string{"merge", "--out", filepath.Join(t.TempDir(), "m2"), s0, s0}))
	// An incomplete merge says so with exit 2.
	assert.Equal(t, 2, run([]string{"merge", "--out", filepath.Join(t.TempDir(), "m3"), s0}))
}
