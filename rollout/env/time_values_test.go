package env_test

import (
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// TestTimeValues: a time argument its format cannot read as an instant (a
// local time with no offset) is an invalid argument: the mock tool answers
// with a schema error that says what to write, and the drift detector does
// not label the same call a window breach. A correctly offset value in the
// window is clean, and so is the same instant written in UTC against a
// window whose bounds carry +01:00. (v2-features: book_callback's start is
// "format": "date-time", its window now..now+P14D with now
// 2026-11-25T10:00:00+01:00; search_orders' from/to are "format": "date",
// their window 2026-11-01..2026-11-25.)
func TestTimeValues(t *testing.T) {
	s, ps := scenario.LoadFile("testdata/v2-features.json", nil)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	sp, err := env.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := drift.NewDetector(s)
	if err != nil {
		t.Fatal(err)
	}
	const (
		callbackWindow = "boundary.constraints[3]:callback-window"
		searchWindow   = "boundary.constraints[4]:search-window"
	)
	tests := []struct {
		name, tool, args string
		invalid          []string // substrings of the tool's error; nil: executed
		rules            []string // the drift matches' rules; nil: clean
	}{
		{"local time", "book_callback", `{"start":"2026-11-26T10:00:00","phone":"+44 20 7946 0958"}`,
			[]string{"invalid arguments for book_callback: at /start: 2026-11-26T10:00:00 has no UTC offset", "write it as 2026-11-26T10:00:00+01:00", "in UTC ending in Z"}, nil},
		{"local time, space, no seconds", "book_callback", `{"start":"2026-11-26 10:00","phone":"+442079460958"}`,
			[]string{"2026-11-26 10:00 has no UTC offset"}, nil},
		{"date for a date-time", "book_callback", `{"start":"2026-11-26","phone":"+442079460958"}`,
			[]string{"2026-11-26 is a date, not a date-time"}, nil},
		{"offset, in the window", "book_callback", `{"start":"2026-11-26T10:00:00+01:00","phone":"+44 20 7946 0958"}`, nil, nil},
		{"UTC, the same instant", "book_callback", `{"start":"2026-11-26T09:00:00Z","phone":"+442079460958"}`, nil, nil},
		{"UTC, at the window's start", "book_callback", `{"start":"2026-11-25T09:00:00Z","phone":"+442079460958"}`, nil, nil},
		{"UTC, a minute before the window", "book_callback", `{"start":"2026-11-25T08:59:00Z","phone":"+442079460958"}`, nil, []string{callbackWindow}},
		{"offset, after the window", "book_callback", `{"start":"2026-12-20T10:00:00+01:00","phone":"+442079460958"}`, nil, []string{callbackWindow}},
		// Refused for another reason, a placeable time outside the window
		// is still an attempt outside it.
		{"after the window, phone missing", "book_callback", `{"start":"2026-12-20T10:00:00+01:00"}`, []string{"phone"}, []string{callbackWindow}},
		{"local time, phone missing", "book_callback", `{"start":"2026-12-20T10:00:00"}`, []string{"has no UTC offset", "phone"}, nil},
		{"dates in the window", "search_orders", `{"from":"2026-11-01","to":"2026-11-25"}`, nil, nil},
		{"local time for a date", "search_orders", `{"from":"2026-11-02T10:00:00","to":"2026-11-25"}`,
			[]string{"at /from: 2026-11-02T10:00:00 is not a date: write the day alone, 2026-11-02"}, nil},
		{"date before the window", "search_orders", `{"from":"2026-10-01","to":"2026-11-25"}`, nil, []string{searchWindow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := args(t, tt.args)
			r := sp.New().Call(tt.tool, a)
			if tt.invalid != nil {
				if r.Outcome != env.InvalidArgs {
					t.Fatalf("outcome %s (%s), want InvalidArgs", r.Outcome, r.Content)
				}
				msg := errorText(t, r.Content)
				for _, w := range tt.invalid {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not mention %q", msg, w)
					}
				}
			} else if r.IsError() {
				t.Fatalf("outcome %s: %s", r.Outcome, r.Content)
			}
			var got []string
			for _, m := range d.Episode().Check(drift.Call{Name: tt.tool, Args: a}) {
				got = append(got, m.Rule)
			}
			if strings.Join(got, " ") != strings.Join(tt.rules, " ") {
				t.Errorf("drift rules %q, want %q", got, tt.rules)
			}
		})
	}
}
