package rewards_test

import (
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTableGroupsByPrompt: two runs of one scenario id whose text differs
// are two GRPO groups, never one; a trajectory with no completion gets no
// row and is no group member.
func TestTableGroupsByPrompt(t *testing.T) {
	edited := func(r *trajectory.Record) *trajectory.Record {
		for i := range r.Messages {
			if r.Messages[i].Role == trajectory.RoleUser {
				r.Messages[i].Content += " (edited instruction)"
			}
		}
		return r
	}
	noCompletion := rec("n1", "s1", "A", false)
	var keep []trajectory.Message
	for _, m := range noCompletion.Messages {
		keep = append(keep, m)
		if m.Role == trajectory.RoleUser {
			break
		}
	}
	noCompletion.Messages = keep
	a := writeRun(t, t.TempDir(),
		rec("a1", "s1", "A", true, call{tool: "a"}),
		rec("a2", "s1", "A", false, call{tool: "x", drift: true}),
		noCompletion,
	)
	b := writeRun(t, t.TempDir(),
		edited(rec("b1", "s1", "A", true, call{tool: "a"})),
		edited(rec("b2", "s1", "A", true, call{tool: "a"})),
	)
	rows, sum := table(t, cfg(rewards.Uniform), a, b)
	require.Len(t, rows, 4, "the row without a completion is left out")
	assert.Equal(t, 1, sum.NoCompletion)
	assert.Equal(t, 1, sum.SplitPrompts)
	byGroup := map[string][]string{}
	for _, r := range rows {
		assert.True(t, strings.HasPrefix(r.GroupID, "s1@A#"), r.GroupID)
		byGroup[r.GroupID] = append(byGroup[r.GroupID], r.TrajID)
	}
	require.Len(t, byGroup, 2, "one group per prompt")
	for _, ids := range byGroup {
		assert.True(t, (ids[0][0] == 'a') == (ids[1][0] == 'a'), "a group never mixes the two prompts: %v", ids)
	}
	// Within the unedited prompt's group the advantages are of its own members.
	for _, r := range rows {
		if r.TrajID == "b1" || r.TrajID == "b2" {
			assert.Zero(t, r.Advantage, "equal rewards within the edited prompt's group")
		}
	}
}
