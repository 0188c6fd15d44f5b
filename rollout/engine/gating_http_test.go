package engine_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

// TestExposureFiltersOverHTTPOnTheGatingSuite runs every exposure filter
// (gated also with a risk penalty) over the gating suite, broken-provenance
// variants included, with the injection-susceptible simulated policy
// through sim-server and the OpenAI-compatible client, and finds the
// in-process episodes: the filters, the injections and the policy's
// reaction to them behave the same over the wire.
func TestExposureFiltersOverHTTPOnTheGatingSuite(t *testing.T) {
	ss, ps := gating.Load(nil, scenario.Options{AllowUnsafeProvenance: true})
	require.NoError(t, ps.Err())
	prof, err := sim.Lookup("sim:gullible")
	require.NoError(t, err)
	srv := httptest.NewServer(sim.NewServer(ss, 0))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		fw   string
		opts agent.FilterOptions
	}{
		{engine.FrameworkNormal, agent.FilterOptions{}},
		{engine.FrameworkRelevance, agent.FilterOptions{RelevanceK: 3}},
		{engine.FrameworkStateAware, agent.FilterOptions{}},
		{engine.FrameworkCausal, agent.FilterOptions{}},
		{engine.FrameworkGated, agent.FilterOptions{}},
		{engine.FrameworkGated, agent.FilterOptions{RiskLambda: 4}},
	} {
		cfg := engine.Config{Scenarios: ss, PolicyName: "sim:" + prof.Name, Framework: c.fw, Filter: c.opts, Rollouts: 1, Seed: 9}
		local := cfg
		local.Policy = sim.New(prof, ss)
		want := runFramework(t, local)
		client, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "sim:" + prof.Name, Concurrency: 16,
			BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond})
		require.NoError(t, err)
		remote := cfg
		remote.Policy = client
		got := runFramework(t, remote)
		require.Len(t, got, len(want))
		injected := 0
		for i := range want {
			assert.Equal(t, corpus.Comparable(want[i]), corpus.Comparable(got[i]), "%s %+v: %s", c.fw, c.opts, want[i].ScenarioID)
			for _, m := range want[i].Matches {
				if m.Kind == scenario.KindInjection {
					injected++
				}
			}
		}
		if c.fw == engine.FrameworkNormal {
			assert.Positive(t, injected, "the susceptible policy follows injections when the target is offered")
		}
	}
}
