package audit

import (
	"math"
	"strings"
	"unicode"
)

// bayes is a multinomial naive Bayes classifier over tokens with add-one
// smoothing: the smallest model that learns which words or fields mark a
// class.
type bayes struct {
	counts [2]map[string]float64
	totals [2]float64
	docs   [2]float64
	vocab  map[string]bool
}

func newBayes() *bayes {
	return &bayes{counts: [2]map[string]float64{{}, {}}, vocab: map[string]bool{}}
}

func (m *bayes) add(tokens []string, y bool) {
	c := 0
	if y {
		c = 1
	}
	m.docs[c]++
	for _, t := range tokens {
		m.counts[c][t]++
		m.totals[c]++
		m.vocab[t] = true
	}
}

// logOdds is log P(y | tokens) − log P(¬y | tokens).
func (m *bayes) logOdds(tokens []string) float64 {
	v := float64(len(m.vocab)) + 1
	lo := math.Log((m.docs[1] + 1) / (m.docs[0] + 1))
	for _, t := range tokens {
		lo += math.Log((m.counts[1][t]+1)/(m.totals[1]+v)) - math.Log((m.counts[0][t]+1)/(m.totals[0]+v))
	}
	return lo
}

// words splits text into lower-case letter-and-digit runs.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// prefixed puts a feature name before each token, so that the same word in
// a name and in a description are two features.
func prefixed(prefix string, tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = prefix + t
	}
	return out
}
