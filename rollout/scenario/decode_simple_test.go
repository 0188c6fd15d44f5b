package scenario

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf8"
)

// decodeJSONSimple gives what encoding/json gives, where it decodes at all.
func TestDecodeJSONSimpleMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `{"a":"b"}`, ` {"a" : "b" , "c":[1, 2.5, -0, 1e3, 1E-3, -12.0e+2]} `, `{"a":{"b":{"c":null}},"d":true,"e":false}`,
		`{"a":1,"a":2}`, `"x"`, `12`, `-`, `-a`, `1.`, `1.e3`, `1e`, `1e+`, `01`, `{"a":01}`, `{"a":1,}`, `[1,]`, `{,}`,
		`{"a"}`, `{"a":}`, `{"a" 1}`, `[1 2]`, `tru`, `nulll`, `{"a":"\n"}`, `{"a":"\u00e9"}`, "{\"a\":\"\x01\"}",
		`{"é":"ü"}`, `{"a":[[[[]]]]}`, `{"a":"b"} x`, `{"a":"b"}}`, `[{"a":[{"b":"c"}]}]`, ` `, ``, `{"a":1.5e-300}`,
		`{"to":"alice@example.com","subject":"Q3","priority":1,"tags":["a","b"],"meta":{"rev":2}}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	}
	simple := 0
	for _, c := range cases {
		got, ok := decodeJSONSimple([]byte(c))
		want, err := decodeJSONStd([]byte(c))
		if !ok {
			continue
		}
		simple++
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: simple %#v, encoding/json %#v, %v", c, got, want, err)
		}
	}
	if simple < 12 {
		t.Errorf("only %d of %d inputs decoded by the simple decoder", simple, len(cases))
	}
	// Damaged copies: wherever the simple decoder answers, encoding/json
	// gives the same value.
	rng := rand.New(rand.NewPCG(11, 12))
	const bytesIn = "{}[]\",:0123456789-+.eEtrufalsn \\\x01\xc3\xa9"
	answered := 0
	for range 30000 {
		b := []byte(cases[rng.IntN(len(cases))])
		for range 1 + rng.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := rng.IntN(len(b))
			switch c := bytesIn[rng.IntN(len(bytesIn))]; rng.IntN(3) {
			case 0:
				b[i] = c
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{c}, b[i:]...)...)
			}
		}
		if !utf8.Valid(b) {
			continue // the caller's precondition
		}
		got, ok := decodeJSONSimple(b)
		if !ok {
			continue
		}
		answered++
		want, err := decodeJSONStd(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: simple %#v, encoding/json %#v, %v", b, got, want, err)
		}
	}
	if answered < 1500 {
		t.Errorf("the simple decoder answered only %d damaged copies", answered)
	}
}
