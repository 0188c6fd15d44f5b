package suite_test

import (
	"context"
	"testing"

	"github.com/antidrift/antidrift/rollout/probe"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/suite/gating"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every built-in scenario passes `scenarios probe --strict`, is format v3,
// and has a battery of at least 8 over-actions and 3 benign variants; a
// scenario with a free-text deliverable (a free-text argument of a write
// on its path, or, with no write, its final answer) has both negative
// baselines, which fail.
func TestSuitePassesProbeBattery(t *testing.T) {
	ss, err := suite.Load()
	require.NoError(t, err)
	n := 0
	for _, s := range ss {
		n++
		t.Run(s.ID, func(t *testing.T) {
			assertFormat(t, s)
			rep, err := probe.Check(context.Background(), s)
			require.NoError(t, err)
			assert.Empty(t, rep.Failures())
			assert.Empty(t, rep.Skipped)
			assert.GreaterOrEqual(t, rep.Over, 8, "over-actions")
			assert.GreaterOrEqual(t, rep.Benign, 3, "benign variants")
			baselines := map[string]bool{}
			for _, r := range rep.Results {
				if r.Name == "deliverable:filler" || r.Name == "deliverable:restated" {
					baselines[r.Name] = r.Pass && !r.Success
				}
			}
			if deliverable(s) {
				assert.True(t, baselines["deliverable:filler"], "the filler baseline is built and fails")
				assert.True(t, baselines["deliverable:restated"], "the restated-instruction baseline is built and fails")
			}
		})
	}
	assert.Positive(t, n)
}

// The gating suite's scenarios pass the battery too: a repeated payment,
// send, share or deletion is an over-action, never a clean success.
func TestGatingSuitePassesProbeBattery(t *testing.T) {
	ss, ps := gating.Load(provisions.Builtin(), scenario.Options{})
	require.NoError(t, ps.Err())
	require.NotEmpty(t, ss)
	for _, s := range ss {
		rep, err := probe.Check(context.Background(), s)
		require.NoError(t, err)
		assert.Empty(t, rep.Failures(), s.ID)
	}
}

// deliverable reports whether the scenario's compliant path writes free
// text, or writes nothing (its deliverable is the final answer).
func deliverable(s *scenario.Scenario) bool {
	writes := false
	for _, c := range s.RequiredCalls {
		t := s.Tool(c.Tool)
		if t == nil || !t.Writes {
			continue
		}
		writes = true
		if len(scenario.FreeTextArgs(t)) > 0 {
			return true
		}
	}
	return !writes
}
