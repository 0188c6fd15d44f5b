package dataset_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Exports leave reasoning out unless asked.
func TestReasoningLeftOutOfExportsUnlessAsked(t *testing.T) {
	m := trajectory.Message{Role: trajectory.RoleAssistant, Content: "Done.", Reasoning: "private chain"}
	assert.JSONEq(t, `{"role":"assistant","content":"Done."}`, string(dataset.MessageJSON(m)))
	assert.JSONEq(t, `{"role":"assistant","content":"Done.","reasoning_content":"private chain"}`,
		string(dataset.MessagesWith([]trajectory.Message{m}, dataset.RenderOptions{Reasoning: true})[0]))
	// A reasoning-only turn exported without reasoning still has a content key.
	only := trajectory.Message{Role: trajectory.RoleAssistant, Reasoning: "r"}
	assert.JSONEq(t, `{"role":"assistant","content":""}`, string(dataset.MessageJSON(only)))
}
