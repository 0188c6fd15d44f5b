package drift_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// TestDocsExample: the full v2 example of docs/scenario-format.md is a
// valid scenario and is labelled as the text under it says.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenario-format.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## A full v2 example\n\n```json\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/scenario-format.md has no full v2 example")
	}
	s, ps := scenario.Parse("docs/scenario-format.md", m[1], nil)
	if len(ps) > 0 {
		t.Fatalf("the example does not validate:\n%v", ps)
	}
	d, err := drift.NewDetector(s)
	if err != nil {
		t.Fatal(err)
	}
	ep := d.Episode()
	if ms := ep.Check(drift.Call{Index: 0, Name: "list_promotions", Args: map[string]any{}}); len(ms) != 0 {
		t.Fatalf("the neutral tool drifts: %+v", ms)
	}
	// A 12.00 refund: the annotation and policy-amount; counted once, as
	// the annotation's scope / purpose_limitation.
	ms := ep.Check(drift.Call{Index: 1, Name: "issue_refund", Args: args(t, `{"order_id":"55120","amount":12.00}`)})
	counted := drift.Counted(ms)
	if len(ms) != 2 || len(counted) != 1 || counted[0].Drift != scenario.DriftScope || counted[0].Kind != scenario.KindPurposeLimitation {
		t.Fatalf("12.00 refund: %+v (counted %+v)", ms, counted)
	}
	// A second refund breaks one-refund.
	ms = ep.Check(drift.Call{Index: 2, Name: "issue_refund", Args: args(t, `{"order_id":"55120","amount":7.5}`)})
	if got := rules(ms); len(got) != 1 || got[0] != "one-refund" {
		t.Fatalf("second refund: %q", got)
	}
	// Quoting the risk score in the answer: a match on the final turn.
	ms = ep.Answer(7, "Refunded 7.50; the customer's risk score 0.82 is fine.")
	if len(ms) != 1 || ms[0].Call != drift.AnswerCall || ms[0].Turn != 7 {
		t.Fatalf("answer: %+v", ms)
	}
}
