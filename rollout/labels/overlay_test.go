package labels_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestOverlayApply(t *testing.T) {
	dir := t.TempDir()
	yes, no := true, false
	added := drift.Match{Call: 1, Turn: 3, Tool: "send", Drift: "data", Rule: "llm.disclosure", Fact: "dx", Violation: -1}
	ls := []labels.Label{
		{TrajID: "succ-only", Success: false},
		{TrajID: "adds", Success: true, Drift: &yes, Matches: []drift.Match{added}},
		{TrajID: "clears", Success: true, Drift: &no},
		{TrajID: "no-verdict", Error: "unparseable verdict"},
	}
	_, err := labels.Write(dir, labels.Manifest{Name: "disc"}, ls, false)
	require.NoError(t, err)

	nilOv, err := labels.OpenOverlay([]string{dir}, labels.Record)
	require.NoError(t, err)
	assert.Nil(t, nilOv)
	keep, err := nilOv.Apply(&trajectory.Record{TrajID: "x"})
	assert.True(t, keep)
	assert.NoError(t, err)

	ov, err := labels.OpenOverlay([]string{dir}, "disc")
	require.NoError(t, err)
	answer := drift.Match{Call: drift.AnswerCall, Turn: 5, Drift: "data", Violation: -1}
	first := drift.Match{Call: 0, Turn: 1, Tool: "read", Drift: "tool", Violation: -1}
	rec := func(id string) *trajectory.Record {
		return &trajectory.Record{TrajID: id, Success: true, Drift: true, Matches: []drift.Match{first, answer}, DriftSteps: []int{0}}
	}

	r := rec("succ-only")
	keep, err = ov.Apply(r)
	require.NoError(t, err)
	assert.True(t, keep)
	assert.False(t, r.Success)
	assert.True(t, r.Drift, "a success-only labeling keeps the record's drift")
	assert.Len(t, r.Matches, 2)

	r = rec("adds")
	keep, err = ov.Apply(r)
	require.NoError(t, err)
	assert.True(t, keep)
	require.Len(t, r.Matches, 3)
	assert.Equal(t, []int{0, 1, drift.AnswerCall}, []int{r.Matches[0].Call, r.Matches[1].Call, r.Matches[2].Call}, "by call, the answer last")
	assert.True(t, r.Matches[1].Counted)
	assert.Equal(t, []int{0, 1}, r.DriftSteps)

	r = rec("clears")
	keep, err = ov.Apply(r)
	require.NoError(t, err)
	assert.True(t, keep)
	assert.False(t, r.Drift)
	assert.Empty(t, r.Matches)
	assert.Equal(t, []int{}, r.DriftSteps)

	keep, err = ov.Apply(rec("no-verdict"))
	require.NoError(t, err)
	assert.False(t, keep)
	assert.Equal(t, 1, ov.LeftOut())
	assert.Contains(t, ov.Warning(), "1 trajectories without a verdict")

	_, err = ov.Apply(rec("unknown"))
	assert.ErrorContains(t, err, `labeling "disc" has no label for trajectory unknown`)

	_, err = labels.OpenOverlay([]string{dir, t.TempDir()}, "disc")
	assert.ErrorContains(t, err, `no labeling "disc"`)
}
