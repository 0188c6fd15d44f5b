package trajectory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestStatusesScoredAndParsed(t *testing.T) {
	scored := map[trajectory.Status]bool{
		trajectory.StatusCompleted: true, trajectory.StatusMaxSteps: true, trajectory.StatusContextLength: true,
		trajectory.StatusModelError: true, trajectory.StatusTruncated: true, trajectory.StatusUnparsedToolCall: true,
		trajectory.StatusDroppedToolCall: true, trajectory.StatusEmptyAnswer: true, trajectory.StatusRefused: true,
		trajectory.StatusInfraError: false, trajectory.StatusContextTruncated: false,
	}
	require.Len(t, trajectory.Statuses, len(scored), "every status is decided")
	for _, s := range trajectory.Statuses {
		want, ok := scored[s]
		require.True(t, ok, s)
		assert.Equal(t, want, s.Scored(), s)
		assert.True(t, s.Valid())
		p, err := trajectory.ParseStatus(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, p)
	}
	_, err := trajectory.ParseStatus("done")
	assert.ErrorContains(t, err, "known: completed")
	assert.False(t, trajectory.Status("done").Valid())
	assert.True(t, trajectory.StatusCompleted.FinalAnswer())
	assert.False(t, trajectory.StatusTruncated.FinalAnswer())
}

func TestModelErrorWarning(t *testing.T) {
	assert.Empty(t, trajectory.ModelErrorWarning(1, 10), "10% is not high")
	assert.Empty(t, trajectory.ModelErrorWarning(0, 0))
	w := trajectory.ModelErrorWarning(3, 10)
	assert.Contains(t, w, "3 of 10")
	assert.Contains(t, w, "endpoint check")
}
