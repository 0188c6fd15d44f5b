package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// antidriftBin builds the command once per test binary.
func antidriftBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "antidrift-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "antidrift")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// execBin runs the binary with a bound on its time; a hang is a failure.
func execBin(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, antidriftBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "antidrift %s hung", strings.Join(args, " "))
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("antidrift %s: %v", strings.Join(args, " "), err)
	}
	return code, o.String(), e.String()
}

func countRecordLines(t *testing.T, dir string) (n int, ids map[string]int) {
	t.Helper()
	ids = map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var r struct {
				TrajID string `json:"traj_id"`
			}
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.TrajID != "" {
				ids[r.TrajID]++
				n++
			}
		}
	}
	return n, ids
}

// Item 1: two real rollout processes on one folder: the second is refused
// with the holder's PID and host; the first finishes the plan, once.
func TestTwoWritersOneFolderRefused(t *testing.T) {
	t.Parallel() // real processes on folders of their own
	// Once the first has the lock, the model server answers nothing until
	// the second writer has been refused: the first cannot finish (and
	// free the folder) first, however slowly the machine starts the
	// second. (Its endpoint check, before the lock, is answered.)
	ss := builtinScenarios(t)
	var held atomic.Bool
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	inner := sim.NewServer(ss, 40*time.Millisecond)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if held.Load() {
			<-gate
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(release) // before srv.Close, which waits for held requests
	url := srv.URL + "/v1"
	dir := t.TempDir()
	args := []string{"rollout", "--policy", "openai:sim:base", "--base-url", url, "--rollouts", "2", "--limit", "6",
		"--concurrency", "2", "--out", dir, "--json"}
	first := exec.Command(antidriftBin(t), args...)
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	require.NoError(t, first.Start())
	lock := filepath.Join(dir, store.LockName)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(lock); err == nil && bytes.Contains(b, []byte(`"pid"`)) {
			held.Store(true)
			break
		}
		require.True(t, time.Now().Before(deadline), "the first rollout never took the lock")
		time.Sleep(10 * time.Millisecond)
	}
	// (the second skips the endpoint check, whose requests are held now)
	code, _, stderr := execBin(t, nil, append(args, "--skip-endpoint-check")...)
	assert.Equal(t, 1, code)
	host, _ := os.Hostname()
	assert.Contains(t, stderr, fmt.Sprintf("pid %d on host %s", first.Process.Pid, host))
	assert.Contains(t, stderr, "in use by another antidrift process")
	assert.Equal(t, 1, strings.Count(errorLines(stderr), "\n"), "one line: %s", stderr)
	release()
	require.NoError(t, first.Wait(), firstErr.String())

	n, ids := countRecordLines(t, dir)
	assert.Equal(t, 12, n, "the plan, once")
	assert.Len(t, ids, 12)
	assert.NoFileExists(t, lock, "the lock file goes with its holder")

	// A writer killed with SIGKILL leaves its lock file; the kernel dropped
	// the lock, so the next writer takes it over and resumes.
	killed := t.TempDir()
	kargs := append([]string(nil), args...)
	kargs[len(kargs)-2] = killed
	k := exec.Command(antidriftBin(t), kargs...)
	require.NoError(t, k.Start())
	for !fileHas(filepath.Join(killed, store.LockName), `"pid"`) {
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, k.Process.Signal(syscall.SIGKILL))
	_ = k.Wait()
	assert.FileExists(t, filepath.Join(killed, store.LockName), "a stale lock file")
	code, _, stderr = execBin(t, nil, kargs...)
	require.Equal(t, 0, code, stderr)
	n, ids = countRecordLines(t, killed)
	assert.Equal(t, 12, n)
	assert.Len(t, ids, 12)
}

// problemCount is the summary line under a list of scenario problems.
var problemCount = regexp.MustCompile(`^\d+ problem\(s\)\n?$`)

// errorLines drops warnings and the problem count.
func errorLines(stderr string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if l != "" && !strings.HasPrefix(l, "antidrift: warning:") && !problemCount.MatchString(l) {
			b.WriteString(l)
		}
	}
	return b.String()
}

func fileHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// Item 1: duplicates are refused by the readers and repaired by repair.
func TestDuplicatesRefusedAndRepaired(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "2", "--limit", "4", "--out", dir, "--json"}))
	part := filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")
	orig, err := os.ReadFile(part)
	require.NoError(t, err)
	// a second writer's copy of the whole plan, beside the first
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.z.jsonl"), orig, 0o644))

	for _, args := range [][]string{
		{"score", dir},
		{"judge", dir, "--judge", "rule", "--name", "dup"},
		{"pairs", dir, "--out", t.TempDir()},
		{"rewards", dir, "--out", t.TempDir()},
		{"export", dir, "--table", "trajectories", "--out", t.TempDir()},
		{"rollout", "--policy", "sim:base", "--rollouts", "2", "--limit", "4", "--out", dir},
	} {
		code, _, stderr := runScenarios(t, args...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Contains(t, stderr, "duplicate traj_id", "%v", args)
		assert.Contains(t, stderr, "antidrift repair "+dir, "%v", args)
	}

	code, stdout, stderr := runScenarios(t, "repair", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "kept 8 records; moved 8 duplicate copies and 0 invalid lines from 1 files")
	after, err := os.ReadFile(part)
	require.NoError(t, err)
	assert.Equal(t, orig, after, "the first copies stay as they were")
	aside, _ := filepath.Glob(filepath.Join(dir, "trajectories.repaired-*", "part-0-of-1.z.jsonl"))
	require.Len(t, aside, 1)
	moved, err := os.ReadFile(aside[0])
	require.NoError(t, err)
	assert.Equal(t, orig, moved, "nothing is lost: the copies are aside")
	code, _, stderr = runScenarios(t, "score", dir)
	assert.Equal(t, 0, code, stderr)
	code, stdout, _ = runScenarios(t, "repair", dir)
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "nothing to repair")
}

// Item 4: the run name is part of the run's identity; records without a
// manifest are refused; --force moves them aside.
func TestRunIdentityEnforced(t *testing.T) {
	dir := t.TempDir()
	base := []string{"rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--out", dir}
	require.Equal(t, 0, run(append(base, "--run", "alpha", "--json")))
	before, _ := countRecordLines(t, dir)
	code, _, stderr := runScenarios(t, append(base, "--run", "beta")...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "run was alpha, now beta")
	n, _ := countRecordLines(t, dir)
	assert.Equal(t, before, n, "nothing rerun into the folder")

	require.NoError(t, os.Remove(filepath.Join(dir, "manifest.json")))
	code, _, stderr = runScenarios(t, append(base, "--run", "alpha")...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no manifest.json, but 1 trajectory files")
	assert.Contains(t, stderr, "--force")
	code, _, stderr = runScenarios(t, append(base, "--run", "alpha", "--force", "--json")...)
	require.Equal(t, 0, code, stderr)
	aside, _ := filepath.Glob(filepath.Join(dir, "trajectories.replaced-*", "*.jsonl"))
	assert.Len(t, aside, 1, "the old records are moved aside, not deleted")
}

// Item 2: --out inside or equal to an input or run folder is refused, and
// no file antidrift did not write is overwritten.
func TestOutputFolderGuards(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--out", dir, "--json"}))
	man, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	other := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", dir, "--table", "trajectories", "--out", dir}, "is the input folder"},
		{[]string{"export", dir, "--table", "trajectories", "--out", filepath.Join(dir, "trajectories")}, "is inside the input folder"},
		{[]string{"pairs", dir, "--out", filepath.Join(dir, "pairs")}, "is inside the input folder"},
		{[]string{"rewards", dir, "--out", dir + "/./"}, "is the input folder"},
		{[]string{"pareto", dir, "--out", filepath.Join(dir, "report")}, "inside the input folder"},
		{[]string{"demo", "--out", filepath.Join(dir, "demo")}, "inside the run folder"},
		{[]string{"export", other, "--table", "trajectories", "--out", filepath.Join(dir, "x")}, ""},
	} {
		code, _, stderr := runScenarios(t, tc.args...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	after, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	assert.Equal(t, man, after, "the run's manifest is untouched")
	n, ids := countRecordLines(t, dir)
	assert.Equal(t, 3, n)
	assert.Len(t, ids, 3)
	assert.NoDirExists(t, filepath.Join(dir, "pairs"))

	// A folder holding someone's README.md is not written over.
	mine := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(mine, "README.md"), []byte("my notes"), 0o644))
	code, _, stderr := runScenarios(t, "export", dir, "--table", "trajectories", "--out", mine)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "holds files antidrift did not write (README.md)")
	b, _ := os.ReadFile(filepath.Join(mine, "README.md"))
	assert.Equal(t, "my notes", string(b))
	// Its own output is rewritten on a rerun.
	out := filepath.Join(t.TempDir(), "export")
	for i := 0; i < 2; i++ {
		code, _, stderr = runScenarios(t, "export", dir, "--table", "trajectories", "--out", out, "--format", "jsonl")
		require.Equal(t, 0, code, stderr)
	}
	assert.FileExists(t, filepath.Join(out, markerName))
}

// Item 3: a credentialed base URL and a key in the environment reach no
// file and no output of any command.
func TestSecretsReachNoFileOrOutput(t *testing.T) {
	t.Parallel() // real processes on folders of their own
	const password, token, key = "PASSW0RD-9f8e7d", "QTOKEN-1a2b3c4d", "sk-live-5e6f7a8b9c0d1e2f3a4b5c6d"
	plain := simServer(t, 0)
	cred := strings.Replace(plain, "http://", "http://operator:"+password+"@", 1) + "?token=" + token
	env := []string{"ANTIDRIFT_TEST_KEY=" + key}
	root := t.TempDir()
	run1, run2 := filepath.Join(root, "run1"), filepath.Join(root, "run2")
	ckpts := filepath.Join(root, "checkpoints.json")
	require.NoError(t, os.WriteFile(ckpts, []byte(`[{"name":"base","step":0,"endpoint":"`+cred+`","model":"sim:base"}]`), 0o644))
	var outputs strings.Builder
	for _, args := range [][]string{
		{"rollout", "--policy", "openai:sim:base", "--base-url", cred, "--api-key-env", "ANTIDRIFT_TEST_KEY", "--rollouts", "2", "--limit", "4", "--out", run1},
		{"rollout", "--policy", "openai:sim:dpo-1", "--base-url=" + cred, "--api-key-env", "ANTIDRIFT_TEST_KEY", "--rollouts", "2", "--limit", "4", "--out", run2, "--step", "1"},
		{"judge", run1, "--judge", "openai:sim:base", "--base-url", cred, "--api-key-env", "ANTIDRIFT_TEST_KEY", "--name", "llm"},
		{"score", run1, run2, "--json"},
		{"pairs", run1, run2, "--out", filepath.Join(root, "pairs")},
		{"rewards", run1, run2, "--out", filepath.Join(root, "rewards")},
		{"export", run1, run2, "--table", "trajectories", "--out", filepath.Join(root, "export")},
		{"pareto", run1, run2, "--out", filepath.Join(root, "report")},
		{"rescore", "--checkpoints", ckpts, "--rollouts", "1", "--limit", "3", "--api-key-env", "ANTIDRIFT_TEST_KEY", "--out", filepath.Join(root, "rescore")},
		{"rollout", "--policy", "openai:sim:base", "--base-url", "http://operator:" + password + "@127.0.0.1:1/v1?token=" + token, "--max-retries", "0",
			"--api-key-env", "ANTIDRIFT_TEST_KEY", "--rollouts", "1", "--limit", "1", "--out", filepath.Join(root, "down")},
		{"select", "--task", "tools", "--library", "builtin:filesystem", "--policy", "sim:sft", "--rollouts", "1", "--base-url", cred, "--out", filepath.Join(root, "select"), "--json"},
		{"rollout", "--policy", "openai:sim:base", "--base-url", cred, "--api-key-env", key, "--out", filepath.Join(root, "keyasname")},
		{"synth", "--designer", "openai:d", "--builder", "openai:b", "--critic", "openai:c", "--base-url", cred, "--probe-api-key-env", "OK_NAME," + key, "--out", filepath.Join(root, "keyasname")},
		{"synth", "--designer", "openai:d", "--builder", "openai:b", "--critic", "openai:c", "--base-url", cred, "--builder-api-key-env=" + key, "--out", filepath.Join(root, "keyasname")},
		{"judge", run1, "--judge", "openai:sim:base", "--base-url", cred, "--api-key-env", key, "--name", "keyasname"},
	} {
		code, stdout, stderr := execBin(t, env, args...)
		outputs.WriteString(stdout + stderr)
		if slices.Contains(args, filepath.Join(root, "keyasname")) || slices.Contains(args, "keyasname") {
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "looks like an API key")
			continue
		}
		if args[0] == "judge" { // the sim server is no judge: endpoint failures are exit 2
			assert.Contains(t, []int{0, 2}, code, "%v: %s", args, stderr)
			continue
		}
		if strings.HasSuffix(args[len(args)-1], "down") {
			assert.NotEqual(t, 0, code, "an endpoint that refuses connections")
			continue
		}
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
	}
	for _, s := range []string{password, token, key} {
		assert.NotContains(t, outputs.String(), s, "printed")
	}
	files := 0
	require.NoError(t, filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || path == ckpts {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range []string{password, token, key} {
			assert.NotContains(t, string(b), s, path)
		}
		return nil
	}))
	assert.Greater(t, files, 30)
	m, err := os.ReadFile(filepath.Join(run1, "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(m), `"base_url": "http://xxxxx@127.0.0.1`)
	assert.Contains(t, string(m), "?token=xxxxx")
	m, err = os.ReadFile(filepath.Join(root, "select", "manifest.json"))
	require.NoError(t, err)
	assert.Contains(t, string(m), `"base_url": "http://xxxxx@127.0.0.1`, "select redacts its settings too")
	assert.NoDirExists(t, filepath.Join(root, "keyasname"), "a refused key writes nothing")
}

// Item 11: --max-retries 0 sends each request once.
func TestMaxRetriesZeroMeansZero(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		retries string
		want    int64
	}{{"0", 1}, {"2", 3}} {
		hits.Store(0)
		code, _, _ := runScenarios(t, "rollout", "--policy", "openai:m", "--skip-endpoint-check", "--base-url", srv.URL+"/v1", "--max-retries", tc.retries,
			"--rollouts", "1", "--limit", "1", "--concurrency", "1", "--out", t.TempDir())
		assert.NotEqual(t, 0, code)
		assert.Equal(t, tc.want, hits.Load(), "--max-retries %s", tc.retries)
	}
}

// Item 14: flags out of range or malformed are refused, naming the flag,
// the value and the accepted range.
func TestFlagsValidated(t *testing.T) {
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--limit", "-1"}, "--limit -1: out of range; want 0 (all) or more"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--concurrency", "-1"}, "--concurrency -1: out of range; want 1 to 1048576"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--concurrency", "0"}, "--concurrency 0: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--shard", "1/2x"}, `--shard: invalid shard "1/2x"`},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--shard", "2/2"}, `invalid shard "2/2"`},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--max-steps", "0"}, "--max-steps 0: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--max-tokens", "-5"}, "--max-tokens -5: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--temperature", "NaN"}, "--temperature NaN: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--episode-timeout", "-1s"}, "--episode-timeout -1s: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--max-retries", "-1"}, "--max-retries -1: out of range; want 0 (no retry) to 100"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--rollouts", "0"}, "--rollouts 0: out of range"},
		{[]string{"score", out, "--bootstrap", "-3"}, "--bootstrap -3: out of range"},
		{[]string{"pairs", out, "--out", t.TempDir(), "--max-per-scenario", "0"}, "--max-per-scenario 0: out of range"},
		{[]string{"export", out, "--out", t.TempDir(), "--row-group-rows", "0"}, "--row-group-rows 0: out of range"},
		{[]string{"inspect", "x.parquet", "--rows", "-1"}, "--rows -1: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--framework", "relevance", "--relevance-k", "0"}, "--relevance-k 0: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--framework", "gated", "--risk-lambda", "-1"}, "--risk-lambda -1: out of range"},
		{[]string{"rollout", "--policy", "sim:base", "--out", out, "--queue", "nats://127.0.0.1:1", "--max-deliver", "0"}, "--max-deliver 0: out of range"},
		{[]string{"worker", "--queue", "nats://127.0.0.1:1", "--idle-exit", "-1s"}, "--idle-exit -1s: out of range"},
		{[]string{"manifests", "k8s", "--shards", "0"}, "--shards 0: out of range"},
		{[]string{"judge", out, "--judge-temperature", "3"}, `invalid argument "3" for "--judge-temperature" flag: want a number from 0 to 2`},
		{[]string{"select-pairs", out, "--out", t.TempDir(), "--max-per-query", "0"}, "--max-per-query 0: out of range"},
	} {
		code, _, stderr := runScenarios(t, tc.args...)
		assert.Equal(t, 1, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
	entries, _ := os.ReadDir(out)
	assert.Empty(t, entries, "a refused flag writes nothing")
}

// Item 15: text output that cannot be written is a failure.
func TestTextOutputWriteErrors(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "1", "--limit", "3", "--out", dir, "--json"}))
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	require.NoError(t, err)
	defer full.Close()
	for _, args := range [][]string{{"score", dir}, {"score", dir, "--json"}, {"scenarios", "list"}} {
		cmd := exec.Command(antidriftBin(t), args...)
		cmd.Stdout = full
		var e bytes.Buffer
		cmd.Stderr = &e
		err := cmd.Run()
		require.Error(t, err, "%v exited 0 with nothing written", args)
		assert.Contains(t, e.String(), "no space left on device", "%v", args)
	}
}

// Item 6: a partial run is refused unless --allow-partial, then labelled.
func TestPartialRunsRefusedOrLabelled(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "2", "--limit", "5", "--out", dir, "--json"}))
	part := filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")
	b, err := os.ReadFile(part)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	require.NoError(t, os.WriteFile(part, []byte(strings.Join(lines[:4], "")), 0o644)) // 4 of 10
	for _, args := range [][]string{
		{"score", dir},
		{"pareto", dir, "--out", t.TempDir()},
		{"pairs", dir, "--out", t.TempDir()},
		{"rewards", dir, "--out", t.TempDir()},
		{"export", dir, "--table", "trajectories", "--out", t.TempDir()},
	} {
		code, _, stderr := runScenarios(t, args...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Contains(t, stderr, "partial run "+dir+": 4 of 10 planned episodes (6 missing)", "%v", args)
		assert.Contains(t, stderr, "--allow-partial", "%v", args)
	}
	code, stdout, stderr := runScenarios(t, "score", dir, "--allow-partial")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "PARTIAL: "+dir+": 4 of 10 planned episodes (6 missing)")
	code, stdout, _ = runScenarios(t, "score", dir, "--allow-partial", "--json")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, `"partial": [`)
	for _, c := range []struct{ cmd, file string }{{"export", "README.md"}, {"pairs", "README.md"}, {"rewards", "README.md"}, {"pareto", "report.md"}} {
		out := t.TempDir()
		args := []string{c.cmd, dir, "--out", out, "--allow-partial"}
		if c.cmd == "export" {
			args = append(args, "--table", "trajectories")
		}
		code, _, stderr := runScenarios(t, args...)
		require.Equal(t, 0, code, "%s: %s", c.cmd, stderr)
		card, err := os.ReadFile(filepath.Join(out, c.file))
		require.NoError(t, err)
		assert.Contains(t, string(card), "4 of 10 planned episodes (6 missing)", c.cmd)
	}
}

// Item 8: an interrupted export leaves no temporary file, and a rerun
// removes what a killed one left.
func TestInterruptedExportLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, 0, run([]string{"rollout", "--policy", "sim:base", "--rollouts", "8", "--out", dir, "--json"}))
	out := filepath.Join(t.TempDir(), "export")
	// A killed earlier export's leftovers.
	require.NoError(t, os.MkdirAll(filepath.Join(out, ".antidrift-tmp-123"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, ".trajectories.parquet.456.tmp"), []byte("junk"), 0o644))
	// ... at every level of the folder: the format subfolders and below.
	for _, sub := range []string{"jsonl", "parquet", "arrow", filepath.Join("jsonl", "deeper")} {
		require.NoError(t, os.MkdirAll(filepath.Join(out, sub), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(out, sub, ".train.jsonl.789.tmp"), []byte("junk"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(out, sub, ".README.md.tmp4242"), []byte("junk"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(out, sub, ".antidrift-tmp-9"), 0o755))
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, c := range []string{"export", "pairs", "rewards"} {
			o := filepath.Join(t.TempDir(), c)
			cmd := exec.Command(antidriftBin(t), c, dir, "--table", "trajectories", "--out", o, "--row-group-rows", "1")
			if c != "export" {
				cmd = exec.Command(antidriftBin(t), c, dir, "--out", o)
			}
			var e bytes.Buffer
			cmd.Stderr = &e
			require.NoError(t, cmd.Start())
			// wait until it has started writing
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				if fileHas(filepath.Join(o, store.LockName), `"pid"`) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			_ = cmd.Process.Signal(sig)
			_ = cmd.Wait()
			assert.Empty(t, hiddenTemps(t, o), "%s after %s: %s", c, sig, e.String())
		}
	}
	code, _, stderr := runScenarios(t, "export", dir, "--table", "trajectories", "--out", out, "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, hiddenTemps(t, out), "the rerun swept the leftovers")
}

// hiddenTemps lists the hidden entries at every level under dir, but for
// the output marker and the lock.
func hiddenTemps(t *testing.T, dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if n := d.Name(); strings.HasPrefix(n, ".") && n != markerName && n != store.LockName {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestNamesEscapedInMarkdown: checkpoint and run names reach report.md
// and the dataset card as text, never as HTML, links or table cells of
// their own.
func TestNamesEscapedInMarkdown(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	const cp = `<img src=x onerror=alert(1)>|[x](http://evil.example)`
	code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--checkpoint", cp, "--run", "r|`un`", "--rollouts", "1", "--out", run, "--json")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, "export", run, "--table", "trajectories", "--format", "jsonl", "--out", filepath.Join(root, "export"))
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runScenarios(t, "pareto", run, "--out", filepath.Join(root, "report"))
	require.Equal(t, 0, code, stderr)
	for _, f := range []string{filepath.Join(root, "export", "README.md"), filepath.Join(root, "report", "report.md")} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		md := string(b)
		assert.NotRegexp(t, `(^|[^\\])<img`, md, "%s: raw HTML", f)
		assert.NotRegexp(t, `(^|[^\\])\[x\\?\]\(http`, md, "%s: a link", f)
		assert.Contains(t, md, `\<img src=x onerror=alert(1)\>\|\[x\](http://evil.example)`, f)
	}
}
