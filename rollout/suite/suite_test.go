package suite_test

import (
	"encoding/json"
	"testing"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func load(t *testing.T) []*scenario.Scenario {
	t.Helper()
	ss, err := suite.Load()
	require.NoError(t, err)
	return ss
}

// replay runs the compliant path in a fresh environment and returns the
// environment and the calls made.
func replay(t *testing.T, s *scenario.Scenario) (*env.Env, []drift.Call) {
	t.Helper()
	spec, err := env.Compile(s)
	require.NoError(t, err)
	e := spec.New()
	var calls []drift.Call
	if s.Probes != nil && len(s.Probes.Path) > 0 {
		// The scenario writes its compliant path out in full (free text
		// the success assertions read): replay that.
		for i, c := range s.Probes.Path {
			args, err := s.CompleteArgs(c.Tool, c.Args, nil)
			require.NoError(t, err, "probes.path[%d]", i)
			res := e.Call(c.Tool, args)
			assert.Equal(t, env.Matched, res.Outcome, "probes.path[%d] (%s) hit %s: %s", i, c.Tool, res.Outcome, res.Content)
			calls = append(calls, drift.Call{Index: i, Turn: i, Name: c.Tool, Args: args})
		}
		return e, calls
	}
	for i, c := range s.RequiredCalls {
		args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
		require.NoError(t, err, "required_calls[%d]", i)
		res := e.Call(c.Tool, args)
		assert.Equal(t, env.Matched, res.Outcome, "required_calls[%d] (%s) hit %s: %s", i, c.Tool, res.Outcome, res.Content)
		calls = append(calls, drift.Call{Index: i, Turn: i, Name: c.Tool, Args: args})
	}
	return e, calls
}

func TestCompliantPathIsCleanAndSucceeds(t *testing.T) {
	for _, s := range load(t) {
		t.Run(s.ID, func(t *testing.T) {
			e, calls := replay(t, s)
			ms, err := drift.Detect(s, calls)
			require.NoError(t, err)
			assert.Empty(t, ms, "the compliant path drifts")
			for i, a := range s.Success.State {
				ok, why := env.Check(e.State(), a)
				assert.True(t, ok, "success.state[%d]: %s", i, why)
			}
			for _, g := range s.Goal {
				assert.True(t, e.Holds(g), "goal %q does not hold after the compliant path", g)
			}
		})
	}
}

func TestEveryViolationIsDetected(t *testing.T) {
	for _, s := range load(t) {
		t.Run(s.ID, func(t *testing.T) {
			_, calls := replay(t, s)
			det, err := drift.NewDetector(s)
			require.NoError(t, err)
			for i, v := range s.Violations {
				args, err := s.CompleteArgs(v.Tool, v.Args, v.Patterns)
				require.NoError(t, err, "violations[%d]", i)
				call := drift.Call{Index: len(calls), Turn: len(calls), Name: v.Tool, Args: args}
				ms := det.Detect(append(append([]drift.Call(nil), calls...), call))
				var hit *drift.Match
				for j := range ms {
					if ms[j].Annotated && ms[j].Violation == i {
						hit = &ms[j]
					}
				}
				require.NotNil(t, hit, "violations[%d] (%s) not detected; matches: %+v", i, v.Tool, ms)
				assert.Equal(t, len(calls), hit.Call)
				assert.Equal(t, v.Drift, hit.Drift)
				assert.Equal(t, v.Kind, hit.Kind)
				assert.Equal(t, v.Provisions, nonNil(hit.Provisions))
			}
		})
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestEnvironmentsAreIndependent(t *testing.T) {
	for _, s := range load(t) {
		spec, err := env.Compile(s)
		require.NoError(t, err)
		before, _ := json.Marshal(spec.New().State())
		e1 := spec.New()
		for _, c := range s.RequiredCalls {
			args, err := s.CompleteArgs(c.Tool, c.Args, c.Patterns)
			require.NoError(t, err)
			e1.Call(c.Tool, args)
		}
		after, _ := json.Marshal(spec.New().State())
		assert.JSONEq(t, string(before), string(after), "%s: an episode changed another's initial state", s.ID)
	}
}
