package scenario

import (
	"reflect"
	"testing"
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
}
