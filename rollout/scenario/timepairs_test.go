package scenario

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTimePairs(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"start", "end", "title"}, "start/end"},
		{[]string{"from", "to"}, "from/to"},
		{[]string{"starts_at", "ends_at"}, "starts_at/ends_at"},
		{[]string{"begin", "finish"}, "begin/finish"},
		{[]string{"check_in", "check_out"}, "check_in/check_out"},
		{[]string{"opt_in", "opt_out"}, ""},
		{[]string{"send_start", "send_end"}, "send_start/send_end"},
		{[]string{"period_from", "period_to", "valid_from", "valid_until"}, "period_from/period_to valid_from/valid_until"},
		{[]string{"start_date", "end_date"}, "start_date/end_date"},
		{[]string{"not_before", "not_after"}, "not_before/not_after"},
		{[]string{"start", "deadline"}, ""},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range timePairs(tt.names) {
			got = append(got, p.open+"/"+p.close)
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("timePairs(%v) = %q, want %q", tt.names, g, tt.want)
		}
	}
}

func TestTimeFormatMismatches(t *testing.T) {
	tests := []struct {
		name, params string
		want         []string // "path: message substring"
	}{
		{"consistent", `{"type":"object","properties":{"start":{"type":"string","format":"date-time"},"end":{"type":"string","format":"date-time"}}}`, nil},
		{"neither declares", `{"type":"object","properties":{"start":{"type":"string"},"end":{"type":"string"}}}`, nil},
		{"end without format", `{"type":"object","properties":{"start":{"type":"string","format":"date-time"},"end":{"type":"string"}}}`,
			[]string{`parameters.properties.end: declares no format, but its time pair "start" declares "date-time": add "format": "date-time"`}},
		{"start without format", `{"type":"object","properties":{"start":{"type":"string"},"end":{"type":"string","format":"date-time"}}}`,
			[]string{`parameters.properties.start: declares no format, but its time pair "end"`}},
		{"date and date-time", `{"type":"object","properties":{"from":{"type":"string","format":"date"},"to":{"type":"string","format":"date-time"}}}`,
			[]string{`parameters.properties.to: declares "format": "date-time", but its time pair "from" declares "date": give both the same format`}},
		{"e-mail from/to are no times", `{"type":"object","properties":{"from":{"type":"string","format":"email"},"to":{"type":"string"},"send_at":{"type":"string","format":"date-time"}}}`, nil},
		{"integers are no times", `{"type":"object","properties":{"from":{"type":"integer"},"to":{"type":"string","format":"date"}}}`, nil},
		{"nested and in items", `{"type":"object","properties":{
			"window":{"type":"object","properties":{"not_before":{"type":"string","format":"date-time"},"not_after":{"type":"string"}}},
			"stays":{"type":"array","items":{"type":"object","properties":{"check_in":{"type":"string","format":"date"},"check_out":{"type":["string","null"]}}}}}}`,
			[]string{
				`parameters.properties.stays.items.properties.check_out: declares no format, but its time pair "check_in" declares "date"`,
				`parameters.properties.window.properties.not_after: declares no format`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := TimeFormatMismatches(json.RawMessage(tt.params))
			if len(ps) != len(tt.want) {
				t.Fatalf("got %d problems %v, want %d", len(ps), ps, len(tt.want))
			}
			for i, w := range tt.want {
				if got := ps[i].Path + ": " + ps[i].Msg; !strings.HasPrefix(got, w) {
					t.Errorf("problem %d = %q, want it to start %q", i, got, w)
				}
			}
		})
	}
}
