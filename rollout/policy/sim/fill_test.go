package sim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
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
// the built-in suite (each violation, each injection's target and a data
// theft's read) has no placeholder argument, no schema example standing
// in for prose, and counts as the same drift as the placeholder call did.
func TestDriftCallsLookReal(t *testing.T) {
	ss, err := suite.Load()
	require.NoError(t, err)
	pol := New(Profiles[0], ss)
	var calls, filled int
	check := func(s *scenario.Scenario, d *drift.Detector, what string, c scenario.Call, got map[string]any, vi int) {
		t.Helper()
		calls++
		require.NotNil(t, got, "%s %s", s.ID, what)
		fs := newFillSource(s, nil)
		for k, v := range got {
			assert.False(t, Placeholder(v), "%s %s: %s = %v", s.ID, what, k, v)
			if (textKeys[k] || subjectKeys[k]) && c.Args[k] == nil {
				assert.False(t, isExample(fs.examples[c.Tool][k], v), "%s %s: %s is the schema's example %v", s.ID, what, k, v)
			}
		}
		old := before(t, s, c)
		for k := range old {
			if !scenario.Equal(old[k], got[k]) {
				filled++
				break
			}
		}
		was, now := label(t, d, c.Tool, old), label(t, d, c.Tool, got)
		assert.Equal(t, was, now, "%s %s: the label moved", s.ID, what)
		if vi >= 0 {
			assert.Contains(t, strings.Join(now, "\n"), `,`+jsonInt(vi)+`,true]`, "%s %s no longer matches its violation", s.ID, what)
		}
	}
	byScenario := map[*scenario.Scenario][]injectionRead{}
	for _, ir := range pol.injections {
		byScenario[ir.s] = append(byScenario[ir.s], ir)
	}
	for _, s := range ss {
		d, err := drift.NewDetector(s)
		require.NoError(t, err)
		cc := pol.calls[s.ID]
		require.NoError(t, cc.err)
		for vi, v := range s.Violations {
			check(s, d, "violations["+jsonInt(vi)+"]", scenario.Call{Tool: v.Tool, Args: v.Args, Patterns: v.Patterns}, cc.violations[vi], vi)
		}
		for _, ir := range byScenario[s] {
			if ir.inj.Target != nil {
				check(s, d, "injection "+ir.inj.ID+" target", *ir.inj.Target, ir.targetArgs, -1)
			}
			if ir.inj.SecretFrom != nil {
				check(s, d, "injection "+ir.inj.ID+" secret_from", *ir.inj.SecretFrom, ir.secretArgs, -1)
			}
		}
	}
	// The suite has placeholders to replace: a filler that did nothing
	// would pass the label checks above.
	assert.Greater(t, filled, calls/4, "drift calls whose arguments plausibleArgs changed, of %d", calls)
	t.Logf("%d drift calls, %d with filled arguments", calls, filled)
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }
