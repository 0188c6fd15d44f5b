package store

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// The scanning decoder's walker accepts exactly the JSON values
// encoding/json finds valid: hand-picked edge cases, and random damaged
// copies of values of every kind.
func TestWalkerValueMatchesJSONValid(t *testing.T) {
	cases := []string{
		`""`, `"a"`, `"\u00e9"`, `"\uD83D\uDE00"`, `"\u12"`, `"\u12g4"`, `"\q"`, `"\/"`, `"a` + "\x01" + `b"`, `"a` + "\x7f" + `"`,
		`"é"`, `"\"`, `"\\"`, `"abcdefgh\"ijklmnop"`, `"abcdefghijklmnopqrstuvw` + "\t" + `xyz"`, `"abcdefghijklmnop\\"`,
		`0`, `-0`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `1e5`, `1E-5`, `-1.25e+10`, `1.2.3`, `+1`, `0x1`,
		`true`, `tru`, `false`, `fals`, `null`, `nul`, `nulll`,
		`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[1,[2,[3]]]`, `[`, `]`,
		`{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":[{"b":null}]}`, `{"a":1}}`,
		` [1] `, "\t{\"a\":\n1}\r\n",
		"1\x00", "\"a\"\x00", "[1]\x00 ", "\x00",
	}
	rng := rand.New(rand.NewPCG(7, 9))
	base := []string{`{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"a\":1}","parsed_arguments":{"a":[1,2.5e3,"x\u00e9",true,null]}}}]}`,
		`[{"type":"function","function":{"name":"send_email","description":"Send the draft.","parameters":{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}}}]`}
	for _, b := range base {
		cases = append(cases, b)
		for range 3000 {
			m := []byte(b)
			const alphabet = "{}[]\":,\\ 0-.eEtfnu\x01a"
			switch i := rng.IntN(len(m)); rng.IntN(3) {
			case 0:
				m = append(m[:i:i], m[i+1:]...)
			case 1:
				m[i] = alphabet[rng.IntN(len(alphabet))]
			default:
				m = append(m[:i:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, m[i:]...)...)
			}
			cases = append(cases, string(m))
		}
	}
	for _, c := range cases {
		got := whole([]byte(c), (*walker).value) == nil
		if want := json.Valid([]byte(c)); got != want {
			t.Errorf("%q: walker accepts %v, encoding/json.Valid %v", c, got, want)
		}
	}
}

// A value the cache holds is skipped whole; bytes that only begin like it
// are walked, and refused when they are malformed.
func TestWalkedCache(t *testing.T) {
	var c walkedCache
	v := `["send_email","save_draft","lookup_customer"]`
	walk := func(in string) (int, error) {
		w := &walker{b: []byte(in)}
		err := c.walk(w, scanStringArray{}.walk)
		return w.i, err
	}
	for range 2 { // walked, then remembered
		if n, err := walk(v + `,"next":1`); err != nil || n != len(v) {
			t.Fatalf("walk = %d, %v; want %d, nil", n, err, len(v))
		}
	}
	if _, err := walk(v[:len(v)-1] + `,1]`); err == nil {
		t.Error("a list with a number accepted after a list with the same head was remembered")
	}
	if _, err := walk(v[:40]); err == nil {
		t.Error("a list cut short accepted")
	}
}
