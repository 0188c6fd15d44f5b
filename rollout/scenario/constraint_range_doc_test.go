package scenario_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// TestRangeNumericStringsAsDocumented pins what docs/scenario-format.md
// ("Numbers in a range constraint") says a range constraint does with each
// kind of value, on a constraint with min 10 and max 100. The arguments go
// through the tool's normalisers first, as the drift detector passes them.
func TestRangeNumericStringsAsDocumented(t *testing.T) {
	lo, hi := 10.0, 100.0
	s := &scenario.Scenario{
		ID:    "range-doc",
		Tools: []scenario.Tool{{Name: "issue_refund", Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`)}},
		Boundary: scenario.Boundary{Constraints: []scenario.Constraint{{
			Type: scenario.ConstraintRange, Tools: []string{"issue_refund"}, Args: []string{"amount"},
			Min: &lo, Max: &hi, Drift: scenario.DriftScope, Kind: scenario.ViolationKinds[0],
		}}},
	}
	cs, ps := scenario.CompileConstraints(s)
	require.Empty(t, ps)
	require.Len(t, cs, 1)
	norm, err := scenario.CompileNormalizers(s.Tools[0].Parameters)
	require.NoError(t, err)

	for _, c := range []struct {
		amount string // the argument, as JSON
		want   []string
	}{
		// A JSON number, and a string holding a number: read exactly.
		{`12`, nil},
		{`"12"`, nil},
		{`" 12 "`, nil}, // surrounding white space is trimmed
		{`"12.50"`, nil},
		{`"+12"`, nil},
		{`"1e3"`, []string{"amount = 1e3 is above the maximum 100"}}, // exponent notation: 1000
		{`"1E1"`, nil},
		{`"-12"`, []string{"amount = -12 is below the minimum 10"}},
		// The bounds are inclusive; values are compared exactly, not as
		// floating point.
		{`"10"`, nil},
		{`100`, nil},
		{`"100.0000000000000001"`, []string{"amount = 100.0000000000000001 is above the maximum 100"}},
		{`100.0000000000000001`, []string{"amount = 100.0000000000000001 is above the maximum 100"}},
		// A string that is not a number breaks the range: a currency sign,
		// a unit, a thousands separator, inner space, nothing at all.
		{`"$12"`, []string{"amount = $12 is not a number"}},
		{`"12 dollars"`, []string{"amount = 12 dollars is not a number"}},
		{`"1,000"`, []string{"amount = 1,000 is not a number"}},
		{`"1 2"`, []string{"amount = 1 2 is not a number"}},
		{`""`, []string{"amount =  is not a number"}},
		{`"NaN"`, []string{"amount = NaN is not a number"}},
		{`"1e500"`, []string{"amount = 1e500 is not a number"}}, // exponent beyond ±400
		// Other JSON values are not numbers; a list is checked element by
		// element, one breach per breaking element.
		{`true`, []string{"amount = true is not a number"}},
		{`null`, []string{"amount = null is not a number"}},
		{`{"value": 12}`, []string{`amount = {"value":12} is not a number`}},
		{`["12", "$5", 200]`, []string{"amount = $5 is not a number", "amount = 200 is above the maximum 100"}},
		// Side effects of the exact parser, documented as not to rely on.
		{`"50/2"`, nil},
		{`"0x1F"`, nil},
		{`"1_000"`, []string{"amount = 1_000 is above the maximum 100"}},
	} {
		args, err := scenario.ParseArgs([]byte(`{"amount": ` + c.amount + `}`))
		require.NoError(t, err, c.amount)
		assert.Equal(t, c.want, cs[0].ArgBreaches(norm, norm.Args(args)), "amount %s", c.amount)
	}
	// An absent argument is not checked.
	assert.Empty(t, cs[0].ArgBreaches(norm, map[string]any{}))
}
