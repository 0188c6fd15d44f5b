package scenario

import (
	"strconv"
	"strings"
	"sync"
)

// The per-call helpers of the environment, the drift detector and the
// judges, written to allocate little: they give exactly what the plain
// versions gave (TestValuesAtMatchesPlain, TestRenderResourcesMatchesPlain).

// atoi is strconv.Atoi without the error value: ok exactly when Atoi
// succeeds. Text that is no decimal integer never reaches strconv, whose
// error would be allocated.
func atoi(s string) (int, bool) {
	d := s
	if len(d) > 0 && (d[0] == '+' || d[0] == '-') {
		d = d[1:]
	}
	if d == "" {
		return 0, false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s) // fails only on overflow here
	return n, err == nil
}

// appendStep appends what one path segment selects in x: a map's entry, a
// list's element at a numeric segment, or, for any other segment, the
// selection in every element of the list.
func appendStep(dst []any, x any, seg string) []any {
	switch y := x.(type) {
	case map[string]any:
		if v, ok := y[seg]; ok {
			dst = append(dst, v)
		}
	case []any:
		if i, ok := atoi(seg); ok {
			if i >= 0 && i < len(y) {
				dst = append(dst, y[i])
			}
			return dst
		}
		for _, e := range y {
			dst = appendStep(dst, e, seg)
		}
	}
	return dst
}

// resTemplate is a resource template read once: bare (no placeholder: the
// template is an argument name), the argument names of its placeholders in
// order (repeats kept), and each placeholder as written ("{name}").
type resTemplate struct {
	bare  bool
	names []string
	holes []string
}

var resTemplates sync.Map // template → *resTemplate

func templateOf(tmpl string) *resTemplate {
	if t, ok := resTemplates.Load(tmpl); ok {
		return t.(*resTemplate)
	}
	t := &resTemplate{bare: !strings.Contains(tmpl, "{"), names: parseResourceArgs(tmpl)}
	for _, n := range t.names {
		t.holes = append(t.holes, "{"+n+"}")
	}
	if len(t.names) > 0 {
		t.names = t.names[:len(t.names):len(t.names)]
	}
	actual, _ := resTemplates.LoadOrStore(tmpl, t)
	return actual.(*resTemplate)
}
