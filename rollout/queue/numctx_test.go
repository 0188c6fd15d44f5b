package queue

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/policy/sim"
)

// Workers run no endpoint check. What the coordinator's check learnt (the
// token parameter, an Ollama model's num_ctx) reaches their clients
// through the run configuration; without num_ctx there, a worker asks
// /api/show itself, so that a conversation Ollama cuts is told from the
// request's size and not only from falling prompt tokens.
func TestWorkersLearnWhatTheCheckLearnt(t *testing.T) {
	ss := testSuite(t)
	prof, err := sim.Lookup("base")
	if err != nil {
		t.Fatal(err)
	}
	mode := fakeserver.Mode{Family: fakeserver.FamilyOllama, NumCtx: 300}
	srv := fakeserver.Start(t, fakeserver.Options{Mode: &mode, Handler: fakeserver.PolicyHandler(sim.New(prof, ss))})
	sp := spec{Policy: "openai:sim:base", BaseURL: srv.URL(), Rollouts: 1, Seed: 13, Conc: 4}
	run := sp.open(t, filepath.Join(t.TempDir(), "run"), ss)
	files, err := scenarioFiles(ss)
	if err != nil {
		t.Fatal(err)
	}
	client := func(rc *RunConfig) *openai.Client {
		t.Helper()
		w := &Worker{Version: run.Manifest.Version}
		r, err := w.prepare(rc)
		if err != nil {
			t.Fatal(err)
		}
		r.learnNumCtx(context.Background()) // what the first item does
		return r.cfg.Policy.(*openai.Client)
	}

	asked := client(&RunConfig{Format: Format, Manifest: run.Manifest, Scenarios: files})
	if got := asked.Learned().NumCtx; got != 300 {
		t.Errorf("a worker with no num_ctx from the coordinator: learnt %d, want the server's 300", got)
	}
	given := client(&RunConfig{Format: Format, Manifest: run.Manifest, Scenarios: files,
		NumCtx: 777, LearnedTokenParam: openai.TokenMaxCompletionTokens.String()})
	if got := given.Learned().NumCtx; got != 777 {
		t.Errorf("num_ctx from the coordinator: %d, want 777", got)
	}
	if got := given.TokenParamInUse(); got != openai.TokenMaxCompletionTokens {
		t.Errorf("token parameter: %v, want the one the coordinator's check learnt", got)
	}
}
