package store

import (
	"math/rand/v2"
	"testing"
)

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
		{`1234567890123456789`, false},
		{`9223372036854775808x`, true},
		{`x9223372036854775808`, true},
		{`1,9223372036854775808,2`, true},
	} {
		if got := longDigits([]byte(tc.in)); got != tc.want {
			t.Errorf("longDigits(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
	// Every placement of every run length around the sampling stride
	// agrees with a plain scan.
	plain := func(b []byte) bool {
		run := 0
		for i := 0; i <= len(b); i++ {
			if i < len(b) && isDigit(b[i]) {
				run++
				continue
			}
			if run >= 19 && tooLong(b[i-run:i]) {
				return true
			}
			run = 0
		}
		return false
	}
	for size := 0; size < 70; size++ {
		for run := 1; run <= 22 && run <= size; run++ {
			for at := 0; at+run <= size; at++ {
				for _, d := range []byte{'1', '9'} {
					b := make([]byte, size)
					for i := range b {
						b[i] = 'x'
					}
					for i := at; i < at+run; i++ {
						b[i] = d
					}
					if got, want := longDigits(b), plain(b); got != want {
						t.Fatalf("longDigits(%s) = %v, a plain scan says %v", b, got, want)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8)) // dense digits: several runs in one line
	for range 20000 {
		b := make([]byte, rng.IntN(120))
		for i := range b {
			b[i] = "0123456789x"[rng.IntN(11)]
			if rng.IntN(30) == 0 {
				b[i] = ','
			}
		}
		if got, want := longDigits(b), plain(b); got != want {
			t.Fatalf("longDigits(%s) = %v, a plain scan says %v", b, got, want)
		}
	}
}
