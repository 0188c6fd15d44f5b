package dataset

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// hostile are strings and values that take every escaping and validity
// path of encoding/json.
var hostile = []string{
	"", "plain", `"quoted"`, `back\slash`, "tab\there", "new\nline\r\n", "\b\f\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "\u2028line\u2029para", "\xe2\x80", "\xe2\x80\xa8", "\xe2\x80\xa9x",
	"caf\xc3\xa9", "bad\xffbyte", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "😀 emoji", "\ufffd",
	"\u00a0nbsp", `{"a":1}`, `\u0041`, strings.Repeat("x<", 300),
	`{"a": [1, 2.5e10, -0, 1E+2, true, false, null, "s\u00e9"]}`, "  { \"k\" :\t\"v<>&\u2028\" }\n", `[]`, `{}`,
	`123456789012345678901234567890`, `-1.5e-300`, `01`, `1.`, `.1`, `-`, `1e`, `+1`, `nul`, `truex`, `[1,]`, `{"a":1,}`,
	`{"a" 1}`, `{1:2}`, `"\x`, `"\u12"`, `"\u12g4"`, `"\q"`, "\"\x01\"", `[` + strings.Repeat("[", 10) + `]`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), `[1 2]`, `{"a":{"b":[{}]}}`, " ", "\t1\t", `"ab`,
	`{"_raw":"{\"a\":"}`, `"bad\xffutf8 in value"`, "[\"\xe2\x80\xa8\"]",
}

// Every special byte at every offset of strings longer than a word, for
// the eight-bytes-at-a-time scans.
func init() {
	for _, c := range []string{`"`, `\`, "\n", "\x00", "\x1f", "\x7f", "<", ">", "&", "\xe2\x80\xa8", "\xff", "\xc3\xa9", " ", "!", "~"} {
		for k := 0; k < 18; k++ {
			s := strings.Repeat("a", k) + c + strings.Repeat("b", 20-k)
			hostile = append(hostile, s, `"`+s+`"`, `{"k":"`+s+`"}`, `["`+s+`",1]`)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range hostile {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range hostile {
		if got, want := ValidJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.80q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

func TestAppendCompactMatchesEncodingJSON(t *testing.T) {
	for _, s := range hostile {
		want, err := json.Marshal(json.RawMessage(s))
		got, ok := appendCompact([]byte("prefix"), []byte(s))
		if ok != (err == nil) {
			t.Errorf("AppendCompact(%.80q) ok = %v, json.Marshal error %v", s, ok, err)
			continue
		}
		if !ok {
			if string(got) != "prefix" {
				t.Errorf("AppendCompact(%.80q) appended %q on failure", s, got)
			}
			continue
		}
		if !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("AppendCompact(%.80q) = %s, want %s", s, got[6:], want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func FuzzValidAndCompact(f *testing.F) {
	for _, s := range hostile {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
		want, err := json.Marshal(json.RawMessage(b))
		got, ok := appendCompact(nil, b)
		if ok != (err == nil) || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("AppendCompact(%q) = %s, %v; json.Marshal: %s, %v", b, got, ok, want, err)
		}
	})
}
