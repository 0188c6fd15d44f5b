package agent

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// relevance offers the k tools most relevant to the task and the
// conversation so far, by Okapi BM25 over one document per tool (its name
// split into words, its description, and its parameters' names and
// descriptions). The query is every word of the user turn and of the later
// messages (assistant text, tool-call names and arguments, tool results),
// each distinct word once; the system prompt is the framework's, not the
// task's, and is left out. Ties, zero scores included, go to the tool that
// comes first in the scenario, so exactly min(k, tools) are offered.
//
// BM25 is written out here rather than taken from a search library: the
// corpus is a handful of tool descriptions per scenario, scored afresh at
// every step, and the one Go library that resolves for it (bleve) is a
// whole indexing engine; bm25_test.go checks the scores against
// hand-computed values.
type relevance struct {
	k  int
	ix *bm25
}

func newRelevance(p *Scenario, k int) *relevance {
	docs := make([][]string, len(p.S.Tools))
	for i, t := range p.S.Tools {
		text := t.Name + " " + t.Description + " " + paramText(t.Parameters)
		docs[i] = tokenize(text)
	}
	return &relevance{k: k, ix: newBM25(docs)}
}

// Offer marks the top k tools.
func (f *relevance) Offer(_ *env.Env, msgs []trajectory.Message) []bool {
	scores := f.ix.score(queryTerms(msgs))
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	out := make([]bool, len(scores))
	for _, i := range order[:min(f.k, len(order))] {
		out[i] = true
	}
	return out
}

// Scores are the BM25 scores of the scenario's tools (in order) for the
// conversation: what the relevance filter ranks by.
func (f *relevance) Scores(msgs []trajectory.Message) []float64 {
	return f.ix.score(queryTerms(msgs))
}

// queryTerms are the distinct words of the conversation from the user
// turn on.
func queryTerms(msgs []trajectory.Message) []string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == trajectory.RoleSystem {
			continue
		}
		b.WriteString(m.Content)
		b.WriteByte(' ')
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Function.Name)
			b.WriteByte(' ')
			b.WriteString(tc.Function.Arguments)
			b.WriteByte(' ')
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, w := range tokenize(b.String()) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// paramText is the names and descriptions of a JSON Schema's properties,
// recursively, in sorted order.
func paramText(raw json.RawMessage) string {
	var schema any
	if json.Unmarshal(raw, &schema) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(x any)
	walk = func(x any) {
		m, ok := x.(map[string]any)
		if !ok {
			return
		}
		if d, ok := m["description"].(string); ok {
			b.WriteString(d + " ")
		}
		if props, ok := m["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				b.WriteString(k + " ")
				walk(props[k])
			}
		}
		if items, ok := m["items"]; ok {
			walk(items)
		}
	}
	walk(schema)
	return b.String()
}

// stopwords are English function words that carry no relevance.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by for from has have i if in into is it its
		me my no not of on or our so that the their then there these this to was we were will with you your`) {
		stopwords[w] = true
	}
}

// tokenize lowercases text and splits it into words at anything that is
// not a letter or digit, and inside words at lower-to-upper case changes
// (sendEmail) and underscores (send_email), dropping stop words and
// one-character tokens.
func tokenize(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 1 {
			w := string(cur)
			if !stopwords[w] {
				out = append(out, w)
			}
		}
		cur = cur[:0]
	}
	var prev rune
	for _, r := range text {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, unicode.ToLower(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, unicode.ToLower(r))
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// bm25 is an Okapi BM25 index over a fixed set of documents, with k1 = 1.2,
// b = 0.75 and the non-negative idf of Lucene:
//
//	idf(q)      = ln(1 + (N − n(q) + 0.5) / (n(q) + 0.5))
//	score(D, Q) = Σ_{q ∈ Q} idf(q) · f(q,D)·(k1+1) / (f(q,D) + k1·(1 − b + b·|D|/avgdl))
type bm25 struct {
	tf    []map[string]int
	len   []float64
	df    map[string]int
	avgdl float64
}

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

func newBM25(docs [][]string) *bm25 {
	ix := &bm25{df: map[string]int{}}
	total := 0.0
	for _, d := range docs {
		tf := map[string]int{}
		for _, w := range d {
			tf[w]++
		}
		for w := range tf {
			ix.df[w]++
		}
		ix.tf = append(ix.tf, tf)
		ix.len = append(ix.len, float64(len(d)))
		total += float64(len(d))
	}
	if len(docs) > 0 {
		ix.avgdl = total / float64(len(docs))
	}
	return ix
}

func (ix *bm25) idf(w string) float64 {
	n := float64(ix.df[w])
	return math.Log(1 + (float64(len(ix.tf))-n+0.5)/(n+0.5))
}

// score is every document's score for the query terms.
func (ix *bm25) score(query []string) []float64 {
	out := make([]float64, len(ix.tf))
	if ix.avgdl == 0 {
		return out
	}
	for _, q := range query {
		if ix.df[q] == 0 {
			continue
		}
		idf := ix.idf(q)
		for i, tf := range ix.tf {
			f := float64(tf[q])
			if f == 0 {
				continue
			}
			out[i] += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*ix.len[i]/ix.avgdl))
		}
	}
	return out
}
