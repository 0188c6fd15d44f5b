package store_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/internal/racetest"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// sameAsMarshal fails unless MarshalRecord gives json.Marshal's bytes and
// error for r.
func sameAsMarshal(t *testing.T, what string, r *trajectory.Record) bool {
	t.Helper()
	got, gerr := store.MarshalRecord(r)
	want, werr := json.Marshal(r)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Errorf("%s: error %v, encoding/json's %v", what, gerr, werr)
		return false
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: bytes differ at %d:\n got  %q\n want %q", what, i, got[max(0, i-60):min(len(got), i+60)], want[max(0, i-60):min(len(want), i+60)])
		return false
	}
	return true
}

// Every record of the demo's workload and of the test fixtures is written
// as encoding/json writes it.
func TestMarshalRecordMatchesEncodingJSON(t *testing.T) {
	racetest.SingleThreaded(t)
	n := 0
	for _, l := range append(corpus.DemoLines(t), corpus.FixtureLines(t)...) {
		var r trajectory.Record
		if json.Unmarshal(l, &r) != nil {
			continue
		}
		n++
		if !sameAsMarshal(t, r.TrajID, &r) {
			return
		}
	}
	if n < 100 {
		t.Fatalf("only %d records read", n)
	}
}

// Records with every field filled at random — strings with what escaping
// rewrites (quotes, control characters, '<', '>', '&', U+2028, invalid
// UTF-8), embedded JSON with whitespace and escapes or not valid at all,
// nil and empty slices, NaN — are written as encoding/json writes them,
// errors included. A field added to Record is filled here too, so the
// plain encoder cannot fall behind the type.
func TestMarshalRecordMatchesEncodingJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 3000 {
		var r trajectory.Record
		fill(rng, reflect.ValueOf(&r).Elem(), 0)
		if !sameAsMarshal(t, "random record", &r) {
			t.Logf("record %d: %+v", i, r)
			return
		}
	}
}

var nasty = []string{"", "a", "plain text", `q"uote`, `back\slash`, "tab\tnl\n", "\x01\x1f\x7f", "<b>&amp;</b>",
	"line\u2028sep\u2029", "é日本", "bad\xff\xfeutf8", "\xe2\x80", "trail\xe2"}

var raws = []string{`{}`, `{"a":1}`, ` { "a" : [ 1 , 2.5e3 , "x y" ] } `, `{"html":"<a href=\"x\">&</a>"}`,
	`"\u2028 and ` + "\u2028" + `"`, `[true,false,null]`, "{\n\t\"k\":\r\n\"v\"\n}", `"\\\" <"`, `-0.0`,
	`{"a":}`, `{"a":1}}`, `nul`, "1\x00", `"é"`, `{"bad":"` + "\xff" + `"}`}

// fill sets v, recursively, to random values.
func fill(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(nasty[rng.IntN(len(nasty))])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		switch rng.IntN(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(-rng.Int64N(1000))
		default:
			v.SetInt(rng.Int64N(1 << 40))
		}
	case reflect.Float64:
		fs := []float64{0, 1, -0.5, 1e-7, 1e21, 123456.789, math.NaN()}
		f := fs[rng.IntN(len(fs))]
		if f != f && rng.IntN(20) != 0 {
			f = 0.25 // NaN now and then: encoding/json's error
		}
		v.SetFloat(f)
	case reflect.Pointer:
		if rng.IntN(3) == 0 || depth > 4 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(rng, v.Elem(), depth+1)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			switch rng.IntN(8) {
			case 0:
				return // nil
			case 1:
				v.SetBytes([]byte{})
			default:
				raw := raws[rng.IntN(len(raws))]
				if rng.IntN(4) != 0 {
					raw = raws[rng.IntN(9)] // mostly valid
				}
				v.SetBytes([]byte(raw))
			}
			return
		}
		switch rng.IntN(5) {
		case 0:
			return // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		n := 1 + rng.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(rng, v.Index(i), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i), depth+1)
			}
		}
	default:
		panic("fill: no generator for " + v.Type().String())
	}
}
