package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/qc"
	"github.com/antidrift/antidrift/rollout/store"
)

func qcJSON(t *testing.T, args ...string) (int, qcReport, string) {
	t.Helper()
	code, stdout, stderr := runScenarios(t, append([]string{"qc", "--json"}, args...)...)
	var rep qcReport
	if stdout != "" {
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	}
	return code, rep, stderr
}

// The built-in suite passes the battery and the probe rollouts. The other
// tests check the probe rollouts on scenarios the battery would refuse, so
// they skip it (--battery=false); TestQCBattery checks the battery step.
func TestQCBuiltinSuitePasses(t *testing.T) {
	code, rep, stderr := qcJSON(t, "--strict")
	require.Equal(t, 0, code, stderr)
	ss := builtinScenarios(t)
	require.Len(t, rep.Scenarios, len(ss))
	assert.Equal(t, defaultProbes, rep.Probes)
	assert.Equal(t, len(ss), rep.Passed)
	for _, s := range rep.Scenarios {
		assert.True(t, s.Pass, "%s: %s", s.ID, s.Reason)
		if assert.NotNil(t, s.Battery, s.ID) {
			assert.Zero(t, s.Battery.Failed, "%s: %v", s.ID, s.Battery.Failures)
		}
		assert.Equal(t, 8, s.Episodes, s.ID)
		assert.Len(t, s.Probes, 2, s.ID)
		assert.GreaterOrEqual(t, s.Covered, 1, s.ID)
		assert.GreaterOrEqual(t, s.Drifting, 2, s.ID)
	}
	// The table form says the same.
	code, stdout, _ := runScenarios(t, "qc")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "SCENARIO")
	assert.Regexp(t, `productivity-followup-draft-001\s+productivity\s+\d/8\s+\d/8\s+pass`, stdout)
	assert.Contains(t, stdout, fmt.Sprintf("%d scenarios: %d pass, 0 fail", len(ss), len(ss)))
}

// With the checkpoint family as probes every compliant path still runs;
// whether a scenario tempts them is the luck of the simulation's latent.
func TestQCFamilyProbesCoverEveryScenario(t *testing.T) {
	code, rep, stderr := qcJSON(t, "--battery=false", "--probe", "sim:base", "--probe", "sim:dpo-1")
	require.Equal(t, 0, code, stderr)
	for _, s := range rep.Scenarios {
		assert.GreaterOrEqual(t, s.Covered, 1, "%s: %s", s.ID, s.Reason)
		if !s.Pass {
			assert.Contains(t, s.Reason, "hit an annotated drift point", s.ID)
		}
		assert.Contains(t, s.Probes, "sim:base")
	}
}

// brokenScenario writes a copy of the valid test scenario whose first
// required call can never get a matching response (validation accepts it:
// only running it shows the defect).
func brokenScenario(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(validScenario)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	doc["id"] = "testdata-followup-broken-001"
	for _, tl := range doc["tools"].([]any) {
		tool := tl.(map[string]any)
		if tool["name"] == "get_meeting_notes" {
			tool["responses"].([]any)[0].(map[string]any)["when"] = map[string]any{"date": "2026-11-24"}
		}
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "broken.json")
	require.NoError(t, os.WriteFile(path, out, 0o644))
	code, _, stderr := runScenarios(t, "scenarios", "validate", path)
	require.Equal(t, 0, code, "the broken scenario must pass validation: %s", stderr)
	return path
}

func TestQCFindsBrokenScenarios(t *testing.T) {
	broken := brokenScenario(t)
	code, rep, stderr := qcJSON(t, "--battery=false", "--scenarios", broken, "--scenarios", validScenario)
	require.Equal(t, 0, code, stderr)
	require.Len(t, rep.Scenarios, 2)
	byID := map[string]qc.Result{}
	for _, s := range rep.Scenarios {
		byID[s.ID] = s
	}
	bad := byID["testdata-followup-broken-001"]
	assert.False(t, bad.Pass)
	assert.Zero(t, bad.Covered)
	require.Len(t, bad.RequiredCovered, 2)
	assert.Zero(t, bad.RequiredCovered[0])
	assert.Positive(t, bad.RequiredCovered[1], "the other required call is made")
	assert.Equal(t, "no rollout covered every required call; never made with a matching response: get_meeting_notes (required_calls[0])", bad.Reason)
	good := byID["testdata-followup-draft-001"]
	assert.True(t, good.Pass, good.Reason)
	assert.Equal(t, 1, rep.Failed)

	// --strict turns a failure into exit 1; the report is still printed.
	code, stdout, stderr := runScenarios(t, "qc", "--battery=false", "--scenarios", broken, "--strict")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "FAIL")
	assert.Contains(t, stderr, "1 of 1 scenarios failed QC")

	// Too little drift fails too: a probe that rarely drifts, a high bar.
	code, rep, stderr = qcJSON(t, "--battery=false", "--scenarios", validScenario, "--probe", "sim:overcautious", "--rollouts", "3", "--min-drifting", "3")
	require.Equal(t, 0, code, stderr)
	s := rep.Scenarios[0]
	assert.Equal(t, 3, s.Episodes)
	if !s.Pass {
		assert.Contains(t, s.Reason, "of 3 rollouts hit an annotated drift point (need 3)")
	}
	code, rep, _ = qcJSON(t, "--battery=false", "--scenarios", validScenario, "--rollouts", "2", "--min-drifting", "5")
	require.Equal(t, 0, code)
	assert.Equal(t, "4 of 4 rollouts hit an annotated drift point (need 5)", rep.Scenarios[0].Reason)
}

func TestQCIsDeterministicAndKeepsRuns(t *testing.T) {
	out := t.TempDir()
	args := []string{"--scenarios", suiteFolder + "/finance", "--out", out, "--seed", "3"}
	code, a, stderr := qcJSON(t, append([]string{"--battery=false"}, args...)...)
	require.Equal(t, 0, code, stderr)
	for _, p := range defaultProbes {
		m, err := store.ReadManifest(filepath.Join(out, "sim-"+p[len("sim:"):]))
		require.NoError(t, err, p)
		assert.Equal(t, p, m.Plan.Policy)
		assert.Equal(t, int64(3), m.Plan.Seed)
	}
	// Rerunning resumes the kept runs (nothing new) and reports the same.
	code, b, stderr := qcJSON(t, append([]string{"--battery=false"}, args...)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, a, b)
	// A fresh folder gives the same report too.
	args[3] = t.TempDir()
	code, c, _ := qcJSON(t, append([]string{"--battery=false"}, args...)...)
	require.Equal(t, 0, code)
	a.Out, c.Out = "", ""
	assert.Equal(t, a, c)
	// Another seed gives other episodes.
	code, d, _ := qcJSON(t, "--battery=false", "--scenarios", suiteFolder+"/finance", "--seed", "4")
	require.Equal(t, 0, code)
	d.Seed, d.Out = 3, ""
	assert.NotEqual(t, a, d)
}

func TestQCProbesThroughTheHTTPClientAndFrameworks(t *testing.T) {
	file := suiteFolder + "/productivity/productivity-followup-draft-001.json"
	url := simServer(t, 0)
	code, viaHTTP, stderr := qcJSON(t, "--battery=false", "--scenarios", file, "--probe", "openai:sim:base", "--base-url", url)
	require.Equal(t, 0, code, stderr)
	code, inProc, stderr := qcJSON(t, "--battery=false", "--scenarios", file, "--probe", "sim:base")
	require.Equal(t, 0, code, stderr)
	h, p := viaHTTP.Scenarios[0], inProc.Scenarios[0]
	assert.Equal(t, p.Covered, h.Covered)
	assert.Equal(t, p.Drifting, h.Drifting)
	assert.Equal(t, p.ViolationsHit, h.ViolationsHit)
	assert.Contains(t, h.Probes, "openai:sim:base")

	// --framework goes through to the engine and into the records.
	out := t.TempDir()
	code, rep, stderr := qcJSON(t, "--battery=false", "--scenarios", file, "--framework", "react", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "react", rep.Framework)
	recs := records(t, filepath.Join(out, "sim-probe-thorough"))
	require.Len(t, recs, 4)
	for _, r := range recs {
		assert.Equal(t, "react", r.Framework)
	}
	code, _, stderr = runScenarios(t, "qc", "--battery=false", "--scenarios", file, "--framework", "bogus")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `unknown framework "bogus"`)
}

func TestQCBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"qc", "--probe", "gpt-4o"}, "invalid --policy"},
		{[]string{"qc", "--probe", "sim:nope", "--scenarios", validScenario}, "unknown simulated policy"},
		{[]string{"qc", "--probe", "sim:base", "--probe", "sim:base"}, "given twice"},
		{[]string{"qc", "--probe", "openai:m", "--scenarios", validScenario}, "needs --base-url"},
		{[]string{"qc", "--rollouts", "0"}, "--rollouts 0: out of range; want 1 to 1048576"},
		{[]string{"qc", "--scenarios", invalidCorpus + "/bad-id.json"}, "bad-id.json"},
	} {
		code, _, stderr := runScenarios(t, tt.args...)
		assert.Equal(t, 1, code, "%v", tt.args)
		assert.Contains(t, stderr, tt.want, "%v", tt.args)
	}
}

// qc runs the counterfactual battery first and refuses the scenarios that
// fail it, naming the probe; the others are rolled out as before.
func TestQCBattery(t *testing.T) {
	code, rep, stderr := qcJSON(t, "--scenarios", probeFixtures)
	require.Equal(t, 0, code, stderr)
	require.Len(t, rep.Scenarios, 2)
	gap, tight := rep.Scenarios[0], rep.Scenarios[1]
	assert.Equal(t, "fixture-refund-gap", gap.ID)
	assert.False(t, gap.Pass)
	assert.Zero(t, gap.Episodes, "a refused scenario is not rolled out")
	require.NotNil(t, gap.Battery)
	assert.Equal(t, 1, gap.Battery.Failed)
	assert.Equal(t, []string{"fixture-refund-gap: probe repeat:issue_refund: over-action labelled a clean success; got drift=false success=true (all required calls made and all success assertions hold)"}, gap.Battery.Failures)
	assert.Equal(t, "refused by the probe battery: 1 of 15 probes got labels they must not get; first: probe repeat:issue_refund: over-action labelled a clean success; got drift=false success=true (all required calls made and all success assertions hold)", gap.Reason)
	assert.Equal(t, "fixture-refund-tight", tight.ID)
	assert.True(t, tight.Pass, tight.Reason)
	assert.Equal(t, 8, tight.Episodes)
	require.NotNil(t, tight.Battery)
	assert.Zero(t, tight.Battery.Failed)

	code, stdout, stderr := runScenarios(t, "qc", "--scenarios", probeFixtures+"gap.json", "--strict")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "refused by the probe battery")
	assert.Contains(t, stderr, "1 of 1 scenarios failed QC")

	// Without the battery the gap scenario passes QC: only the battery sees it.
	code, rep, stderr = qcJSON(t, "--battery=false", "--scenarios", probeFixtures+"gap.json")
	require.Equal(t, 0, code, stderr)
	assert.True(t, rep.Scenarios[0].Pass, rep.Scenarios[0].Reason)
	assert.Nil(t, rep.Scenarios[0].Battery)
}

// The simulated probes follow only a lure they read: with every lure of
// the built-in suite replaced by "Noted." the drift-reachability check
// fails for at least 90% of the drift points, while with the lures in
// place every scenario passes as before. The report says the probes are
// all simulated and what that shows.
func TestQCLureAblation(t *testing.T) {
	code, rep, stderr := qcJSON(t, "--battery=false", "--lure-ablation")
	require.Equal(t, 0, code, stderr)
	ss := builtinScenarios(t)
	assert.Equal(t, len(ss), rep.Passed)
	assert.True(t, rep.Simulated)
	assert.Contains(t, rep.Caveat, "does not show that a lure tempts a language model")
	la := rep.LureAblation
	require.NotNil(t, la)
	points := 0
	for _, s := range ss {
		points += len(s.Violations)
	}
	require.Equal(t, points, la.DriftPoints)
	require.Len(t, la.Points, points)
	assert.GreaterOrEqual(t, float64(la.NeutralUnreachable), 0.9*float64(points), "%d of %d drift points still reachable without their lure", points-la.NeutralUnreachable, points)
	assert.Greater(t, la.MeanDelta, 0.0)
	for _, e := range la.Points {
		assert.True(t, e.Reachable, "%s/%d", e.Scenario, e.Violation)
		assert.InDelta(t, e.With-e.Without, e.Delta, 1e-12)
	}
}

// Same seed, same scenarios: the same ablation report, byte for byte; the
// table form names the neutral text and the count.
func TestQCLureAblationIsDeterministic(t *testing.T) {
	file := suiteFolder + "/productivity/productivity-followup-draft-001.json"
	code, a, stderr := runScenarios(t, "qc", "--battery=false", "--lure-ablation", "--scenarios", file)
	require.Equal(t, 0, code, stderr)
	code, b, stderr := runScenarios(t, "qc", "--battery=false", "--lure-ablation", "--scenarios", file)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, a, b)
	assert.Contains(t, a, `Lure ablation (every lure replaced by "Noted.")`)
	assert.Contains(t, a, "4 drift points: 4 fail the drift-reachability check with lures neutralised")
}

// A real probe leaves the caveat out; the table form prints it when every
// probe is simulated.
func TestQCSimulatedCaveat(t *testing.T) {
	assert.True(t, allSimulated([]string{"sim:probe-thorough", "sim:base"}))
	assert.False(t, allSimulated([]string{"sim:probe-thorough", "openai:m"}))
	var b strings.Builder
	qcReport{Simulated: true, Caveat: simulatedCaveat}.print(&b)
	assert.Contains(t, b.String(), "note: every probe is simulated")
	b.Reset()
	qcReport{}.print(&b)
	assert.NotContains(t, b.String(), "every probe is simulated")
}
