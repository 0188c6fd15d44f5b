package env

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// A moved meeting must keep its length: the duration assertion reads both
// ends of each selected item's interval.
func TestDurationAssertion(t *testing.T) {
	state := func(items string) map[string]any {
		v, err := scenario.DecodeJSON([]byte(`{"events":` + items + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return v.(map[string]any)
	}
	check := func(d scenario.DurationCheck, where string) scenario.StateAssertion {
		a := scenario.StateAssertion{Path: "events", Duration: &d}
		if where != "" {
			a.Where = json.RawMessage(where)
		}
		return a
	}
	min45 := scenario.DurationCheck{Start: "start", End: "end", Equals: "PT45M"}
	tests := []struct {
		name, items, where string
		d                  scenario.DurationCheck
		pass               bool
		why                string
	}{
		{"the length kept", `[{"start":"2027-03-04T10:00:00+01:00","end":"2027-03-04T10:45:00+01:00"}]`, "", min45, true, ""},
		{"the end in another offset", `[{"start":"2027-03-04T10:00:00+01:00","end":"2027-03-04T09:45:00Z"}]`, "", min45, true, ""},
		{"moved with the wrong length", `[{"start":"2027-03-04T10:00:00+01:00","end":"2027-03-04T11:00:00+01:00"}]`, "", min45, false, "lasts 1h0m0s, want 45m0s"},
		{"the end left out", `[{"start":"2027-03-04T10:00:00+01:00"}]`, "", min45, false, "has no end"},
		{"a local time names no instant", `[{"start":"2027-03-04T10:00:00","end":"2027-03-04T10:45:00+01:00"}]`, "", min45, false, "no instant with an offset"},
		{"no item", `[]`, "", min45, false, "no item"},
		{"where narrows", `[{"id":"a","start":"2027-03-04T10:00:00Z","end":"2027-03-04T12:00:00Z"},{"id":"b","start":"2027-03-04T10:00:00Z","end":"2027-03-04T10:45:00Z"}]`, `{"id":"b"}`, min45, true, ""},
		{"every selected item", `[{"id":"a","start":"2027-03-04T10:00:00Z","end":"2027-03-04T12:00:00Z"},{"id":"b","start":"2027-03-04T10:00:00Z","end":"2027-03-04T10:45:00Z"}]`, "", min45, false, "want 45m0s"},
		{"dates: a week at most", `[{"start":"2027-03-01","end":"2027-03-08"}]`, "", scenario.DurationCheck{Start: "start", End: "end", AtMost: "P1W"}, true, ""},
		{"dates: over a week", `[{"start":"2027-03-01","end":"2027-03-09"}]`, "", scenario.DurationCheck{Start: "start", End: "end", AtMost: "P1W"}, false, "want at most"},
		{"at least", `[{"start":"2027-03-04T10:00:00Z","end":"2027-03-04T10:10:00Z"}]`, "", scenario.DurationCheck{Start: "start", End: "end", AtLeast: "PT15M"}, false, "want at least 15m0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := Check(state(tc.items), check(tc.d, tc.where))
			if ok != tc.pass || !strings.Contains(why, tc.why) {
				t.Fatalf("Check = %v %q, want %v with %q", ok, why, tc.pass, tc.why)
			}
		})
	}
}

func TestDurationBounds(t *testing.T) {
	for _, c := range []struct {
		d   scenario.DurationCheck
		err string
	}{
		{scenario.DurationCheck{Start: "s", End: "e", Equals: "P1M"}, "no fixed length"},
		{scenario.DurationCheck{Start: "s", End: "e"}, "needs equals, at_least or at_most"},
		{scenario.DurationCheck{Start: "s", End: "e", Equals: "PT1H", AtMost: "PT2H"}, "cannot be combined"},
		{scenario.DurationCheck{Start: "s", End: "e", AtLeast: "PT2H", AtMost: "PT1H"}, "no interval can pass"},
		{scenario.DurationCheck{Start: "s", End: "e", AtLeast: "an hour"}, "not an ISO 8601 duration"},
	} {
		if _, err := c.d.Bounds(); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%+v: error %v, want %q", c.d, err, c.err)
		}
	}
}
