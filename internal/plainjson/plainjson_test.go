package plainjson

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// equal checks Append against json.Marshal: the same bytes, or both an error.
func equal(t *testing.T, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := Append([]byte("prefix"), v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%#v: error %v, encoding/json %v", v, gerr, werr)
	}
	if werr == nil && string(got) != "prefix"+string(want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got[len("prefix"):], want)
	}
}

func TestAppendMatchesMarshal(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "plain", `quote " and \ backslash`, "<b>&amp;</b>",
		"tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f", "\u2028\u2029", "caf\u00e9 \u5c0f\u9c7c \U0001F600",
		"bad \xff utf8 \xc3", "\xe2\x80", strings.Repeat("long ", 200),
		json.Number("0"), json.Number("-12.5e+3"), json.Number(""), json.Number("1.0"), json.Number("01"), json.Number("1."), json.Number("abc"),
		0.0, math.Copysign(0, -1), 1.0, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, 5e-324, math.MaxFloat64, math.Inf(1), math.NaN(),
		map[string]any(nil), map[string]any{}, []any(nil), []any{},
		map[string]any{"b": 1.0, "a": "x", "<key>": []any{nil, true, json.Number("3")}, "": map[string]any{"z": "\u2028"}},
		[]any{map[string]any{"k": []any{[]any{}, map[string]any{}}}},
		map[string]any{"n": 3, "s": []string{"typed", "slice"}, "m": map[string]string{"x": "y"}}, // encoding/json's own
		map[string]any{"f": func() {}}, // its error
	} {
		equal(t, v)
	}
	many := map[string]any{}
	for i := range 40 { // more keys than the stack array holds
		many["k"+strconv.Itoa(39-i)] = float64(i)
	}
	equal(t, many)
}

// randomValue builds a decoded-JSON-like value from r.
func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(9); {
	case depth > 3 || k < 3:
		return randomString(r)
	case k == 3:
		return json.Number(strconv.FormatFloat((r.Float64()-0.5)*math.Pow(10, float64(r.IntN(50)-25)), 'g', -1, 64))
	case k == 4:
		return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(60)-30))
	case k == 5:
		return r.IntN(2) == 0
	case k == 6:
		return nil
	case k == 7:
		n := r.IntN(5)
		l := make([]any, n)
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return l
	default:
		m := map[string]any{}
		for range r.IntN(20) {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	}
}

// randomString draws bytes that exercise every escape: ASCII, HTML
// characters, controls, multi-byte runes, U+2028 and broken UTF-8.
func randomString(r *rand.Rand) string {
	parts := []string{"a", "Z", " ", "<", ">", "&", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "é", "小", "\U0001F600", "\u2028", "\u2029", "\xff", "\xe2\x80", "0"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func TestAppendMatchesMarshalRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		equal(t, randomValue(r, 0))
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b>&", "\u2028", "\xff\xfe", "\x00\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		equal(t, s)
		equal(t, map[string]any{s: []any{s, json.Number("1")}})
	})
}

func BenchmarkAppend(b *testing.B) {
	v := map[string]any{"order_id": "A-1001", "status": "shipped", "items": []any{map[string]any{"sku": "X1", "qty": json.Number("2")}}, "note": "ok <fine> & done"}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = Append(buf[:0], v)
	}
}
