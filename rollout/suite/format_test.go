package suite_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// assertFormat checks that s is in format v3: facts, order and checked
// deliverables (labels v3), so its battery runs the v3 probe classes and
// the filler and restated-instruction baselines.
func assertFormat(t *testing.T, s *scenario.Scenario) {
	t.Helper()
	assert.Equal(t, 3, s.Version(), "the built-in suite is format v3")
}
