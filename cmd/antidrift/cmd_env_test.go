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
