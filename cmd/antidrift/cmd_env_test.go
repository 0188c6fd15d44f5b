package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a buffer the server's goroutine writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEnvServeAndLabel: env serve records an episode driven over HTTP,
// with the reward configuration in the manifest and an interrupted episode
// in errors/; label replays the recorded episode into another folder.
func TestEnvServeAndLabel(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "served")
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"env", "serve", "--scenarios", "builtin", "--out", out, "--addr", "127.0.0.1:0", "--scheme", "uniform,risk", "--lambda", "0.25"})
		root.SetOut(&logs)
		root.SetErr(&logs)
		done <- root.ExecuteContext(ctx)
	}()
	addr := regexp.MustCompile(`on http://(\S+);`)
	var base string
	require.Eventually(t, func() bool {
		m := addr.FindStringSubmatch(logs.String())
		if m != nil {
			base = "http://" + m[1]
		}
		return m != nil
	}, 60*time.Second, 20*time.Millisecond, "the server never said where it listens: %s", logs.String())

	post := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		var v map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", path, v)
		return v
	}
	r := post("/reset", map[string]any{"scenario_id": "commerce-account-erasure-001", "client": "cli-test"})
	id := r["observation"].(map[string]any)["episode_id"]
	post("/step", map[string]any{"episode_id": id, "action": map[string]any{"tool_name": "search_customers", "arguments": map[string]any{"query": "beatriz.quintela@example.pt"}}})
	end := post("/step", map[string]any{"episode_id": id, "action": map[string]any{"type": "final_answer", "content": "Nothing done."}})
	require.Equal(t, true, end["done"])
	components := end["observation"].(map[string]any)["rewards"].(map[string]any)["components"].(map[string]any)
	require.Contains(t, components, "reward/drift_penalty/risk")
	post("/reset", map[string]any{"task_index": 1}) // left open: the shutdown abandons it

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("env serve did not stop")
	}
	m, err := store.ReadManifest(out)
	require.NoError(t, err)
	require.Equal(t, "env-serve", m.Plan.Policy)
	require.Contains(t, m.Settings.Rewards, "0.25")
	require.Contains(t, m.Settings.Rewards, "uniform,risk")
	traj, err := os.ReadFile(filepath.Join(out, "trajectories", "part-0-of-1.jsonl"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(traj), "\n"))
	require.Contains(t, string(traj), `"policy":"client:cli-test/http"`)
	errs, err := os.ReadFile(filepath.Join(out, "errors", "part-0-of-1.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(errs), "the server shut down")

	labelled := filepath.Join(dir, "labelled")
	text := runCmd(t, "label", "--scenarios", "builtin", filepath.Join(out, "trajectories", "part-0-of-1.jsonl"), "--out", labelled)
	require.Contains(t, text, "commerce-account-erasure-001")
	require.Contains(t, text, "same")
	lab, err := os.ReadFile(filepath.Join(labelled, "trajectories", "part-0-of-1.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(lab), `"policy":"client:cli-test-http/label"`)
}

// TestEnvServeBehindQueue: env collect holds the folder, an env serve
// --queue replica publishes its episodes, and the folder ends with the
// finished episode in trajectories/ and the one its shutdown abandoned in
// errors/.
func TestEnvServeBehindQueue(t *testing.T) {
	dir := t.TempDir()
	qs, err := queue.StartServer(queue.ServerOptions{Addr: "127.0.0.1:0", StoreDir: filepath.Join(dir, "queue")})
	require.NoError(t, err)
	defer qs.Stop()
	out := filepath.Join(dir, "served")
	start := func(logs *syncBuffer, args ...string) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			root := newRootCmd()
			root.SetArgs(args)
			root.SetOut(logs)
			root.SetErr(logs)
			done <- root.ExecuteContext(ctx)
		}()
		return cancel, done
	}
	wait := func(done chan error, logs *syncBuffer) {
		select {
		case err := <-done:
			require.NoError(t, err, logs.String())
		case <-time.After(30 * time.Second):
			t.Fatal("the command did not stop")
		}
	}
	plan := []string{"--scenarios", "builtin", "--seed", "3", "--queue", qs.URL()}
	var clog, slog syncBuffer
	stopCollect, collectDone := start(&clog, append([]string{"env", "collect", "--out", out}, plan...)...)
	stopServe, serveDone := start(&slog, append([]string{"env", "serve", "--addr", "127.0.0.1:0"}, plan...)...)
	addr := regexp.MustCompile(`on http://(\S+);`)
	var base string
	require.Eventually(t, func() bool {
		m := addr.FindStringSubmatch(slog.String())
		if m != nil {
			base = "http://" + m[1]
		}
		return m != nil
	}, 60*time.Second, 20*time.Millisecond, "the replica never said where it listens: %s / %s", slog.String(), clog.String())
	require.Contains(t, slog.String(), "recording through the queue's writer")
	post := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		var v map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %v", path, v)
		return v
	}
	r := post("/reset", map[string]any{"scenario_id": "commerce-account-erasure-001", "client": "replica-test"})
	id := r["observation"].(map[string]any)["episode_id"]
	end := post("/step", map[string]any{"episode_id": id, "action": map[string]any{"type": "final_answer", "content": "Nothing done."}})
	require.Equal(t, true, end["done"])
	post("/reset", map[string]any{"task_index": 1}) // left open: the replica's shutdown abandons it
	stopServe()
	wait(serveDone, &slog)

	read := func(sub string) string {
		b, _ := os.ReadFile(filepath.Join(out, sub, "part-0-of-1.jsonl"))
		return string(b)
	}
	require.Eventually(t, func() bool {
		return strings.Count(read("trajectories"), "\n") == 1 && strings.Count(read("errors"), "\n") == 1
	}, 30*time.Second, 20*time.Millisecond, "the writer never wrote both episodes: %s", clog.String())
	stopCollect()
	wait(collectDone, &clog)
	require.Contains(t, read("trajectories"), `"policy":"client:replica-test/http"`)
	require.Contains(t, read("errors"), "the server shut down")
	require.Contains(t, clog.String(), "1 records written, 1 to errors/")
	m, err := store.ReadManifest(out)
	require.NoError(t, err)
	require.Equal(t, int64(3), m.Plan.Seed)
}

func TestEnvServeQueueFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"env", "serve"}, "give --out RUN"},
		{[]string{"env", "serve", "--out", "x", "--queue", "nats://127.0.0.1:1"}, "--out and --queue"},
		{[]string{"env", "serve", "--queue", "nats://127.0.0.1:1", "--force"}, "give it to env collect"},
		{[]string{"env", "collect", "--out", "x"}, `"queue" not set`},
	} {
		code, _, stderr := runScenarios(t, tc.args...)
		require.NotEqual(t, 0, code, tc.args)
		require.Contains(t, stderr, tc.want, tc.args)
	}
}
