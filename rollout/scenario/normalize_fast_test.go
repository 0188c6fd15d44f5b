package scenario

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// parseInstantSlow is ParseInstant without the shape guard.
func parseInstantSlow(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 10 && (s[10] == 't' || s[10] == ' ') {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	for _, l := range instantLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

var instantCases = []string{
	"", "x", "2024-03-01", "2024-03-01T10:00:00Z", "2024-03-01t10:00:00z", "2024-03-01 10:00:00+01:00",
	"2024-03-01T9:30Z", "2024-03-01T09:30Z", "2024-03-01T9:30:00Z", "2024-03-01T10:00:00.123456789+05:30",
	"2024-03-01T10:00:00+0530", "2024-03-01T10:00:00", "2024-3-01T10:00:00Z", "20240301T100000Z",
	" 2024-03-01T10:00:00Z ", "2024-13-01T10:00:00Z", "2024-02-30T10:00:00Z", "2024-03-01T24:00:00Z",
	"2024-03-01T10:00Z", "2024-03-01T10:00+02:00", "2024-03-01 10:00Z", "+024-03-01T10:00:00Z",
	"2024-03-01T10:00:00Zjunk", "2024-03-01T1:0Z", "2024-03-01T:00:00Z", "alice@example.com",
	"Re: 2024-03-01T10:00:00Z", "2024-03-01T10:00:60Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z",
}

func TestParseInstantGuardKeepsResults(t *testing.T) {
	for _, c := range instantCases {
		got, ok := ParseInstant(c)
		want, wok := parseInstantSlow(c)
		if ok != wok || !got.Equal(want) || got.Location().String() != want.Location().String() {
			t.Errorf("ParseInstant(%q) = %v %v, want %v %v", c, got, ok, want, wok)
		}
	}
}

func TestArgsSharedMatchesArgs(t *testing.T) {
	for _, d := range []string{"2024-03-01", "2024-02-30", "2024-13-01", "0000-00-00", "9999-12-31", "2024-3-01", "2024/03/01"} {
		if got, want := normalizeSame(NormDate, d), Normalize(NormDate, d) == d; got != want {
			t.Errorf("normalizeSame(date, %q) = %v, want %v", d, got, want)
		}
	}
	n := Normalizers{byPath: map[string]string{"when": NormInstant, "to": NormEmail, "ph": NormPhone, "m.day": NormDate, "tags": NormCasefold}}
	cases := []map[string]any{
		{},
		{"when": "2024-03-01T10:00:00Z", "to": "a@b.c", "x": "plain"},
		{"when": "2024-03-01T11:00:00+01:00"},
		{"when": "2024-03-01t10:00:00z"},
		{"when": "not a time"},
		{"to": "A@B.C"},
		{"x": " padded "},
		{"ph": "+44 20 7946 0958"},
		{"ph": "+442079460958"},
		{"m": map[string]any{"day": "2024-03-01", "other": " x"}},
		{"m": map[string]any{"day": "2024/03/01"}},
		{"m": map[string]any{"day": "2024-02-30"}},
		{"m": map[string]any{"day": "0000-01-01"}},
		{"m": map[string]any{"day": "2024-03-01T10:00:00Z"}},
		{"tags": []any{"a b", "C"}},
		{"tags": []any{"a  b"}},
		{"n": json.Number("3"), "b": true, "z": nil, "l": []any{"a", map[string]any{"k": "v"}}},
	}
	for _, c := range cases {
		full, shared := n.Args(c), n.ArgsShared(c)
		if !Equal(full, shared) {
			t.Errorf("%v: ArgsShared %v, Args %v", c, shared, full)
		}
		if n.changes(c) != !Equal(full, c) {
			t.Errorf("%v: same %v but Args changed it to %v", c, !n.changes(c), full)
		}
	}
}

func (n Normalizers) changes(args map[string]any) bool {
	for k, v := range args {
		if !n.same(k, v) {
			return true
		}
	}
	return false
}

func TestCasefoldASCIIMatchesFields(t *testing.T) {
	for _, c := range []string{"", " ", "a", "A", "Hello World", "hello world", "hello  world", " hello", "hello ",
		"a\tb", "a\nb", "a \n b", "\v\fX\rY ", "ALL CAPS", "mixed Case  and\ttabs\n", "already folded text",
		"x y z", "1 2 3 !@# {}", "a\x00b", "trailing\t", "  lead  ", "ab  ", "é", "Straße", "a\u00a0b", "a\u0085b"} {
		want := strings.ToLower(strings.Join(strings.Fields(c), " "))
		if got := Normalize(NormCasefold, c); got != want {
			t.Errorf("casefold(%q) = %q, want %q", c, got, want)
		}
		if f, ok := casefoldASCII(c); ok && f != want {
			t.Errorf("casefoldASCII(%q) = %q, want %q", c, f, want)
		}
	}
}
