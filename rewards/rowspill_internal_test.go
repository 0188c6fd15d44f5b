package rewards

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// randomRows fills every field of RewardRow through reflection, so that a
// field added to the row and not to encodeRows fails the round trip:
// strings with any bytes, nil and empty slices, NaN and negative numbers.
func randomRows(rng *rand.Rand, n int) []*dataset.RewardRow {
	str := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(str())
		case reflect.Bool:
			v.SetBool(rng.IntN(2) == 1)
		case reflect.Int64:
			v.SetInt(rng.Int64() - math.MaxInt64/2)
		case reflect.Float64:
			switch rng.IntN(4) {
			case 0:
				v.SetFloat(math.NaN())
			case 1:
				v.SetFloat(math.Inf(-1))
			default:
				v.SetFloat(rng.NormFloat64())
			}
		case reflect.Slice:
			switch rng.IntN(4) {
			case 0: // nil
			case 1:
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			default:
				s := reflect.MakeSlice(v.Type(), 1+rng.IntN(4), 4)
				for i := range s.Len() {
					fill(s.Index(i))
				}
				v.Set(s)
			}
		case reflect.Uint8: // a byte of a json.RawMessage
			v.SetUint(uint64(rng.IntN(256)))
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		default:
			panic("randomRows: no filler for " + v.Kind().String() + ": teach encodeRows and this test the new field")
		}
	}
	rows := make([]*dataset.RewardRow, n)
	for i := range rows {
		rows[i] = &dataset.RewardRow{}
		fill(reflect.ValueOf(rows[i]).Elem())
	}
	return rows
}

// What the first pass writes of a trajectory's rows reads back as the
// same rows, field by field; damaged bytes are an error, never rows.
func TestRowsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		rows := randomRows(rng, rng.IntN(4))
		b := encodeRows(nil, rows)
		got, err := decodeRows(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(rows) {
			t.Fatalf("%d rows back, %d written", len(got), len(rows))
		}
		for i := range rows {
			// NaN is not equal to itself: compare the encodings of the floats
			want, have := *rows[i], *got[i]
			for _, p := range [][2]*float64{{&want.Reward, &have.Reward}, {&want.Advantage, &have.Advantage}} {
				if math.Float64bits(*p[0]) != math.Float64bits(*p[1]) {
					t.Fatalf("row %d: %v read back as %v", i, *p[0], *p[1])
				}
				*p[0], *p[1] = 0, 0
			}
			for j := range want.ProcessRewards {
				if math.Float64bits(want.ProcessRewards[j]) != math.Float64bits(have.ProcessRewards[j]) {
					t.Fatalf("row %d: process reward %d differs", i, j)
				}
			}
			want.ProcessRewards, have.ProcessRewards = nil, nil
			if !reflect.DeepEqual(want, have) {
				t.Fatalf("row %d read back differs:\n%+v\n%+v", i, want, have)
			}
		}
		if len(rows) == 0 {
			continue
		}
		for _, cut := range []int{1, len(b) / 2} { // a torn or damaged record
			if _, err := decodeRows(b[:len(b)-cut]); err == nil {
				t.Fatalf("%d bytes of %d decoded without error", len(b)-cut, len(b))
			}
		}
	}
	if _, err := decodeRows([]byte(strings.Repeat("\xff", 11))); err == nil {
		t.Fatal("a count past the bytes decoded")
	}
}
