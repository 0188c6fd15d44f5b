package env_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
)

const assertState = `{
  "drafts": [
    {"to": "a@x.example", "subject": "Q3 Follow-up", "tags": ["vip", "q3"], "meta": {"rev": 2, "channel": "email"}},
    {"to": "b@x.example", "subject": "Other", "priority": 1}
  ],
  "calendar": {"events": [{"id": 1, "title": "Standup"}], "owner": "me", "settings": {"tz": "UTC", "week_start": 1}},
  "outbox": [],
  "note": "Alice prefers Tuesday",
  "count": 2,
  "nothing": null,
  "flag": false,
  "1": "numeric key"
}`

func decodeState(t *testing.T, raw string) map[string]any {
	t.Helper()
	v, err := scenario.DecodeJSON([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func TestLookup(t *testing.T) {
	st := decodeState(t, assertState)
	tests := []struct {
		path string
		want any // JSON text of the value; "" when absent
	}{
		{"drafts.0.to", `"a@x.example"`},
		{"drafts.1.priority", `1`},
		{"drafts.0.tags.1", `"q3"`},
		{"drafts.0.meta.rev", `2`},
		{"calendar.events.0.title", `"Standup"`},
		{"calendar.events.0", `{"id":1,"title":"Standup"}`},
		{"outbox", `[]`},
		{"nothing", `null`},
		{"flag", `false`},
		{"1", `"numeric key"`}, // a numeric segment is a key in an object
		{"drafts.2", ""},
		{"drafts.-1", ""},
		{"drafts.x", ""},
		{"drafts.01", `{"priority":1,"subject":"Other","to":"b@x.example"}`}, // Atoi("01") = 1
		{"drafts.0.to.more", ""},
		{"nothing.x", ""},
		{"calendar.missing", ""},
		{"missing", ""},
		{"", ""},
		{"drafts.", ""},
	}
	for _, tt := range tests {
		got, ok := env.Lookup(st, tt.path)
		if tt.want == "" {
			if ok || got != nil {
				t.Errorf("Lookup(%q) = %v, %v; want absent", tt.path, got, ok)
			}
			continue
		}
		if !ok {
			t.Errorf("Lookup(%q) absent, want %s", tt.path, tt.want)
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != tt.want {
			t.Errorf("Lookup(%q) = %s, want %s", tt.path, b, tt.want)
		}
	}
	// The whole state is never returned for an empty path.
	if _, ok := env.Lookup(map[string]any{}, "x"); ok {
		t.Error("Lookup on an empty state found x")
	}
}

func TestSubset(t *testing.T) {
	tests := []struct {
		want, got string
		ok        bool
	}{
		{`{"a":1}`, `{"a":1.0,"b":2}`, true},
		{`{"a":{"b":1}}`, `{"a":{"c":3,"b":1e0}}`, true},
		{`{"a":{"b":1}}`, `{"a":{"b":2}}`, false},
		{`{}`, `{"a":1}`, true},
		{`{}`, `[]`, false},
		{`{"a":1}`, `[{"a":1}]`, false},
		{`[1,2]`, `[1,2]`, true},
		{`[1]`, `[1,2]`, false},  // arrays compare by equality, not subset
		{`[2,1]`, `[1,2]`, true}, // in any order
		{`{"to":["b@x","a@x"]}`, `{"to":["a@x","b@x"],"subject":"hi"}`, true},
		{`[{"a":1}]`, `[{"a":1,"b":2}]`, false},
		{`"x"`, `"x"`, true},
		{`"x"`, `"X"`, false},
		{`null`, `null`, true},
		{`null`, `false`, false},
		{`{"a":null}`, `{}`, false},
		{`{"a":null}`, `{"a":null}`, true},
	}
	for _, tt := range tests {
		w, _ := scenario.DecodeJSON([]byte(tt.want))
		g, _ := scenario.DecodeJSON([]byte(tt.got))
		if got := env.Subset(w, g); got != tt.ok {
			t.Errorf("Subset(%s, %s) = %v, want %v", tt.want, tt.got, got, tt.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	st := decodeState(t, assertState)
	contains := func(path, v string) scenario.StateAssertion {
		return scenario.StateAssertion{Path: path, Contains: json.RawMessage(v)}
	}
	notContains := func(path, v string) scenario.StateAssertion {
		return scenario.StateAssertion{Path: path, NotContains: json.RawMessage(v)}
	}
	equals := func(path, v string) scenario.StateAssertion {
		return scenario.StateAssertion{Path: path, Equals: json.RawMessage(v)}
	}
	tests := []struct {
		name string
		a    scenario.StateAssertion
		ok   bool
		msg  string // exact, or a prefix when it ends in ": "
	}{
		// contains on a list: an element includes the needle.
		{"list element subset", contains("drafts", `{"to": "a@x.example"}`), true, ""},
		{"list element nested subset", contains("drafts", `{"meta": {"channel": "email"}}`), true, ""},
		{"list element normalised number", contains("drafts", `{"priority": 1.0}`), true, ""},
		{"list no element", contains("drafts", `{"to": "c@x.example"}`), false, `drafts does not contain {"to": "c@x.example"}`},
		{"list keys from two elements", contains("drafts", `{"to": "a@x.example", "priority": 1}`), false, `drafts does not contain {"to": "a@x.example", "priority": 1}`},
		{"list of strings", contains("drafts.0.tags", `"vip"`), true, ""},
		{"list of strings is not substring", contains("drafts.0.tags", `"vi"`), false, `drafts.0.tags does not contain "vi"`},
		{"empty list", contains("outbox", `{}`), false, `outbox does not contain {}`},
		// contains on a string: case-insensitive substring.
		{"substring", contains("note", `"prefers"`), true, ""},
		{"substring case-insensitive", contains("drafts.0.subject", `"q3 FOLLOW"`), true, ""},
		{"substring absent", contains("note", `"Wednesday"`), false, `note does not contain "Wednesday"`},
		{"string with non-string needle", contains("note", `1`), false, `note does not contain 1`},
		// contains on an object: subset.
		{"object subset", contains("calendar", `{"owner": "me", "settings": {"tz": "UTC"}}`), true, ""},
		{"object subset mismatch", contains("calendar", `{"owner": "you"}`), false, `calendar does not contain {"owner": "you"}`},
		{"number equality", contains("count", `2.0`), true, ""},
		{"missing path", contains("archive", `{"to": "a@x.example"}`), false, `archive does not contain {"to": "a@x.example"}`},
		// not_contains.
		{"not_contains holds", notContains("drafts", `{"to": "c@x.example"}`), true, ""},
		{"not_contains fails", notContains("drafts", `{"to": "b@x.example"}`), false, `drafts contains {"to": "b@x.example"}`},
		{"not_contains empty list", notContains("outbox", `{"to": "a@x.example"}`), true, ""},
		{"not_contains missing path", notContains("archive", `{}`), true, ""},
		{"not_contains substring", notContains("note", `"TUESDAY"`), false, `note contains "TUESDAY"`},
		{"not_contains null on missing path", notContains("archive", `null`), true, ""},
		{"not_contains null on present null", notContains("nothing", `null`), false, `nothing contains null`},
		// equals.
		{"equals list", equals("outbox", `[]`), true, ""},
		{"equals number normalised", equals("count", `2e0`), true, ""},
		{"equals object key order", equals("calendar.settings", `{"week_start": 1.0, "tz": "UTC"}`), true, ""},
		{"equals object is not subset", equals("calendar.settings", `{"tz": "UTC"}`), false, `calendar.settings does not equal {"tz": "UTC"}`},
		{"equals list order matters", equals("drafts.0.tags", `["q3", "vip"]`), false, `drafts.0.tags does not equal ["q3", "vip"]`},
		{"equals string is case-sensitive", equals("drafts.1.subject", `"other"`), false, `drafts.1.subject does not equal "other"`},
		{"equals false", equals("flag", `false`), true, ""},
		{"equals present null", equals("nothing", `null`), true, ""},
		{"equals null on missing path", equals("archive.0", `null`), true, ""},
		{"equals non-null on missing path", equals("archive", `[]`), false, `archive does not equal []`},
		{"equals null on present value", equals("count", `null`), false, `count does not equal null`},
		// malformed assertions.
		{"bad equals", equals("count", `{`), false, "count: bad equals: "},
		{"bad contains", contains("count", `[1,`), false, "count: bad contains: "},
		{"bad not_contains", notContains("count", `x`), false, "count: bad not_contains: "},
		{"no condition", scenario.StateAssertion{Path: "count"}, false, "count: assertion has no condition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := env.Check(st, tt.a)
			if ok != tt.ok {
				t.Fatalf("Check = %v (%q), want %v", ok, msg, tt.ok)
			}
			if strings.HasSuffix(tt.msg, ": ") && tt.msg != "" {
				if !strings.HasPrefix(msg, tt.msg) || len(msg) == len(tt.msg) {
					t.Fatalf("message = %q, want prefix %q and a reason", msg, tt.msg)
				}
			} else if msg != tt.msg {
				t.Fatalf("message = %q, want %q", msg, tt.msg)
			}
		})
	}
	// Check never modifies the state.
	if !reflect.DeepEqual(st, decodeState(t, assertState)) {
		t.Fatal("Check modified the state")
	}
}

// The scenario's own success assertions, on states the tools produce.
func TestCheckScenarioAssertions(t *testing.T) {
	sp := compile(t)
	as := sp.S.Success.State
	if len(as) != 4 {
		t.Fatalf("%d assertions, want 4", len(as))
	}
	e := sp.New()
	var got []string
	for _, a := range as {
		if ok, msg := env.Check(e.State(), a); !ok {
			got = append(got, msg)
		}
	}
	want := []string{
		`drafts does not contain {"to": "alice.chen@northwind.example"}`,
		`drafts.0.priority does not equal 1`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("initial state failures = %q, want %q", got, want)
	}
	e.CallRaw("create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":1e0}`)
	for _, a := range as {
		if ok, msg := env.Check(e.State(), a); !ok {
			t.Errorf("after the draft: %s", msg)
		}
	}
	e.CallRaw("send_email", `{"to":"alice.chen@northwind.example"}`)
	got = nil
	for _, a := range as {
		if ok, msg := env.Check(e.State(), a); !ok {
			got = append(got, msg)
		}
	}
	want = []string{
		`outbox does not equal []`,
		`outbox contains {"to": "alice.chen@northwind.example"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after sending, failures = %q, want %q", got, want)
	}
}
