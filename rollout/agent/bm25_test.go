package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestBM25HandComputed checks the scores against values worked out by hand:
// N = 2, avgdl = 2.5; idf(send) = ln 2, idf(email) = ln 1.2;
// d0 (|D| = 2): norm = 1.2·(0.25 + 0.75·2/2.5) = 1.02, so
// score = (ln 2 + ln 1.2) · 2.2/2.02 = 0.953481;
// d1 (|D| = 3): norm = 1.2·(0.25 + 0.75·3/2.5) = 1.38, so
// score = ln 1.2 · 2.2/2.38 = 0.168532.
func TestBM25HandComputed(t *testing.T) {
	ix := newBM25([][]string{{"send", "email"}, {"read", "email", "inbox"}})
	got := ix.score([]string{"email", "send", "absent"})
	assert.InDelta(t, 0.953481, got[0], 1e-5)
	assert.InDelta(t, 0.168532, got[1], 1e-5)
	assert.Equal(t, []float64{0, 0}, newBM25([][]string{{"a1"}, {"b1"}}).score(nil))
	assert.Equal(t, []float64{}, newBM25(nil).score([]string{"x"}))
}

func TestTokenize(t *testing.T) {
	for in, want := range map[string][]string{
		"send_email":                {"send", "email"},
		"sendEmail to Bob":          {"send", "email", "bob"},
		"Pay INV-7 from the vendor": {"pay", "inv", "vendor"},
		"a I x":                     nil,
	} {
		assert.Equal(t, want, tokenize(in), in)
	}
}

// BenchmarkRelevanceOffer scores a scenario's tools for a conversation of
// a dozen messages, as the relevance filter does at every step.
func BenchmarkRelevanceOffer(b *testing.B) {
	docs := [][]string{}
	for i := range 9 {
		docs = append(docs, tokenize(strings.Repeat("send email draft invoice pay payee verify ledger export ", 1+i%3)))
	}
	f := &relevance{k: 4, ix: newBM25(docs)}
	var msgs []trajectory.Message
	for i := range 12 {
		msgs = append(msgs, trajectory.Message{Role: trajectory.RoleTool, Content: strings.Repeat("the vendor asked to verify the payee before paying invoice INV-7 ", 4+i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Offer(nil, msgs)
	}
}
