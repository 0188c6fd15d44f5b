package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

// Time formats are asserted with the readers windows use: a value a
// window can place passes, a local time (no offset) or any other text is
// a schema error that says what to write; other formats stay annotations.
func TestTimeFormatAsserted(t *testing.T) {
	as, err := CompileArgSchema(json.RawMessage(`{"type":"object","properties":{
		"at":{"type":"string","format":"date-time"},
		"day":{"type":"string","format":"date"},
		"mail":{"type":"string","format":"email"},
		"slots":{"type":"array","items":{"type":"string","format":"date-time"}},
		"span":{"type":"object","properties":{"start":{"type":"string","format":"date-time"}}},
		"maybe":{"anyOf":[{"type":"string","format":"date-time"},{"type":"null"}]},
		"n":{"type":"integer","format":"date-time"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		want       []string // substrings of the error; none: valid
	}{
		{"offset", `{"at":"2027-03-04T10:00:00+01:00"}`, nil},
		{"utc", `{"at":"2027-03-04T09:00:00Z"}`, nil},
		{"lenient instant forms", `{"at":"2027-03-04 10:00+01:00","slots":["2027-03-04t09:00:00z","2027-03-04T10:00:00+0100"]}`, nil},
		{"local time", `{"at":"2027-03-04T10:00:00"}`, []string{"at /at: 2027-03-04T10:00:00 has no UTC offset", "write it as 2027-03-04T10:00:00+01:00", "or in UTC ending in Z"}},
		{"local time, space, no seconds", `{"at":" 2027-03-04 10:00 "}`, []string{"2027-03-04 10:00 has no UTC offset"}},
		{"date for a date-time", `{"at":"2027-03-04"}`, []string{"2027-03-04 is a date, not a date-time", "2027-03-04T09:00:00+01:00"}},
		{"prose for a date-time", `{"at":"next Tuesday 10am"}`, []string{`"next Tuesday 10am" is not an RFC 3339 date-time`}},
		{"no such hour", `{"at":"2027-03-04T25:00:00Z"}`, []string{"is not an RFC 3339 date-time"}},
		{"date", `{"day":"2027-03-04"}`, nil},
		{"date with slashes", `{"day":"2027/03/04"}`, nil},
		{"instant for a date", `{"day":"2027-03-04T10:00:00+01:00"}`, nil}, // the day as written
		{"local time for a date", `{"day":"2027-03-04T10:00:00"}`, []string{"at /day: 2027-03-04T10:00:00 is not a date: write the day alone, 2027-03-04"}},
		{"prose for a date", `{"day":"4 March"}`, []string{`"4 March" is not a date: write it as YYYY-MM-DD`}},
		{"email stays an annotation", `{"mail":"Ana Silva <ana@x.example>"}`, nil},
		{"in items", `{"slots":["2027-03-04T09:00:00Z","2027-03-04T10:00"]}`, []string{"at /slots/1: 2027-03-04T10:00 has no UTC offset"}},
		{"nested", `{"span":{"start":"2027-03-04T10:00:00"}}`, []string{"at /span/start: 2027-03-04T10:00:00 has no UTC offset"}},
		{"in anyOf", `{"maybe":"2027-03-04T10:00:00"}`, []string{"at /maybe: 2027-03-04T10:00:00 has no UTC offset"}},
		{"anyOf null", `{"maybe":null}`, nil},
		{"a number is for type to judge", `{"n":3}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := ParseArgs([]byte(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			for _, validate := range []func(map[string]any) error{as.Validate, as.ValidateSubset} {
				err := validate(args)
				if len(tt.want) == 0 {
					if err != nil {
						t.Errorf("%s: %v, want valid", tt.args, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%s: valid, want an error mentioning %q", tt.args, tt.want)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not mention %q", tt.args, err, w)
					}
				}
			}
		})
	}
}

// Every value the time formats accept is one a window can place, and the
// other way round.
func TestTimeFormatAgreesWithWindows(t *testing.T) {
	cc := &CompiledConstraint{}
	for _, s := range []string{
		"2027-03-04T10:00:00+01:00", "2027-03-04T10:00Z", "2027-03-04 10:00:00.5-05:00", "2027-03-04T10:00:00",
		"2027-03-04", "2027/03/04", "2027-13-04", "2027-03-04T10:00:00+0100", "noon", "",
	} {
		_, _, placed := cc.span(s)
		dt := TimeFormatProblem("date-time", s) == ""
		d := TimeFormatProblem("date", s) == ""
		if (dt || d) != placed {
			t.Errorf("%q: date-time ok %v, date ok %v, but a window places it: %v", s, dt, d, placed)
		}
	}
}
