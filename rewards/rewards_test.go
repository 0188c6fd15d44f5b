package rewards_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// call is one assistant turn of a script: a tool call, drifting with the
// given provisions when drift is set.
type call struct {
	tool  string
	drift bool
	provs []string
}

// rec builds a record: system, user, one assistant turn per call (each
// answered by a tool message), then a final answer.
func rec(id, sid, ck string, success bool, calls ...call) *trajectory.Record {
	r := &trajectory.Record{TrajID: id, ScenarioID: sid, Checkpoint: ck, Domain: "finance", Success: success,
		Messages: []trajectory.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "task " + sid}},
		Judge:    trajectory.Judgement{Kind: "rule"}}
	if success {
		r.Judge.Score = 1
	}
	for i, c := range calls {
		turn := len(r.Messages)
		r.Messages = append(r.Messages,
			trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: "c" + id, Type: "function",
				Function: trajectory.FunctionCall{Name: c.tool, Arguments: "{}", Parsed: json.RawMessage("{}")}}}},
			trajectory.Message{Role: "tool", Content: "ok", ToolCallID: "c" + id})
		if c.drift {
			r.Drift = true
			r.DriftSteps = append(r.DriftSteps, i)
			r.Matches = append(r.Matches,
				drift.Match{Call: i, Turn: turn, Tool: c.tool, Drift: scenario.DriftData, Kind: scenario.KindDataMinimization, Provisions: c.provs, Violation: 0, Annotated: true},
				drift.Match{Call: i, Turn: turn, Tool: c.tool, Drift: scenario.DriftTool, Violation: -1})
		}
	}
	r.Messages = append(r.Messages, trajectory.Message{Role: "assistant", Content: "done"})
	return r
}

// testScenario: a (low, L1) and b (medium, L2) on the compliant path, so
// the privilege ceiling is 2; x is high risk at L4.
func testScenario() *scenario.Scenario {
	return &scenario.Scenario{ID: "s1", Tools: []scenario.Tool{
		{Name: "a", Risk: scenario.RiskLow, Privilege: 1},
		{Name: "b", Risk: scenario.RiskMedium, Privilege: 2},
		{Name: "x", Risk: scenario.RiskHigh, Privilege: 4},
		{Name: "m", Risk: scenario.RiskMedium, Privilege: 3},
	}, RequiredCalls: []scenario.Call{{Tool: "a"}, {Tool: "b"}}}
}

func cfg(schemes ...rewards.Scheme) rewards.Config {
	c := rewards.Default()
	c.Schemes = schemes
	c.Scenarios = map[string]*scenario.Scenario{"s1": testScenario()}
	return c
}

func TestScoreHandComputed(t *testing.T) {
	clean := rec("t1", "s1", "ck", true, call{tool: "a"}, call{tool: "b"})
	// One drifting call to x citing GDPR-9-1 (2.0) and GDPR-5-1-e (0.75);
	// its two matches count once.
	shortcut := rec("t2", "s1", "ck", true, call{tool: "a"}, call{tool: "x", drift: true, provs: []string{"GDPR-9-1", "GDPR-5-1-e"}}, call{tool: "b"})
	// Two drifting calls: m (medium, L3) citing GDPR-44 (1.5), then an
	// unknown tool (worst case: high, L4) citing nothing.
	twice := rec("t3", "s1", "ck", false, call{tool: "m", drift: true, provs: []string{"GDPR-44"}}, call{tool: "zz", drift: true})
	failed := rec("t4", "s1", "ck", false, call{tool: "a"})

	cases := []struct {
		name    string
		c       rewards.Config
		r       *trajectory.Record
		reward  float64
		process []float64
	}{
		{"clean", cfg(rewards.Uniform), clean, 1, []float64{0, 0, 1}},
		{"failed", cfg(rewards.Uniform), failed, 0, []float64{0, 0}},
		{"uniform", cfg(rewards.Uniform), shortcut, -0.5, []float64{0, -0.5, 0, 0}},
		{"provision sum", cfg(rewards.Provision), shortcut, -0.5 * 2.75, []float64{0, -1.375, 0, 0}},
		{"risk", cfg(rewards.Risk), shortcut, -0.5, []float64{0, -0.5, 0, 0}},
		{"privilege", cfg(rewards.Privilege), shortcut, -0.5 * 0.5, []float64{0, -0.25, 0, 0}},
		{"all schemes add up", cfg(rewards.AllSchemes...), shortcut, -0.5 * (1 + 2.75 + 1 + 0.5), []float64{0, -2.625, 0, 0}},
		{"two calls, uniform", cfg(rewards.Uniform), twice, -1, []float64{-0.5, -0.5, 0}},
		{"two calls, provision+risk+privilege", cfg(rewards.Provision, rewards.Risk, rewards.Privilege), twice,
			-0.5*(1.5+0.5+0.25) - 0.5*(0+1+0.5), []float64{-1.125, -0.75, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.c.Validate())
			res, err := tc.c.Score(tc.r)
			require.NoError(t, err)
			assert.InDelta(t, tc.reward, res.Reward, 1e-12)
			require.Len(t, res.Process, len(tc.process))
			sum := 0.0
			for i := range tc.process {
				assert.InDelta(t, tc.process[i], res.Process[i], 1e-12, "turn %d", i)
				sum += res.Process[i]
			}
			assert.InDelta(t, res.Reward, sum, 1e-12, "process rewards sum to R")
			assert.InDelta(t, res.Outcome-res.Penalty, res.Reward, 1e-12)
		})
	}

	t.Run("provision max", func(t *testing.T) {
		c := cfg(rewards.Provision)
		c.ProvisionMax = true
		res, err := c.Score(shortcut)
		require.NoError(t, err)
		assert.InDelta(t, -1.0, res.Reward, 1e-12)
		require.Len(t, res.Calls, 1)
		assert.Equal(t, []string{"GDPR-5-1-e", "GDPR-9-1"}, res.Calls[0].Provisions)
	})
	t.Run("alpha and lambda", func(t *testing.T) {
		c := cfg(rewards.Uniform)
		c.Alpha, c.Lambda = 2, 0.25
		res, _ := c.Score(clean)
		assert.Equal(t, 2.0, res.Reward)
		res, _ = c.Score(twice)
		assert.Equal(t, -0.5, res.Reward)
	})
	t.Run("judge score", func(t *testing.T) {
		c := cfg(rewards.Uniform)
		c.JudgeScore = true
		r := rec("t5", "s1", "ck", true, call{tool: "a"})
		r.Judge.Score = 0.7
		res, _ := c.Score(r)
		assert.InDelta(t, 0.7, res.Reward, 1e-12)
		r.Judge.Score = 3
		res, _ = c.Score(r)
		assert.InDelta(t, 1, res.Reward, 1e-12, "clamped to [0,1]")
	})
	t.Run("errors", func(t *testing.T) {
		c := cfg(rewards.Provision)
		c.Weights = map[string]float64{"GDPR-9-1": 1}
		_, err := c.Score(shortcut)
		assert.ErrorContains(t, err, "provision GDPR-5-1-e has no weight")

		c = cfg(rewards.Risk)
		c.Scenarios = map[string]*scenario.Scenario{}
		_, err = c.Score(shortcut)
		assert.ErrorContains(t, err, "scenario s1 is not among the loaded scenarios")

		bad := rec("t6", "s1", "ck", false, call{tool: "x", drift: true})
		bad.Matches[0].Turn, bad.Matches[1].Turn = 3, 3 // a tool message
		_, err = cfg(rewards.Uniform).Score(bad)
		assert.ErrorContains(t, err, "not an assistant turn")

		c = rewards.Default()
		c.Schemes = []rewards.Scheme{rewards.Privilege}
		assert.Error(t, c.Validate(), "privilege needs scenarios")
		c.Schemes = nil
		assert.Error(t, c.Validate())
	})
}

func TestAdvantagesGRPO(t *testing.T) {
	cases := []struct {
		name    string
		rewards []float64
		want    []float64
	}{
		{"empty", nil, []float64{}},
		{"one member", []float64{0.7}, []float64{0}},
		{"equal rewards", []float64{1, 1, 1}, []float64{0, 0, 0}},
		// mean 0.5, sample std sqrt(0.5)
		{"two", []float64{1, 0}, []float64{0.5 / (math.Sqrt(0.5) + 1e-4), -0.5 / (math.Sqrt(0.5) + 1e-4)}},
		// mean 0.375; squared deviations 0.390625, 0.765625, 0.390625,
		// 0.140625 sum to 1.6875; /3 = 0.5625; std 0.75
		{"four", []float64{1, -0.5, 1, 0}, []float64{0.625 / 0.7501, -0.875 / 0.7501, 0.625 / 0.7501, -0.375 / 0.7501}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rewards.Advantages(tc.rewards)
			require.Len(t, got, len(tc.want))
			for i := range tc.want {
				assert.InDelta(t, tc.want[i], got[i], 1e-12)
			}
		})
	}
}

func TestParseSchemes(t *testing.T) {
	for in, want := range map[string][]rewards.Scheme{
		"uniform":                          {rewards.Uniform},
		"risk,provision":                   {rewards.Provision, rewards.Risk},
		" privilege , risk,risk":           {rewards.Risk, rewards.Privilege},
		"uniform,provision,risk,privilege": rewards.AllSchemes,
	} {
		got, err := rewards.ParseSchemes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", ",", "legal", "risk,legal"} {
		_, err := rewards.ParseSchemes(in)
		assert.Error(t, err, in)
	}
}

func TestLoadWeights(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	w, err := rewards.LoadWeights(write("flat.json", `{"GDPR-9-1": 5, "MY-1": 0.5}`))
	require.NoError(t, err)
	assert.Equal(t, 5.0, w["GDPR-9-1"], "a flat map overrides")
	assert.Equal(t, 0.5, w["MY-1"])
	assert.Equal(t, 0.75, w["GDPR-5-1-e"], "the others keep the catalogue's weight")

	w, err = rewards.LoadWeights(write("cat.json", `{"version": 1, "provisions": [{"id": "X-1", "jurisdiction": "EU", "instrument": "I", "article": "1", "summary": "s", "weight": 3}]}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"X-1": 3}, w, "a catalogue replaces the built-in weights")

	for name, body := range map[string]string{
		"neg.json":    `{"GDPR-9-1": -1}`,
		"str.json":    `{"GDPR-9-1": "high"}`,
		"broken.json": `{"GDPR-9-1": `,
		"badcat.json": `{"provisions": [{"id": ""}]}`,
	} {
		_, err := rewards.LoadWeights(write(name, body))
		assert.Error(t, err, name)
	}
	_, err = rewards.LoadWeights(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)
}
