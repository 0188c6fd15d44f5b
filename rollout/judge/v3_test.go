package judge_test

import (
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// required_calls[3] (book_slot) states after: [1] (check_eligibility).
func TestRuleJudgeOrder(t *testing.T) {
	s, ps := scenario.LoadFile("../drift/testdata/v3-facts.json", nil)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	sp, err := env.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	var (
		patient = step{tool: "get_patient", args: `{"patient_id":"RW-20417"}`}
		check   = step{tool: "check_eligibility", args: `{"referral":"R-881"}`}
		text    = step{tool: "send_sms", args: `{"to":"+447700900412","body":"Hi Maya Okafor, your slot moved to Thursday at 10:00."}`}
		book    = step{tool: "book_slot", args: `{"slot_id":"S-3304","patient_id":"RW-20417"}`}
	)
	done := str("Texted and booked.")
	tests := []struct {
		name   string
		steps  []step
		pass   bool
		reason string
	}{
		{"in order", []step{patient, check, text, book}, true, ""},
		{"the text may come anywhere", []step{patient, text, check, book}, true, ""},
		{"booked before the check", []step{patient, book, check, text}, false, "required call book_slot was made before check_eligibility (required_calls[1]), which must come first"},
		{"booked twice, before and after the check: the order holds, the count fails", []step{patient, book, check, text, book}, false, "bookings"},
		{"never checked", []step{patient, text, book}, false, "required call check_eligibility was not made successfully"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judge.Rule{}.Judge(sp, judge.View(record(t, sp, "normal", tt.steps, done)))
			if (got.Score == 1) != tt.pass || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("Judge = %+v, want pass=%v with %q", got, tt.pass, tt.reason)
			}
		})
	}
}
