package audit

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// bayes is a multinomial naive Bayes classifier over tokens with add-one
// smoothing: the smallest model that learns which words or fields mark a
// class. A token never seen in training is skipped at prediction, as a
// vocabulary fitted on the training items does (scikit-learn's
// CountVectorizer): it carries nothing learnt, and with add-one smoothing
// it would push every unseen word toward the class with fewer tokens.
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
		if !m.vocab[t] {
			continue
		}
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

// Telltale is a token a classifier leans on: its log-odds toward the
// positive class (an allowed tool, a lure) and how many training items of
// each class hold it.
type Telltale struct {
	Question Question `json:"question"`
	Token    string   `json:"token"`
	LogOdds  float64  `json:"log_odds"`
	Pos      int      `json:"pos"` // items of the positive class holding it
	Neg      int      `json:"neg"`
}

// telltales are the k tokens (seen in at least minItems items) that most
// mark each class, strongest first: positive-class markers, then negative.
func (m *bayes) telltales(q Question, minItems float64, k int) []Telltale {
	v := float64(len(m.vocab)) + 1
	var all []Telltale
	for t := range m.vocab {
		p, n := m.counts[1][t], m.counts[0][t]
		if p+n < minItems {
			continue
		}
		lo := math.Log((p+1)/(m.totals[1]+v)) - math.Log((n+1)/(m.totals[0]+v))
		all = append(all, Telltale{Question: q, Token: t, LogOdds: lo, Pos: int(p), Neg: int(n)})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].LogOdds != all[j].LogOdds {
			return all[i].LogOdds > all[j].LogOdds
		}
		return all[i].Token < all[j].Token
	})
	if len(all) <= 2*k {
		return all
	}
	return append(all[:k:k], all[len(all)-k:]...)
}
