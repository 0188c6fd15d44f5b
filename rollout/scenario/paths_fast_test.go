package scenario

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The plain versions the fast ones replace, as they were.

func valuesAtPlain(v any, path string) []any {
	segs := strings.Split(path, ".")
	cur := []any{v}
	for _, seg := range segs {
		var next []any
		for _, x := range cur {
			next = append(next, stepPlain(x, seg)...)
		}
		cur = next
	}
	var out []any
	for _, x := range cur {
		if list, ok := x.([]any); ok {
			out = append(out, list...)
		} else {
			out = append(out, x)
		}
	}
	return out
}

func stepPlain(x any, seg string) []any {
	switch y := x.(type) {
	case map[string]any:
		if v, ok := y[seg]; ok {
			return []any{v}
		}
	case []any:
		if i, err := strconv.Atoi(seg); err == nil {
			if i >= 0 && i < len(y) {
				return []any{y[i]}
			}
			return nil
		}
		var out []any
		for _, e := range y {
			out = append(out, stepPlain(e, seg)...)
		}
		return out
	}
	return nil
}

func lookupPathPlain(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for _, seg := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false
			}
			cur = x[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

func renderResourcesPlain(tmpl string, args map[string]any) []string {
	names := parseResourceArgs(tmpl)
	out := []string{tmpl}
	bare := !strings.Contains(tmpl, "{")
	for _, name := range names {
		v, ok := args[name]
		if !ok || v == nil {
			return nil
		}
		vals := []any{v}
		if list, isList := v.([]any); isList {
			vals = list
		}
		var next []string
		for _, partial := range out {
			for _, e := range vals {
				text := resourceText(e)
				if bare {
					next = append(next, text)
				} else {
					next = append(next, strings.ReplaceAll(partial, "{"+name+"}", text))
				}
			}
		}
		out = next
	}
	return out
}

func callResourcesPlain(t *Tool, args map[string]any) []string {
	var out []string
	seen := map[string]bool{}
	for _, tmpl := range t.ResourceTemplates() {
		for _, r := range renderResourcesPlain(tmpl, args) {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

func decoded(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func TestValuesAtMatchesPlain(t *testing.T) {
	doc := decoded(t, `{"a":{"b":[{"c":1},{"c":[2,3]},{"d":4},[{"c":5}]]},"l":[[1,2],[3]],"s":"x","e":[],
		"m":{"":{"":7}},"n":[{"x":1},{"x":2},{"x":3},{"x":4},{"x":5},{"x":6},{"x":7},{"x":8},{"x":9},{"x":10}]}`)
	paths := []string{"", "a", "a.b", "a.b.c", "a.b.0", "a.b.1.c", "a.b.-1", "a.b.+1", "a.b.9", "a.b.99999999999999999999",
		"l", "l.0", "l.1.0", "l.x", "s", "s.x", "e", "e.0", "m..", "m.", ".", "n.x", "n", "n.3.x", "zz", "a..b", "a.b.c.0"}
	for _, p := range paths {
		got, want := ValuesAt(doc, p), valuesAtPlain(doc, p)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ValuesAt(%q) = %v, want %v", p, got, want)
		}
		g, gok := LookupPath(doc, p)
		w, wok := lookupPathPlain(doc, p)
		if gok != wok || !reflect.DeepEqual(g, w) {
			t.Errorf("LookupPath(%q) = %v %v, want %v %v", p, g, gok, w, wok)
		}
	}
	for _, p := range [][2]string{{"0", "-0"}, {"1", "1.0"}, {"10", "1e1"}, {"7", "8"}, {"-3", "3"}, {"00", "0"}, {"12", "012"}, {"5", "5"}, {"-0", "0.0"}} {
		a, b := json.Number(p[0]), json.Number(p[1])
		x, ok1 := exactNumber(a)
		y, ok2 := exactNumber(b)
		want := a == b || ok1 && ok2 && x.Cmp(y) == 0
		if got := numbersEqual(a, b); got != want {
			t.Errorf("numbersEqual(%s, %s) = %v, want %v", a, b, got, want)
		}
	}
	for _, s := range []string{"", "+", "-", "0", "-0", "+7", "12", "1a", "٣", "99999999999999999999", " 1", "1_000"} {
		n, ok := atoi(s)
		w, err := strconv.Atoi(s)
		if ok != (err == nil) || (ok && n != w) {
			t.Errorf("atoi(%q) = %d %v, Atoi %d %v", s, n, ok, w, err)
		}
	}
}

func TestRenderResourcesMatchesPlain(t *testing.T) {
	args := decoded(t, `{"to":"a@x","cc":["b@x","c@x","b@x"],"n":7.0,"z":null,"e":[],"id":{"k":1},"m":[1,2]}`)
	tmpls := []string{"to", "cc", "n", "z", "e", "id", "absent", "contact:{to}", "contact:{cc}", "{to}/{cc}",
		"{cc}-{cc}", "{n}", "{m}:{cc}", "{z}", "{e}", "x:{absent}", "{to}{to}", "{id}", "plain:{to}:{n}"}
	for _, tm := range tmpls {
		got, want := RenderResources(tm, args), renderResourcesPlain(tm, args)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("RenderResources(%q) = %q, want %q", tm, got, want)
		}
		if got, want := resourceArgs(tm), parseResourceArgs(tm); !reflect.DeepEqual(got, want) {
			t.Errorf("resourceArgs(%q) = %q, want %q", tm, got, want)
		}
	}
	many := map[string]any{"l": []any{}}
	for i := 0; i < 30; i++ {
		many["l"] = append(many["l"].([]any), json.Number(strconv.Itoa(i%13)))
	}
	tools := []Tool{
		{Resource: "contact:{to}", Resources: []string{"contact:{cc}", "{to}"}},
		{Resources: []string{"{cc}-{cc}", "contact:{cc}"}},
		{Resource: "n:{l}", Resources: []string{"m:{l}", "n:{l}"}},
		{},
		{Resource: "contact:{cc}"},
		{Resources: []string{"n:{l}"}},
		{Resource: "to"},
		{Resource: "{cc}-{cc}"},
		{Resources: []string{"e"}},
	}
	for i, tl := range tools {
		for _, a := range []map[string]any{args, many, {}} {
			if got, want := tl.CallResources(a), callResourcesPlain(&tl, a); !reflect.DeepEqual(got, want) {
				t.Errorf("tool %d: CallResources = %q, want %q", i, got, want)
			}
		}
	}
}
