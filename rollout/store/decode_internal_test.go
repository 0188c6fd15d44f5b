package store

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/trajectory"
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

// The fast reading of a line's identity fields, wherever it answers, gives
// what encoding/json's tokenizer gives: over record lines as the writer
// lays them out, odd but valid variants, and thousands of damaged copies.
func TestReadKeysFastMatchesJSON(t *testing.T) {
	rec := trajectory.Record{TrajID: "0123456789abcdef", Run: "run-1", Checkpoint: "sim:base", Policy: "sim:base",
		Framework: "normal", ScenarioID: "commerce-refund-001", Domain: "commerce", Rollout: 3, Seed: 6106071772379842383,
		Messages: []trajectory.Message{{Role: "user", Content: strings.Repeat("Please refund order 1234. ", 40)}}}
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := [][]byte{line}
	for _, v := range []string{
		`{"traj_id":"a","run":"r","checkpoint":"c","framework":"f","scenario_id":"s","rollout":0,"seed":-5}`,
		`{"traj_id":"a","traj_id":"b","run":"r","checkpoint":"c","framework":"f","scenario_id":"s","rollout":1,"seed":2}`,
		`{"traj_id":"é","run":"r\u00e9","checkpoint":"c","framework":"f","scenario_id":"s","rollout":-0,"seed":0}`,
		`{"traj_id":"a","rollout":1.0,"run":"r","checkpoint":"c","framework":"f","scenario_id":"s","seed":2}`,
		`{"traj_id":"a","rollout":01,"run":"r","checkpoint":"c","framework":"f","scenario_id":"s","seed":2}`,
		`{"traj_id":"a","seed":99999999999999999999,"run":"r","checkpoint":"c","framework":"f","scenario_id":"s","rollout":2}`,
		`{"traj_id":"a","run":"r","policy":{"x":1},"checkpoint":"c","framework":"f","scenario_id":"s","rollout":1,"seed":2}`,
		`{"traj_id":"a", "run":"r","checkpoint":"c","framework":"f","scenario_id":"s","rollout":1,"seed":2}`,
		`{"traj_id":"a","run":"r"}`, `{}`, `[]`, `{"traj_id":"a\x01"}`, "{\"traj_id\":\"\xff\",\"run\":\"r\",\"checkpoint\":\"c\",\"framework\":\"f\",\"scenario_id\":\"s\",\"rollout\":1,\"seed\":2}",
		`{"traj_\u0069d":"a","run":"r","checkpoint":"c","framework":"f","scenario_id":"s","rollout":1,"seed":2}`,
	} {
		lines = append(lines, []byte(v))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const mutants = "{}[]\",:\\0-.e1 x\x01\xc3"
	base := len(lines)
	for range 20000 {
		l := append([]byte(nil), lines[rng.IntN(base)]...)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(l)) // in the identity fields or after them
			if rng.IntN(2) == 0 {
				i = rng.IntN(min(len(l), 120))
			}
			switch rng.IntN(3) {
			case 0:
				l[i] = mutants[rng.IntN(len(mutants))]
			case 1:
				l = append(l[:i], l[i+1:]...)
			default:
				l = append(l[:i], append([]byte{mutants[rng.IntN(len(mutants))]}, l[i:]...)...)
			}
			if len(l) == 0 {
				break
			}
		}
		lines = append(lines, l)
	}
	answered := 0
	for _, l := range lines {
		got, ok := readKeysFast(l)
		if !ok {
			continue
		}
		answered++
		want, err := readKeysJSON(l)
		if err != nil || got != want {
			t.Fatalf("%q: fast %+v, encoding/json %+v (error %v)", l, got, want, err)
		}
	}
	if answered < 500 {
		t.Fatalf("the fast reading answered only %d of %d lines", answered, len(lines))
	}
}
