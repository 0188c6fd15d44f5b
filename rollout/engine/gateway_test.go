package engine_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestGatewayIDsDoNotChangeLabels: a gateway in front of sim-server that
// answers "call_0" in every turn, or no id at all, gives the labels (status,
// drift, success, matches, TSR) of sim-server reached directly: the judge's
// strip keys on the client's ids, never the server's.
func TestGatewayIDsDoNotChangeLabels(t *testing.T) {
	ss := builtin(t)
	prof := sim.Profiles[0]
	simSrv := httptest.NewServer(sim.NewServer(ss, 0))
	t.Cleanup(simSrv.Close)
	client := func(base string) *openai.Client {
		c, err := openai.New(openai.Config{BaseURL: base, Model: "sim:" + prof.Name, Concurrency: 16,
			BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond})
		require.NoError(t, err)
		return c
	}
	tsr := func(recs []*trajectory.Record) float64 {
		n := 0
		for _, r := range recs {
			if r.Success {
				n++
			}
		}
		return float64(n) / float64(len(recs))
	}
	for _, fw := range []string{engine.FrameworkNormal, engine.FrameworkGated} {
		cfg := engine.Config{Scenarios: ss, PolicyName: "sim:" + prof.Name, Framework: fw, Rollouts: 1, Seed: 21}
		direct := cfg
		direct.Policy = client(simSrv.URL + "/v1")
		want := runFramework(t, direct)
		for _, rw := range []struct {
			name string
			mode fakeserver.IDRewrite
		}{{"reused", fakeserver.ReuseIDs}, {"omitted", fakeserver.OmitIDs}} {
			t.Run(fw+"/"+rw.name, func(t *testing.T) {
				gw := fakeserver.StartGateway(t, simSrv.URL+"/v1", rw.mode)
				via := cfg
				via.Policy = client(gw.URL())
				got := runFramework(t, via)
				require.Len(t, got, len(want))
				drifting := 0
				for i := range want {
					where := want[i].ScenarioID
					assert.Equal(t, want[i].Status, got[i].Status, where)
					assert.Equal(t, want[i].Drift, got[i].Drift, where)
					assert.Equal(t, want[i].Success, got[i].Success, where)
					assert.Equal(t, want[i].Matches, got[i].Matches, where)
					if got[i].Drift {
						drifting++
					}
					ids := map[string]bool{}
					for _, m := range got[i].Messages {
						for _, tc := range m.ToolCalls {
							assert.False(t, ids[tc.ID], "%s: id %s used twice", where, tc.ID)
							ids[tc.ID] = true
							if rw.mode == fakeserver.ReuseIDs {
								assert.Regexp(t, `^call_\d+$`, tc.ServerID)
							}
						}
					}
				}
				require.Positive(t, drifting, "the test needs drifting episodes for the strip to matter")
				assert.Equal(t, tsr(want), tsr(got), "TSR")
			})
		}
	}
}
