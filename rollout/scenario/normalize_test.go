package scenario_test

import (
	"encoding/json"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// TestNormalizers: for each normaliser, surface forms that must compare
// equal and forms that must not.
func TestNormalizers(t *testing.T) {
	tests := []struct {
		norm      string
		a, b      string
		wantEqual bool
	}{
		{scenario.NormInstant, "2026-11-23T14:00:00+01:00", "2026-11-23T13:00:00Z", true},
		{scenario.NormInstant, "2026-11-23T14:00:00+01:00", "2026-11-23 13:00:00z", true},
		{scenario.NormInstant, "2026-11-23T14:00+01:00", "2026-11-23T08:00:00-05:00", true},
		{scenario.NormInstant, "2026-11-23T14:00:00.000+01:00", "2026-11-23T14:00:00+0100", true},
		{"date-time", "2026-11-23T14:00:00+01:00", "2026-11-23T13:00:00Z", true},
		{scenario.NormInstant, "2026-11-23T14:00:00+01:00", "2026-11-23T14:00:00Z", false},
		{scenario.NormInstant, "2026-11-23T14:00:00", "2026-11-23T14:00:00Z", false}, // no offset: no instant
		{scenario.NormDate, "2026-11-23", "2026/11/23", true},
		{scenario.NormDate, "2026-11-23", " 2026.11.23 ", true},
		{scenario.NormDate, "2026-11-23", "2026-11-23T09:00:00+01:00", true},
		{scenario.NormDate, "2026-11-23", "2026-11-24", false},
		{scenario.NormEmail, "Alice.Chen@Northwind.example", "alice.chen@northwind.example ", true},
		{scenario.NormEmail, "alice.chen@northwind.example", "alice.chen@northwind.example.org", false},
		{scenario.NormEmail, "Alice Chen <Alice.Chen@Northwind.example>", "alice.chen@northwind.example", true}, // a display name reaches no one else
		{scenario.NormEmail, `"Chen, Alice" <alice.chen@northwind.example>`, "alice.chen@northwind.example", true},
		{scenario.NormEmail, "mailto:alice.chen@northwind.example", "alice.chen@northwind.example", true},
		{scenario.NormEmail, "Alice Chen <alice.chen@northwind.example>", "Alice Chen <bob@northwind.example>", false},
		{scenario.NormEmail, "<not an address>", "not an address", false},
		{scenario.NormPhone, "+44 20 7946 0958", "+442079460958", true},
		{scenario.NormPhone, "0044 (20) 7946-0958", "+44.20.7946.0958", true},
		{scenario.NormPhone, "+44 20 7946 0958", "+44 20 7946 0959", false},
		{scenario.NormPhone, "call me", "+442079460958", false},
		{scenario.NormPhone, "+44 (0)20 7946 0958", "+442079460958", true}, // the trunk 0 in brackets is not dialled
		{scenario.NormPhone, "0044 (0)20 7946 0958", "+44 20 7946 0958", true},
		{scenario.NormPhone, "+44 (0 )20 7946 0958", "+442079460958", true}, // spaces inside the brackets
		{scenario.NormPhone, "+44 ( 0 ) 20 7946 0958", "+442079460958", true},
		{scenario.NormPhone, "+44 (\u00a00) 20 7946 0958", "+442079460958", true},
		{scenario.NormPhone, "(+44) ( 0 )20 7946 0958", "+442079460958", true},
		{scenario.NormPhone, "+44 (00) 20 7946 0958", "+442079460958", false}, // not a trunk zero
		{scenario.NormPhone, "020 ( 0 ) 7946 0958", "+442079460958", false},   // no country code: kept
		{scenario.NormPhone, "(+1) 614-555-0142", "+1 614 555 0142", true},
		{scenario.NormPhone, "(+44) 20 7946 0958", "+442079460958", true},
		{scenario.NormPhone, "tel:+1-614-555-0142", "+16145550142", true},
		{scenario.NormPhone, "020 7946 0958", "+44 20 7946 0958", false}, // no country code: no guess
		{scenario.NormPhone, "1+614-555-0142", "+16145550142", false},    // a plus inside is no phone number
		{scenario.NormIBAN, "de89 3704 0044 0532 0130 00", "DE89370400440532013000", true},
		{scenario.NormIBAN, "DE89370400440532013000", "DE89370400440532013001", false},
		{scenario.NormCard, "4111 1111 1111 1111", "4111-1111-1111-1111", true},
		{scenario.NormCard, "4111 1111 1111 1111", "4111 1111 1111 1112", false},
		{scenario.NormCasefold, "Q3  Vendor\nProposal", "q3 vendor proposal", true},
		{scenario.NormCasefold, "Q3 vendor proposal", "Q4 vendor proposal", false},
		{scenario.NormTrim, "  inbox ", "inbox", true},
		{scenario.NormTrim, "Inbox", "inbox", false},
		{"", " inbox", "inbox ", true}, // every string is trimmed
	}
	for _, tt := range tests {
		a, b := scenario.Normalize(tt.norm, tt.a), scenario.Normalize(tt.norm, tt.b)
		if (a == b) != tt.wantEqual {
			t.Errorf("%s: %q -> %q, %q -> %q: equal = %v, want %v", tt.norm, tt.a, a, tt.b, b, a == b, tt.wantEqual)
		}
	}
}

// TestNormalizersFromSchema: normalisers come from "format" or
// "x-normalize" (which wins), through nested properties and items; an
// unknown x-normalize name is an error naming its path.
func TestNormalizersFromSchema(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{
		"when": {"type":"string","format":"date-time"},
		"day": {"type":"string","format":"date","x-normalize":"trim"},
		"to": {"type":"array","items":{"type":"string","format":"email"}},
		"contact": {"type":"object","properties":{"phone":{"type":"string","x-normalize":"phone"}}},
		"url": {"type":"string","format":"uri"}}}`)
	n, err := scenario.CompileNormalizers(params)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"when": "instant", "day": "trim", "to": "email", "contact.phone": "phone", "url": ""} {
		if got := n.For(path); got != want {
			t.Errorf("For(%q) = %q, want %q", path, got, want)
		}
	}
	args := n.Args(map[string]any{"when": "2026-11-23T14:00:00+01:00", "to": []any{"A@B.example"}, "contact": map[string]any{"phone": "+1 415 555 0100"}, "day": " 2026/11/23 "})
	want := map[string]any{"when": "2026-11-23T13:00:00Z", "to": []any{"a@b.example"}, "contact": map[string]any{"phone": "+14155550100"}, "day": "2026/11/23"}
	if !scenario.Equal(args, want) {
		t.Errorf("Args = %v, want %v", args, want)
	}
	m, err := n.Matcher(map[string]json.RawMessage{"when": json.RawMessage(`"2026-11-23T08:00:00-05:00"`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Match(args) {
		t.Error("a literal in another offset does not match the normalised call")
	}
	_, err = scenario.CompileNormalizers(json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","x-normalize":"phonetic"}}}`))
	if err == nil || err.Error() != `parameters.properties.x.x-normalize: unknown normaliser "phonetic" (want one of instant, date, email, phone, iban, card, casefold, trim)` {
		t.Errorf("unknown normaliser: %v", err)
	}
}

func TestRenderResources(t *testing.T) {
	args := map[string]any{"to": []any{"a@x", "b@x"}, "cc": []any{}, "folder": "inbox", "n": json.Number("7.0")}
	cases := map[string][]string{
		"contact:{to}":       {"contact:a@x", "contact:b@x"},
		"contact:{cc}":       nil,
		"to":                 {"a@x", "b@x"},
		"mail:{folder}/{to}": {"mail:inbox/a@x", "mail:inbox/b@x"},
		"item:{n}":           {"item:7"},
		"contact:{bcc}":      nil,
	}
	for tmpl, want := range cases {
		got := scenario.RenderResources(tmpl, args)
		if len(got) != len(want) {
			t.Errorf("%s: %q, want %q", tmpl, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %q, want %q", tmpl, got, want)
			}
		}
	}
}

// TestNormalizersEdgeSchemas: parameters that json.Unmarshal refused or
// read oddly give what they gave when CompileNormalizers used it.
func TestNormalizersEdgeSchemas(t *testing.T) {
	for _, c := range []struct {
		name, params string
		email        string // For("to")
		err          string
	}{
		{"number out of float range", `{"properties":{"to":{"format":"email"},"n":{"maximum":1e400}}}`, "", ""},
		{"number in range", `{"properties":{"to":{"format":"email"},"n":{"maximum":1e300}}}`, "email", ""},
		{"not an object", `[{"properties":{"to":{"format":"email"}}}]`, "", ""},
		{"null", `null`, "", ""},
		{"invalid JSON", `{"properties":`, "", ""},
		{"duplicate keys: the last", `{"properties":{"to":{"format":"date"},"to":{"format":"email"}}}`, "email", ""},
		{"numeric x-normalize as a float", `{"properties":{"x":{"x-normalize":1.50}}}`, "", `parameters.properties.x.x-normalize: unknown normaliser "1.5" (want one of instant, date, email, phone, iban, card, casefold, trim)`},
		{"object x-normalize", `{"properties":{"x":{"x-normalize":{"n":1e2}}}}`, "", `parameters.properties.x.x-normalize: unknown normaliser "map[n:100]" (want one of instant, date, email, phone, iban, card, casefold, trim)`},
	} {
		n, err := scenario.CompileNormalizers(json.RawMessage(c.params))
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != c.err || n.For("to") != c.email {
			t.Errorf("%s: For(to) %q, error %q; want %q, %q", c.name, n.For("to"), gotErr, c.email, c.err)
		}
	}
}
