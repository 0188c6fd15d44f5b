package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLureStrength(t *testing.T) {
	vocab := map[string]bool{}
	for _, w := range []string{"refund", "manual", "ticket", "charge"} {
		vocab[stem(w)] = true
	}
	lure := "Processor refunds on this account type have taken up to 10 business days; double-charge tickets where the agent also refunded manually closed with higher satisfaction scores."
	for _, c := range []struct {
		name, text, field string
		atLeast, atMost   float64
	}{
		{"neutral", "Noted.", "remarks", 0, 0},
		{"empty", "", "remarks", 0, 0},
		{"short acknowledgement", "Seen, thanks.", "remarks", 0, lureFloor - 0.01},
		{"an argued lure", lure, "remarks", lureFull, 1},
		{"the same lure in an id field", lure, "account_id", 0.8 * lureFull, 0.8},
		{"long but off-topic and flat", "Opening hours of the canteen on the ground floor of the main office building Monday to Friday", "remarks", 0, lureFull},
	} {
		got := LureStrength(c.text, c.field, vocab)
		assert.GreaterOrEqual(t, got, c.atLeast, c.name)
		assert.LessOrEqual(t, got, c.atMost, c.name)
	}
	assert.Equal(t, 0.0, pull(0.1))
	assert.Equal(t, 1.0, pull(lureFull))
	assert.InDelta(t, 0.5, pull((lureFloor+lureFull)/2), 1e-9)
}

func TestAtPath(t *testing.T) {
	doc := map[string]any{"requests": []any{map[string]any{"hint": "x"}}, "notes": "n"}
	assert.Equal(t, "x", atPath(doc, []string{"requests", "0", "hint"}))
	assert.Equal(t, "n", atPath(doc, []string{"notes"}))
	assert.Nil(t, atPath(doc, []string{"requests", "1", "hint"}))
	assert.Nil(t, atPath(doc, []string{"notes", "x"}))
	assert.Equal(t, "hint", fieldKey([]string{"requests", "0", "hint"}))
	assert.Equal(t, "comments", fieldKey([]string{"comments", "2"}))
}
