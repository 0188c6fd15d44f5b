package scenario

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The memo must give exactly the outcome of validating without it, for
// values that differ only in type or number spelling too.
func TestArgSchemaMemoMatchesUncached(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{
		"n":{"type":"integer","maximum":3},
		"s":{"type":"string","minLength":2},
		"a":{"type":"array","items":{"type":"string"}},
		"o":{"type":"object","properties":{"x":{"type":"boolean"}},"additionalProperties":false}},
		"required":["n"],"additionalProperties":false}`)
	as, err := CompileArgSchema(params)
	if err != nil {
		t.Fatal(err)
	}
	again, err := CompileArgSchema(params)
	if err != nil || again != as {
		t.Fatalf("second compile of the same parameters: %p, %v; want the memoised %p", again, err, as)
	}
	inputs := []string{
		`{"n":1}`, `{"n":1.0}`, `{"n":1e0}`, `{"n":"1"}`, `{"n":4}`, `{"n":1.5}`,
		`{"n":1,"s":"ab"}`, `{"n":1,"s":"a"}`, `{"n":1,"s":2}`,
		`{"n":1,"a":["x","y"]}`, `{"n":1,"a":["x",1]}`, `{"n":1,"a":"x"}`,
		`{"n":1,"o":{"x":true}}`, `{"n":1,"o":{"x":"true"}}`, `{"n":1,"o":{"y":true}}`,
		`{"n":1,"o":null}`, `{"s":"ab"}`, `{}`, `{"n":1,"zz":1}`, `{"n":1,"1:s":"ab"}`,
	}
	for round := range 2 { // the second round answers from the memo
		for _, in := range inputs {
			args, err := ParseArgs([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				got  error
				want error
			}{
				{"full", as.Validate(args), validateArgsUncached(as.full, args)},
				{"subset", as.ValidateSubset(args), validateArgsUncached(as.partial, args)},
			} {
				if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
					t.Errorf("round %d %s %s: got %v, want %v", round, c.name, in, c.got, c.want)
				}
			}
		}
	}
	// Values of a type DecodeJSON never produces are validated, not memoised.
	if _, ok := appendValueKey(nil, map[string]any{"n": 1}); ok {
		t.Error("an int value got a memo key")
	}
	// Distinct values never share a key.
	seen := map[string]string{}
	for _, in := range inputs {
		v, _ := DecodeJSON([]byte(in))
		k, ok := appendValueKey(nil, v)
		if !ok {
			t.Fatalf("%s: no key", in)
		}
		if prev, dup := seen[string(k)]; dup {
			t.Errorf("%s and %s share the key %q", prev, in, k)
		}
		seen[string(k)] = in
	}
}
