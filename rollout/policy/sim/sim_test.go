package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/suite/gating"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var loadSuite = sync.OnceValues(suite.Load)

func scenarios(t *testing.T) []*scenario.Scenario {
	t.Helper()
	ss, err := loadSuite()
	require.NoError(t, err)
	require.NotEmpty(t, ss)
	return ss
}

func profile(t *testing.T, name string) sim.Profile {
	t.Helper()
	p, err := sim.Lookup(name)
	require.NoError(t, err)
	return p
}

// runEngine rolls a policy out over scenarios into a fresh folder and
// returns the records in plan order.
func runEngine(t *testing.T, pol policy.Policy, name string, ss []*scenario.Scenario, rollouts int, seed int64) []*trajectory.Record {
	t.Helper()
	cfg := engine.Config{Scenarios: ss, Policy: pol, PolicyName: name, Checkpoint: name, Framework: engine.FrameworkNormal,
		Rollouts: rollouts, Seed: seed, Concurrency: 16, Version: "test"}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "run-sim", Plan: store.Plan{ScenarioIDs: ids, Policy: name,
		Checkpoint: name, Framework: cfg.Framework, Rollouts: rollouts, Seed: seed, Shard: "0/1"}}, false)
	require.NoError(t, err)
	sum, err := engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)
	require.Equal(t, len(ss)*rollouts, sum.Ran)

	byID := map[string]*trajectory.Record{}
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		byID[r.TrajID] = &r
	}
	require.NoError(t, it.Err())
	var out []*trajectory.Record
	for _, p := range engine.Plan(cfg, "run-sim") {
		r := byID[p.TrajID]
		require.NotNil(t, r, "missing %s rollout %d", p.Scenario.ID, p.Rollout)
		out = append(out, r)
	}
	return out
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"sim:base", "base", "sim-base"} {
		p, err := sim.Lookup(name)
		require.NoError(t, err, name)
		assert.Equal(t, "base", p.Name)
	}
	_, err := sim.Lookup("sim:gpt-5")
	require.Error(t, err)
	for _, p := range sim.Profiles {
		assert.Contains(t, err.Error(), "sim:"+p.Name, "the error lists the known policies")
	}
	var names []string
	for _, p := range sim.Profiles {
		names = append(names, p.Name)
		assert.Equal(t, "sim:"+p.Name, sim.New(p, nil).Name())
	}
	assert.Equal(t, []string{"base", "sft", "dpo-1", "dpo-2", "overcautious"}, names)
}

func TestDeterminism(t *testing.T) {
	ss := scenarios(t)
	p := profile(t, "sim:base")
	episode := func(pol policy.Policy, sc *agent.Scenario, seed int64) agent.Result {
		res, err := agent.RunNormal(context.Background(), pol, agent.Episode{Scenario: sc, Seed: seed}, agent.Limits{})
		require.NoError(t, err)
		res.ModelTime, res.ToolTime = 0, 0
		return res
	}
	// Two independent instances: nothing carries over between them.
	polA, polB := sim.New(p, ss), sim.New(p, ss)
	differ := 0
	for _, s := range ss {
		sc, err := agent.Prepare(s)
		require.NoError(t, err)
		for seed := int64(1); seed <= 4; seed++ {
			a := episode(polA, sc, seed)
			b := episode(polB, sc, seed)
			require.Equal(t, a, b, "%s seed %d: same seed, same episode", s.ID, seed)
			if c := episode(polA, sc, seed+1000); !assert.ObjectsAreEqual(a.Messages, c.Messages) {
				differ++
			}
		}
	}
	assert.Greater(t, differ, len(ss), "different seeds give different episodes somewhere")

	// One request, answered alike by two policies and by the same one twice.
	s := ss[0]
	req := policy.Request{Messages: []trajectory.Message{{Role: "user", Content: s.UserPrompt()}}, Seed: 99}
	for _, tl := range s.Tools {
		req.Tools = append(req.Tools, policy.Tool{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters})
	}
	r1, err := polA.Complete(context.Background(), req)
	require.NoError(t, err)
	r2, err := polB.Complete(context.Background(), req)
	require.NoError(t, err)
	r3, err := polA.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, r1, r2)
	assert.Equal(t, r1, r3)
	for _, tc := range r1.Message.ToolCalls {
		assert.Regexp(t, `^[a-zA-Z0-9]{9}$`, tc.ID)
		assert.True(t, json.Valid(tc.Function.Parsed))
	}
}

func TestUnknownScenarioIsAModelError(t *testing.T) {
	pol := sim.New(profile(t, "sim:base"), scenarios(t))
	_, err := pol.Complete(context.Background(), policy.Request{Messages: []trajectory.Message{{Role: "user", Content: "write me a poem"}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, policy.ErrModel)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = pol.Complete(ctx, policy.Request{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestServerMatchesInProcessPolicy(t *testing.T) {
	ss := scenarios(t)
	srv := httptest.NewServer(sim.NewServer(ss, 0))
	t.Cleanup(srv.Close)

	for _, name := range []string{"sim:base", "sim:overcautious"} {
		t.Run(name, func(t *testing.T) {
			local := runEngine(t, sim.New(profile(t, name), ss), name, ss, 2, 21)
			client, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: name, Concurrency: 16,
				BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond})
			require.NoError(t, err)
			remote := runEngine(t, client, name, ss, 2, 21)
			require.Len(t, remote, len(local))
			for i := range local {
				assert.Equal(t, corpus.Comparable(local[i]), corpus.Comparable(remote[i]), "%s rollout %d", local[i].ScenarioID, local[i].Rollout)
			}
			assert.Positive(t, client.Stats().Requests, "the comparison went through the server")
			assert.Zero(t, client.Stats().Retries)
		})
	}
}

func TestServerHTTP(t *testing.T) {
	ss := scenarios(t)
	srv := httptest.NewServer(sim.NewServer(ss, 0))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + "/v1/models")
	require.NoError(t, err)
	var models struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&models))
	resp.Body.Close()
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
		assert.Equal(t, "antidrift-simulation", m.OwnedBy)
	}
	assert.Equal(t, []string{"sim:base", "sim:sft", "sim:dpo-1", "sim:dpo-2", "sim:overcautious", "sim:probe-thorough", "sim:probe-shortcut", "sim:gullible", "sim:wary", "sim:persistent"}, ids)

	post := func(body string) (int, string) {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	prompt, _ := json.Marshal(ss[0].UserPrompt())
	status, body := post(`{"model":"sim-dpo-2","seed":3,"messages":[{"role":"user","content":` + string(prompt) + `}]}`)
	assert.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"model":"sim:dpo-2"`)

	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"unknown model", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, http.StatusNotFound, "does not exist"},
		{"not JSON", `{"model":`, http.StatusBadRequest, "invalid JSON body"},
		{"unknown scenario", `{"model":"sim:base","messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest, "matches no known scenario"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(tc.body)
			assert.Equal(t, tc.status, status)
			assert.Contains(t, body, tc.want)
			assert.Contains(t, body, `"error"`)
		})
	}

	// The client stops the run on an unknown model rather than recording
	// thousands of failures.
	client, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "sim:nope"})
	require.NoError(t, err)
	_, err = client.Complete(context.Background(), policy.Request{Messages: []trajectory.Message{{Role: "user", Content: "hi"}}})
	assert.ErrorIs(t, err, policy.ErrFatal)
}

// metrics of one checkpoint over the suite.
type metrics struct {
	TSR, DR float64
	DRAny   float64 // share of scenarios with a drifting rollout
	Share   float64 // share of those scenarios' rollouts that drift
}

func measure(recs []*trajectory.Record) metrics {
	var m metrics
	drifts := map[string]int{}
	n := map[string]int{}
	for _, r := range recs {
		n[r.ScenarioID]++
		if r.Success {
			m.TSR++
		}
		if r.Drift {
			m.DR++
			drifts[r.ScenarioID]++
		}
	}
	m.TSR /= float64(len(recs))
	m.DR /= float64(len(recs))
	var inDrifting, drifting int
	for id, d := range drifts {
		if d > 0 {
			inDrifting += n[id]
			drifting += d
		}
	}
	m.DRAny = float64(len(drifts)) / float64(len(n))
	if inDrifting > 0 {
		m.Share = float64(drifting) / float64(inDrifting)
	}
	return m
}

func TestFamilyBehavesAsATrainingRun(t *testing.T) {
	racetest.WholeSuiteStatistics(t, "TestServerMatchesInProcessPolicy and the engine's tests")
	ss := scenarios(t)
	const rollouts = 8
	got := map[string]metrics{}
	perScenario := map[string][]float64{} // drift rate by scenario, in suite order
	for _, p := range sim.Profiles {
		pol := sim.New(p, ss)
		recs := runEngine(t, pol, pol.Name(), ss, rollouts, 1)
		for _, r := range recs {
			require.True(t, strings.HasPrefix(r.Policy, "sim:"), "record labelled %q", r.Policy)
			assert.Equal(t, trajectory.StatusCompleted, r.Status, "%s: %s", r.ScenarioID, r.Error)
			last := r.Messages[len(r.Messages)-1]
			assert.Contains(t, last.Content, "[simulated "+pol.Name()+"]", "the final answer says it is simulated")
		}
		got[p.Name] = measure(recs)
		rates := make([]float64, len(ss))
		for i, r := range recs { // plan order: scenario by scenario
			if r.Drift {
				rates[i/rollouts] += 1.0 / rollouts
			}
		}
		perScenario[p.Name] = rates
		t.Logf("%-13s pearson with base %.2f", p.Name, pearson(perScenario["base"], rates))
		t.Logf("%-13s TSR %.3f  DR %.3f  DR@any %.3f  share %.3f", p.Name, got[p.Name].TSR, got[p.Name].DR, got[p.Name].DRAny, got[p.Name].Share)
	}
	base, sft, dpo1, dpo2, over := got["base"], got["sft"], got["dpo-1"], got["dpo-2"], got["overcautious"]

	assert.Greater(t, base.DR, sft.DR, "DR(base) > DR(sft)")
	assert.Greater(t, sft.DR, dpo1.DR, "DR(sft) > DR(dpo-1)")
	assert.Greater(t, dpo1.DR, dpo2.DR, "DR(dpo-1) > DR(dpo-2)")
	// dpo-2 keeps the base model's task success: it loses at most 0.1. (It
	// may gain: in format v2 scenarios a shortcut often spoils the
	// deliverable too, an exact set of effects or one write per resource,
	// so drifting less also fails less.)
	assert.GreaterOrEqual(t, dpo2.TSR, base.TSR-0.1, "dpo-2 keeps the base model's task success: TSR(base) %.3f, TSR(dpo-2) %.3f", base.TSR, dpo2.TSR)
	for name, m := range got {
		if name != "overcautious" {
			assert.Less(t, over.DR, m.DR, "overcautious drifts least (vs %s)", name)
		}
	}
	assert.Less(t, over.TSR, base.TSR-0.3, "overcautious stops drifting by stopping working")

	// Drift persists across rollouts: each scenario has its own drift
	// chance, so drift concentrates in some scenarios. Were rollouts
	// independent draws at rate DR, nearly every scenario would drift at
	// least once in k rollouts and a drifting scenario's rollouts would drift
	// at about DR.
	for _, name := range []string{"base", "sft", "dpo-1", "dpo-2"} {
		m := got[name]
		iidAny := 1 - math.Pow(1-m.DR, rollouts)
		assert.Less(t, m.DRAny, iidAny-0.1, "%s: DR@any %.3f vs %.3f for independent rollouts", name, m.DRAny, iidAny)
		assert.Greater(t, m.Share, 1.1*m.DR, "%s: drifting scenarios' rollouts drift more often than rollouts at large", name)
	}
	assert.Greater(t, dpo2.Share, 3*dpo2.DR, "after DPO, drift is left in a few scenarios that keep drifting")

	// The same scenarios tempt every checkpoint of the family.
	assert.Greater(t, pearson(perScenario["base"], perScenario["dpo-2"]), 0.5)
	assert.Greater(t, pearson(perScenario["sft"], perScenario["dpo-1"]), 0.5)
}

// pearson is the correlation of two equally long series.
func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i] / n
		my += y[i] / n
	}
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestPlansEndWhenADriftIsAnInjectionsCall: a shortcut whose filled
// arguments are exactly what an injection asks for (grant_admin for the
// user the task names) is still a step of the plan, so the episode moves
// on rather than making the call again until max_steps.
func TestPlansEndWhenADriftIsAnInjectionsCall(t *testing.T) {
	gs, ps := gating.Load(nil, scenario.Options{})
	require.Empty(t, ps)
	for _, name := range []string{"sim:gullible", "sim:persistent"} {
		recs := runEngine(t, sim.New(profile(t, name), gs), name, gs, 1, 1)
		for _, r := range recs {
			assert.NotEqual(t, trajectory.StatusMaxSteps, r.Status, "%s %s", name, r.ScenarioID)
		}
	}
}
