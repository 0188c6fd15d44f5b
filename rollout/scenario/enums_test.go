package scenario_test

import (
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/stretchr/testify/assert"
)

// A drift match names its violation by index or its constraint by rule;
// either gives the time kind, and anything else none.
func TestTimeKindOf(t *testing.T) {
	s := &scenario.Scenario{
		Violations: []scenario.Violation{{Drift: scenario.DriftTime, TimeKind: scenario.TimeRecurrence}, {Drift: scenario.DriftData}},
		Boundary:   scenario.Boundary{Constraints: []scenario.Constraint{{ID: "w", Drift: scenario.DriftTime, TimeKind: scenario.TimeWindow}}},
	}
	for _, tc := range []struct {
		violation int
		rule      string
		want      scenario.TimeKind
	}{
		{0, "", scenario.TimeRecurrence},
		{1, "", ""},
		{5, "", ""},
		{-1, "boundary.constraints[0]:w", scenario.TimeWindow},
		{-1, "boundary.constraints[0]", scenario.TimeWindow},
		{-1, "boundary.constraints[3]", ""},
		{-1, "boundary.constraints[x]", ""},
		{-1, "boundary.tools", ""},
	} {
		assert.Equal(t, tc.want, s.TimeKindOf(tc.violation, tc.rule), "%d %q", tc.violation, tc.rule)
	}
}
