package store

import "testing"

func TestLongDigits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"seed":6106071772379842383}`, false},
		{`{"seed":9223372036854775807}`, false},
		{`{"seed":9223372036854775808}`, true},
		{`{"seed":-9223372036854775808}`, true}, // int64's minimum takes the slow path: exact, only slower
		{`{"seed":9999999999999999999}`, true},
		{`{"seed":10000000000000000000}`, true},
		{`{"a":"12345678901234567890"}`, true}, // inside a string too
		{`{"a":922337203685477580,"b":7}`, false},
		{`9223372036854775808`, true}, // at the end of the data
		{``, false},
	} {
		if got := longDigits([]byte(tc.in)); got != tc.want {
			t.Errorf("longDigits(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
