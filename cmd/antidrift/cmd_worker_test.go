package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
)

func startQueue(t *testing.T) string {
	t.Helper()
	s, err := queue.StartServer(queue.ServerOptions{Addr: "127.0.0.1:0", StoreDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	return s.URL()
}

// rollout --queue with workers gives the same records as a local rollout
// of the same plan, and the same summary.
func TestRolloutQueueEqualsLocal(t *testing.T) {
	url := startQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2; i++ {
		nc, js, err := queue.Connect(ctx, url, "test")
		require.NoError(t, err)
		defer nc.Close()
		w := &queue.Worker{NC: nc, JS: js, Concurrency: 4, Version: Version}
		go func() { _ = w.Serve(ctx) }()
	}
	dir := t.TempDir()
	args := []string{"rollout", "--policy", "sim:base", "--limit", "5", "--rollouts", "2", "--json"}
	code, _, stderr := runScenarios(t, append(args, "--out", filepath.Join(dir, "local"))...)
	require.Equal(t, 0, code, stderr)
	code, out, stderr := runScenarios(t, append(args, "--out", filepath.Join(dir, "queued"), "--queue", url)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"ran": 10`)
	assert.Contains(t, stderr, "queueing its unfinished episodes")
	recs := func(name string) map[string]string {
		m := map[string]string{}
		it := store.Records(filepath.Join(dir, name))
		defer it.Close()
		for it.Next() {
			r := *it.At()
			r.Timings.Start, r.Timings.TotalMS, r.Timings.ModelMS, r.Timings.ToolMS = "", 0, 0, 0
			b, _ := json.Marshal(r)
			m[r.TrajID] = string(b)
		}
		require.NoError(t, it.Err())
		return m
	}
	assert.Equal(t, recs("local"), recs("queued"))
	// Resuming the finished run queues nothing.
	code, out, stderr = runScenarios(t, append(args, "--out", filepath.Join(dir, "queued"), "--queue", url)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"skipped": 10`)
}

func TestRolloutQueueUnreachableFailsFast(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--out", out, "--queue", "nats://127.0.0.1:1")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot connect to nats://127.0.0.1:1")
	assert.Contains(t, stderr, "antidrift queue serve")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "nothing is written before the queue answers")
}

func TestWorkerRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "endpoints.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"endpoints": [{"match": "http://a/v1", "api_key_env": "sk-live-123"}]}`), 0o644))
	unknown := filepath.Join(dir, "unknown.json")
	require.NoError(t, os.WriteFile(unknown, []byte(`{"endpoints": [{"match": "http://a/v1", "maxconc": 3}]}`), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no queue", []string{"worker"}, `required flag(s) "queue"`},
		{"zero concurrency", []string{"worker", "--queue", "nats://127.0.0.1:1", "--concurrency", "0"}, "--concurrency 0"},
		{"key for a variable name", []string{"worker", "--queue", "nats://127.0.0.1:1", "--endpoints", bad}, "$.endpoints[0].api_key_env"},
		{"unknown field", []string{"worker", "--queue", "nats://127.0.0.1:1", "--endpoints", unknown}, `unknown field "maxconc"`},
		{"unreachable", []string{"worker", "--queue", "nats://127.0.0.1:1"}, "cannot connect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runScenarios(t, tc.args...)
			assert.NotEqual(t, 0, code)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stderr, "sk-live-123")
		})
	}
}

func TestQueueServeStartsAndStops(t *testing.T) {
	store := t.TempDir()
	cmd := newQueueCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--store", store})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	time.Sleep(500 * time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "NATS JetStream serving on nats://127.0.0.1:")
	entries, err := os.ReadDir(store)
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "JetStream keeps its files in --store")
}

func TestRecordedCommandLineHasNoQueueCredentials(t *testing.T) {
	got := secret.Command([]string{"rollout", "--queue", "nats://alice:s3cret@nats:4222", "--base-url=http://h/v1?key=tok", "--out", "run"})
	assert.NotContains(t, got, "s3cret")
	assert.NotContains(t, got, "alice")
	assert.NotContains(t, got, "tok")
	assert.Contains(t, got, "nats://xxxxx@nats:4222")
	assert.Contains(t, got, "--base-url=http://h/v1?key=xxxxx")
	// NATS token authentication puts the token where a user name goes.
	assert.Equal(t, "nats://xxxxx@nats:4222", secret.URL("nats://s3cr3t-t0ken@nats:4222"))
}
