package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

// A window on a call the schema refused skips the values it cannot place
// (the tool told the agent what to write) and still reports a placeable
// value outside it; on a call the schema accepted, an unplaceable value
// (its field declares no time format) is still a breach.
func TestRefusedArgBreaches(t *testing.T) {
	s, ps := LoadFile("../env/testdata/v2-features.json", nil)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	cs, ps := CompileConstraints(s)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	var window *CompiledConstraint
	for _, cc := range cs {
		if cc.C.ID == "callback-window" {
			window = cc
		}
	}
	if window == nil {
		t.Fatal("no callback-window constraint")
	}
	norm, _ := CompileNormalizers(s.Tool("book_callback").Parameters)
	tests := []struct {
		start             any
		accepted, refused string // substring of the breaches; "" none
	}{
		{"2026-11-26T10:00:00", "is not a date or an instant with an offset", ""},
		{"2026-11-26", "", ""}, // a day in the window
		{json.Number("3"), "is not a date or an instant with an offset", ""},
		{"2026-11-26T10:00:00+01:00", "", ""},
		{"2026-12-20T10:00:00+01:00", "is after now+P14D", "is after now+P14D"},
		{"2026-11-25T08:59:00Z", "is before now", "is before now"},
	}
	for _, tt := range tests {
		args := norm.Args(map[string]any{"start": tt.start})
		for _, c := range []struct {
			name string
			got  []string
			want string
		}{
			{"ArgBreaches", window.ArgBreaches(norm, args), tt.accepted},
			{"RefusedArgBreaches", window.RefusedArgBreaches(norm, args), tt.refused},
		} {
			got := strings.Join(c.got, "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("%s(start %v) = %q, want %q", c.name, tt.start, got, c.want)
			}
		}
	}
	// Other constraints check a refused call as an accepted one.
	for _, cc := range cs {
		if cc.C.ID == "slot-length" {
			args := map[string]any{"minutes": json.Number("30")}
			if a, r := cc.ArgBreaches(norm, args), cc.RefusedArgBreaches(norm, args); len(a) != 1 || strings.Join(a, "") != strings.Join(r, "") {
				t.Errorf("slot-length: ArgBreaches %q, RefusedArgBreaches %q: want the same one breach", a, r)
			}
		}
	}
}
