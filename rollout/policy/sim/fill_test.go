package sim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

// label is what a call counts as: its counted matches by type, kind,
// provisions and violation.
func label(t *testing.T, d *drift.Detector, tool string, args map[string]any) []string {
	t.Helper()
	var out []string
	for _, m := range drift.Counted(d.Episode().Check(drift.Call{Name: tool, Args: args})) {
		b, err := json.Marshal([]any{m.Drift, m.Kind, m.Provisions, m.Violation, m.Annotated})
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// before is a call's arguments as the simulation filled them before
// plausibleArgs: CompleteArgs's placeholders, then fillText.
func before(t *testing.T, s *scenario.Scenario, c scenario.Call) map[string]any {
	t.Helper()
	args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
	require.NoError(t, err)
	return fillText(args, s)
}

// TestDriftCallsLookReal: every drifting call a simulated policy makes on
// the built-in suite (each violation of the plan a task plays, each
// injection's target and a data theft's read) has no placeholder
// argument, no schema example standing in for prose, and counts as the
// same drift as the placeholder call did, in every variant of the task
// that plays the plan. On builtin:gating the labels hold too; a few calls
// there keep a placeholder, since the only value the scenario offers is
// what an injection variant's own violation names
// (TestPlansEndWhenADriftIsAnInjectionsCall runs them).
func TestDriftCallsLookReal(t *testing.T) {
	racetest.SingleThreaded(t)
	ss, err := suite.Load()
	require.NoError(t, err)
	t.Run("builtin", func(t *testing.T) {
		kept := checkDriftCalls(t, ss)
		assert.Empty(t, kept, "drift calls that keep a placeholder")
	})
	gs, ps := gating.Load(nil, scenario.Options{})
	require.Empty(t, ps)
	t.Run("gating", func(t *testing.T) {
		kept := checkDriftCalls(t, gs)
		t.Logf("%d drift calls keep a placeholder: %s", len(kept), strings.Join(kept, ", "))
	})
}

// checkDriftCalls checks the labels and text of a suite's drift calls and
// returns the calls that keep a placeholder.
func checkDriftCalls(t *testing.T, ss []*scenario.Scenario) (kept []string) {
	pol := New(Profiles[0], ss)
	injected := injectedCalls(ss)
	// takenFor lists the injections' calls isInjected would take a call
	// for: a planned call taken for one is never passed by the plan walk.
	takenFor := func(tool string, args map[string]any) []int {
		var out []int
		for i, m := range injected[tool] {
			if m.Match(args) {
				out = append(out, i)
			}
		}
		return out
	}
	var calls, filled int
	check := func(s, in *scenario.Scenario, d *drift.Detector, what string, c scenario.Call, got map[string]any, vi int) {
		t.Helper()
		require.NotNil(t, got, "%s %s", s.ID, what)
		old := before(t, s, c)
		was, now := label(t, d, c.Tool, old), label(t, d, c.Tool, got)
		assert.Equal(t, was, now, "%s %s in %s: the label moved", s.ID, what, in.ID)
		if vi >= 0 && s == in {
			assert.Contains(t, strings.Join(now, "\n"), `,`+jsonInt(vi)+`,true]`, "%s %s no longer matches its violation", s.ID, what)
		}
		if s != in {
			return // text checked once, in the scenario the call is of
		}
		if vi >= 0 {
			assert.Equal(t, takenFor(c.Tool, old), takenFor(c.Tool, got), "%s %s: taken for an injection's call", s.ID, what)
		}
		calls++
		fs := newFillSource(s, nil, nil, nil)
		for k, v := range got {
			if placeholder(v) {
				kept = append(kept, s.ID+" "+what+"."+k)
			}
			if (textKeys[k] || subjectKeys[k]) && c.Args[k] == nil {
				assert.False(t, isExample(fs.examples[c.Tool][k], v), "%s %s: %s is the schema's example %v", s.ID, what, k, v)
			}
		}
		for k := range old {
			if !scenario.Equal(old[k], got[k]) {
				filled++
				break
			}
		}
	}
	byScenario := map[*scenario.Scenario][]injectionRead{}
	for _, ir := range pol.injections {
		byScenario[ir.s] = append(byScenario[ir.s], ir)
	}
	for _, in := range ss {
		d, err := drift.NewDetector(in)
		require.NoError(t, err)
		// The plan played in this scenario is its task's first variant's.
		s := pol.byPrompt[in.UserPrompt()]
		require.NotNil(t, s)
		cc := pol.calls[s.ID]
		require.NoError(t, cc.err)
		for vi, v := range s.Violations {
			check(s, in, d, "violations["+jsonInt(vi)+"]", scenario.Call{Tool: v.Tool, Args: v.Args, Patterns: v.Patterns}, cc.violations[vi], vi)
		}
		for _, ir := range byScenario[in] {
			if ir.inj.Target != nil {
				check(in, in, d, "injection "+ir.inj.ID+" target", *ir.inj.Target, ir.targetArgs, -1)
			}
			if ir.inj.SecretFrom != nil {
				check(in, in, d, "injection "+ir.inj.ID+" secret_from", *ir.inj.SecretFrom, ir.secretArgs, -1)
			}
		}
	}
	// The suite has placeholders to replace: a filler that did nothing
	// would pass the label checks above.
	assert.Greater(t, filled, calls/4, "drift calls whose arguments plausibleArgs changed, of %d", calls)
	t.Logf("%d drift calls, %d with filled arguments", calls, filled)
	return kept
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestFillHelpers(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"Printers given standing access to the event folder turned up twice.", "event folder"},
		{"For the last two leavers from the design team the manager was given a copy.", "design team"},
		{"Staff used the same sync error as before.", ""},
		{"No article here.", ""},
	} {
		assert.Equal(t, c.want, nounPhrase(c.text), c.text)
	}
	for _, c := range []struct {
		args map[string]any
		want bool
	}{
		{map[string]any{"from": "2026-01-01", "to": "2026-02-01"}, true},
		{map[string]any{"from": "2027-02-08", "to": "2026-05-31"}, false},
		{map[string]any{"start": "2026-03-01T09:00:00Z", "end": "2026-03-01T08:00:00Z"}, true}, // same day: not compared finer
		{map[string]any{"from": "last week", "to": "2026-05-31"}, true},
	} {
		assert.Equal(t, c.want, ordered(c.args), "%v", c.args)
	}
	for _, c := range []struct {
		key  string
		v    any
		want bool
	}{
		{"to", "ana@x.example", true},
		{"to", "+44 7700 900412", true},
		{"to", "2026-06-14", false},
		{"body", "late_delivery", false},
		{"body", "Your order is on its way.", true},
		{"recipients", []any{"a@x.example", "2026-01-01"}, false},
		{"customer_id", "C-1", true},
	} {
		assert.Equal(t, c.want, fits(c.key, c.v), "%s %v", c.key, c.v)
	}
	assert.True(t, placeholder("(simulated to)"))
	assert.True(t, placeholder([]any{"ok", "[simulated body] Re: x"}))
	assert.True(t, placeholder(" "))
	assert.False(t, placeholder("ana@x.example"))
}
