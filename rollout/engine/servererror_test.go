package engine_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/store"
)

// TestServerErrorForAll: an endpoint answering the same 5xx to every
// request stops the run within the first wave, writing nothing (neither
// records nor errors/), whether the 500 repeats identically (a model error
// after one retry) or generically (retried, then an infrastructure error).
func TestServerErrorForAll(t *testing.T) {
	ss := builtin(t)[:4]
	for _, tc := range []struct {
		name  string
		reply fakeserver.Reply
	}{
		// llama.cpp relays a backend failure as 500 with its message
		// (tools/server/server.cpp, format_error_response).
		{"identical 500", fakeserver.Error(500, "CUDA error: an illegal memory access was encountered", "server_error", "")},
		{"generic 500", fakeserver.Error(500, "Internal Server Error", "server_error", "")},
		{"502 from a proxy", fakeserver.ServerError(502)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := tc.reply
			srv := fakeserver.Start(t, fakeserver.Options{Fallback: &reply})
			cfg := engine.Config{Scenarios: ss, PolicyName: "openai:m", Framework: engine.FrameworkNormal, Rollouts: 4, Seed: 5, Concurrency: 1}
			cfg.Policy = newClient(t, srv)
			sum, got, n, err := runEndpoint(t, cfg)
			require.ErrorIs(t, err, engine.ErrRefused)
			assert.Contains(t, err.Error(), "no record was written")
			assert.Empty(t, got)
			assert.Zero(t, n)
			assert.Zero(t, sum.Ran)
			assert.Zero(t, sum.InfraErrors)
		})
	}
}

// TestServerErrorMidRun: an endpoint that starts failing every request
// with the same 5xx mid-run stops the run after ServerErrorStreak episodes
// in a row; those are not written (a resume retries them), everything
// before them is.
func TestServerErrorMidRun(t *testing.T) {
	ss := builtin(t)
	prof := sim.Profiles[0]
	pol := fakeserver.PolicyHandler(sim.New(prof, ss))
	var served atomic.Int64
	const healthy = 30 // requests answered before the backend breaks
	srv := fakeserver.Start(t, fakeserver.Options{Handler: func(req *fakeserver.Request) fakeserver.Reply {
		if served.Add(1) > healthy {
			return fakeserver.Error(500, "CUDA error: out of memory", "server_error", "")
		}
		return pol(req)
	}})
	cfg := engine.Config{Scenarios: ss, PolicyName: "sim:" + prof.Name, Checkpoint: "c", Framework: engine.FrameworkNormal,
		Rollouts: 1, Seed: 5, Concurrency: 1, Version: "test"}
	cfg.Policy = newClient(t, srv, func(c *openai.Config) { c.Model = "sim:" + prof.Name })
	dir := t.TempDir()
	sum, err := engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
	require.ErrorIs(t, err, engine.ErrServerFailing)
	assert.Contains(t, err.Error(), "CUDA error")
	assert.Contains(t, err.Error(), "rerun the same command")
	recs := trajectories(t, dir)
	require.NotEmpty(t, recs, "what came before the failure is written")
	assert.Equal(t, len(recs), sum.Ran)
	assert.Less(t, len(recs), len(ss)-engine.ServerErrorStreak+1, "the run stopped early")
	// At most one episode cut by the failure mid-way is written (it began
	// before the streak); the streak itself is not.
	failed := 0
	for _, r := range recs {
		if r.Error != "" {
			failed++
		}
	}
	assert.LessOrEqual(t, failed, 1)
	errs := readJSONL(t, filepath.Join(dir, "errors", store.ShardFile("0/1")))
	assert.Empty(t, errs)
}
