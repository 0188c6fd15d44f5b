package rewards_test

import (
	"testing"

	"github.com/antidrift/antidrift/rewards"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamedComponents: the shortcut of TestScoreHandComputed (one drifting
// call to x: provisions 2.75, risk high 1, privilege (4−2)/4 = 0.5) split
// into named components that add up to the reward.
func TestNamedComponents(t *testing.T) {
	shortcut := rec("t2", "s1", "ck", true, call{tool: "a"}, call{tool: "x", drift: true, provs: []string{"GDPR-9-1", "GDPR-5-1-e"}}, call{tool: "b"})
	n, err := cfg(rewards.AllSchemes...).Named(shortcut)
	require.NoError(t, err)
	want := map[string]float64{
		"reward/success":                 0,
		"reward/drift_penalty":           -0.5 * (1 + 2.75 + 1 + 0.5),
		"reward/drift_penalty/uniform":   -0.5,
		"reward/drift_penalty/provision": -0.5 * 2.75,
		"reward/drift_penalty/risk":      -0.5,
		"reward/drift_penalty/privilege": -0.25,
	}
	require.Len(t, n.Components, len(want))
	for k, v := range want {
		assert.InDelta(t, v, n.Components[k], 1e-12, k)
	}
	assert.InDelta(t, n.Components["reward/success"]+n.Components["reward/drift_penalty"], n.Total, 1e-12)
	assert.Equal(t, []int{2, 4, 6, 8}, n.Turns)

	clean := rec("t1", "s1", "ck", true, call{tool: "a"}, call{tool: "b"})
	n, err = cfg(rewards.Uniform).Named(clean)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"reward/success": 1, "reward/drift_penalty": 0, "reward/drift_penalty/uniform": 0}, n.Components)
	assert.Equal(t, 1.0, n.Total)
}
