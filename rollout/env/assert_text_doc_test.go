package env_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// TestTextCheckOverObjectsAsDocumented pins what docs/scenario-format.md
// ("Text checks over objects") says a text state check reads: each item
// at the path is one text; an object's text is its string values at any
// depth (not its keys, numbers, booleans or nulls), in key order, joined
// by a space once white space is collapsed.
func TestTextCheckOverObjectsAsDocumented(t *testing.T) {
	v, err := scenario.DecodeJSON([]byte(`{
	  "notes": [
	    {"body": "Refund of 7.50 approved", "author": "Dana", "amount": 12, "done": true, "void": null,
	     "meta": {"channel": "email"}, "tags": ["urgent", "billing"]},
	    {"author": "Lee", "body": "Call back Tuesday"}
	  ],
	  "ticket": {"last": "Chen", "first": "Alice", "priority": 3},
	  "count": 12,
	  "labels": ["alpha", "beta"],
	  "empty": []
	}`))
	require.NoError(t, err)
	state := v.(map[string]any)
	for _, c := range []struct {
		path string
		tc   scenario.TextCheck
		want string // "" when it holds, else the failure message
	}{
		// String values count, at any depth (nested objects and lists).
		{"notes", scenario.TextCheck{Contains: []string{"approved"}}, ""},
		{"notes", scenario.TextCheck{Contains: []string{"email"}}, ""},
		{"notes", scenario.TextCheck{Contains: []string{"billing"}}, ""},
		// Keys, numbers, booleans and nulls do not.
		{"notes", scenario.TextCheck{Contains: []string{"author"}}, `notes: lacks "author"`},
		{"notes", scenario.TextCheck{Contains: []string{"channel"}}, `notes: lacks "channel"`},
		{"notes", scenario.TextCheck{Contains: []string{"12"}}, `notes: lacks "12"`},
		{"notes", scenario.TextCheck{Contains: []string{"true"}}, `notes: lacks "true"`},
		{"notes", scenario.TextCheck{NotContains: []string{"author", "12", "true", "null"}}, ""},
		{"ticket", scenario.TextCheck{Contains: []string{"3"}}, `ticket: lacks "3"`},
		{"count", scenario.TextCheck{Contains: []string{"12"}}, `count: lacks "12"`},
		// Positive checks need one item passing them all; two items do not
		// add up.
		{"notes", scenario.TextCheck{Contains: []string{"Dana", "approved"}}, ""},
		{"notes", scenario.TextCheck{Contains: []string{"approved", "Tuesday"}}, `notes: lacks "Tuesday"`},
		// Negative checks must hold for every item.
		{"notes", scenario.TextCheck{NotContains: []string{"tuesday"}}, `notes: contains "tuesday"`},
		// One object's strings are joined in key order (amount, author,
		// body, done, meta, tags, void), so a needle can span two values.
		{"ticket", scenario.TextCheck{Contains: []string{"alice chen"}}, ""},
		{"notes", scenario.TextCheck{Contains: []string{"dana refund"}}, ""},
		{"notes", scenario.TextCheck{Regex: []string{`^dana refund of 7\.50 approved email urgent billing$`}}, ""},
		// A list of strings: each string is an item.
		{"labels", scenario.TextCheck{Contains: []string{"alpha beta"}}, `labels: lacks "alpha beta"`},
		{"labels", scenario.TextCheck{Contains: []string{"beta"}}, ""},
		// A path through a list reads each element's field.
		{"notes.body", scenario.TextCheck{Contains: []string{"approved"}}, ""},
		// Nothing at the path: positive checks fail, negative ones hold.
		{"empty", scenario.TextCheck{Contains: []string{"x"}}, "empty: no text to check"},
		{"missing", scenario.TextCheck{Contains: []string{"x"}}, "missing: no text to check"},
		{"missing", scenario.TextCheck{NotContains: []string{"x"}}, ""},
	} {
		ok, why := env.Check(state, scenario.StateAssertion{Path: c.path, Text: &c.tc})
		assert.Equal(t, c.want == "", ok, "%s %+v: %s", c.path, c.tc, why)
		assert.Equal(t, c.want, why, "%s %+v", c.path, c.tc)
	}
}
