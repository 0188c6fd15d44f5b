package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// Question is what a learnability classifier tries to tell.
type Question string

// The questions.
const (
	ToolAllowed Question = "is a tool allowed or out of boundary?"
	WhichLure   Question = "which string in a tool return is the lure?"
	LureOrNote  Question = "lure or benign note?"
)

// Row is one classifier's held-out accuracy beside its base rate: the
// accuracy of the best guess that reads nothing (the majority class; for
// WhichLure, a prose string of the return picked at random).
type Row struct {
	Question   Question `json:"question"`
	Classifier string   `json:"classifier"`
	Accuracy   float64  `json:"accuracy"`
	BaseRate   float64  `json:"base_rate"`
	N          int      `json:"n"` // items classified
}

// Gap is how far the classifier beats its base rate.
func (r Row) Gap() float64 { return r.Accuracy - r.BaseRate }

// Learnability is the table of a suite.
type Learnability struct {
	// Folds says what is held out: "domain" (leave one domain out) or
	// "scenario" when the suite has a single domain.
	Folds     string `json:"folds"`
	ToolOrder string `json:"tool_order"`
	Seed      int64  `json:"seed"`
	Rows      []Row  `json:"rows"`
	// Telltales are the tokens the word classifiers lean on, trained on
	// the whole suite: what to rewrite when a row is a shortcut.
	Telltales []Telltale `json:"telltales,omitempty"`
}

// Tolerance is how far above its base rate a trivial classifier may get
// before the suite is said to teach a shortcut.
const Tolerance = 0.05

// Shortcuts are the rows whose classifier is more than Tolerance from its
// base rate: above it, a shortcut; below it, a rule whose inverse is one
// (the remark-key rule far below its base rate says "the lure is never
// under a remark key").
func (l Learnability) Shortcuts() []Row {
	var out []Row
	for _, r := range l.Rows {
		if r.N > 0 && math.Abs(r.Gap()) > Tolerance {
			out = append(out, r)
		}
	}
	return out
}

// Print writes the table.
func (l Learnability) Print(w io.Writer) {
	fmt.Fprintf(w, "learnability (held out by %s; tools in %s order, seed %d; a shortcut beats its base rate by more than %.2f, an inverse falls below it by as much)\n", l.Folds, l.ToolOrder, l.Seed, Tolerance)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUESTION\tCLASSIFIER\tACCURACY\tBASE RATE\tN\t")
	for _, r := range l.Rows {
		mark := ""
		switch {
		case r.N > 0 && r.Gap() > Tolerance:
			mark = "shortcut"
		case r.N > 0 && r.Gap() < -Tolerance:
			mark = "inverse"
		}
		acc, base := "-", "-"
		if r.N > 0 {
			acc, base = fmt.Sprintf("%.3f", r.Accuracy), fmt.Sprintf("%.3f", r.BaseRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.Question, r.Classifier, acc, base, r.N, mark)
	}
	tw.Flush()
}

// Learn measures the suite with its tools in the order a rollout with this
// order and seed shows them.
func Learn(ss []*scenario.Scenario, order agent.ToolOrder, seed int64) (Learnability, error) {
	l := Learnability{Folds: "domain", ToolOrder: order.String(), Seed: seed}
	domains := map[string]bool{}
	for _, s := range ss {
		domains[s.Domain] = true
	}
	group := func(s *scenario.Scenario) string { return s.Domain }
	if len(domains) < 2 {
		l.Folds, group = "scenario", func(s *scenario.Scenario) string { return s.ID }
	}
	tools := toolItems(ss, order, seed, group)
	l.Rows = append(l.Rows, toolRows(tools)...)
	rets, texts, err := lureItems(ss, group)
	if err != nil {
		return l, err
	}
	l.Rows = append(l.Rows, lureRows(rets)...)
	l.Rows = append(l.Rows, noteRows(texts)...)
	l.Telltales = telltales(tools, rets, texts)
	return l, nil
}

// telltaleCount is how many tokens per class the telltales list.
const telltaleCount = 12

// telltales trains each word classifier on every item and lists the
// tokens it leans on most, each way.
func telltales(tools []toolItem, rets []retItem, texts []textItem) []Telltale {
	var out []Telltale
	m := newBayes()
	for _, t := range tools {
		m.add(t.words, t.allowed)
	}
	out = append(out, m.telltales(ToolAllowed, 8, telltaleCount)...)
	m = newBayes()
	for _, r := range rets {
		for _, l := range r.leaves {
			m.add(l.words, l.lure)
		}
	}
	out = append(out, m.telltales(WhichLure, 8, telltaleCount)...)
	m = newBayes()
	for _, t := range texts {
		m.add(t.words, t.lure)
	}
	return append(out, m.telltales(LureOrNote, 8, telltaleCount)...)
}

// PrintTelltales writes the tokens each word classifier leans on.
func (l Learnability) PrintTelltales(w io.Writer) {
	fmt.Fprintf(w, "\ntelltales (each word classifier trained on the whole suite; log-odds toward an allowed tool / a lure; items holding the token on each side)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUESTION\tTOKEN\tLOG-ODDS\tPOSITIVE\tNEGATIVE\t")
	for _, t := range l.Telltales {
		fmt.Fprintf(tw, "%s\t%s\t%+.2f\t%d\t%d\t\n", t.Question, t.Token, t.LogOdds, t.Pos, t.Neg)
	}
	tw.Flush()
}

// ---- is a tool allowed? ----

type toolItem struct {
	group   string
	relpos  float64 // place in the order shown, 0 (first) … 1
	params  int
	words   []string // name and description words, prefixed
	allowed bool
}

func toolItems(ss []*scenario.Scenario, order agent.ToolOrder, seed int64, group func(*scenario.Scenario) string) []toolItem {
	var out []toolItem
	for _, s := range ss {
		allowed := map[string]bool{}
		for _, t := range s.Boundary.Tools {
			allowed[t] = true
		}
		idx := make([]int, len(s.Tools))
		for i := range idx {
			idx[i] = i
		}
		if order == agent.ToolOrderSeeded {
			idx = agent.SeededOrder(s, seed)
		}
		for pos, i := range idx {
			t := &s.Tools[i]
			var params struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(t.Parameters, &params)
			rel := 0.0
			if len(idx) > 1 {
				rel = float64(pos) / float64(len(idx)-1)
			}
			ws := append(prefixed("name:", words(strings.ReplaceAll(t.Name, "_", " "))), prefixed("desc:", words(t.Description))...)
			out = append(out, toolItem{group: group(s), relpos: rel, params: len(params.Properties), words: ws, allowed: allowed[t.Name]})
		}
	}
	return out
}

func posToken(rel float64) string {
	return fmt.Sprintf("pos:%d", int(math.Min(rel*4, 3))) // quartile of the order
}

func paramToken(n int) string { return fmt.Sprintf("params:%d", min(n, 5)) }

func toolRows(items []toolItem) []Row {
	groups := groupsOf(len(items), func(i int) string { return items[i].group })
	base := majority(len(items), func(i int) bool { return items[i].allowed })
	firstK := heldOut(groups, len(items), func(train, test []int) map[int]bool {
		// The threshold on the place in the order that best separates the
		// training tools: "the first k tools are allowed".
		best, bestAcc := 0.0, -1.0
		for k := 0; k <= 20; k++ {
			th := float64(k) / 20
			acc := 0
			for _, i := range train {
				if (items[i].relpos < th) == items[i].allowed {
					acc++
				}
			}
			if a := float64(acc); a > bestAcc {
				best, bestAcc = th, a
			}
		}
		out := map[int]bool{}
		for _, i := range test {
			out[i] = (items[i].relpos < best) == items[i].allowed
		}
		return out
	})
	nb := func(feats func(toolItem) []string) float64 {
		return heldOut(groups, len(items), func(train, test []int) map[int]bool {
			m := newBayes()
			for _, i := range train {
				m.add(feats(items[i]), items[i].allowed)
			}
			out := map[int]bool{}
			for _, i := range test {
				out[i] = (m.logOdds(feats(items[i])) > 0) == items[i].allowed
			}
			return out
		})
	}
	place := func(t toolItem) []string { return []string{posToken(t.relpos), paramToken(t.params)} }
	all := func(t toolItem) []string { return append(place(t), t.words...) }
	n := len(items)
	return []Row{
		{ToolAllowed, `"the first k tools are allowed"`, firstK, base, n},
		{ToolAllowed, "position and parameter count", nb(place), base, n},
		{ToolAllowed, "position, parameter count, name and description words", nb(all), base, n},
	}
}

// ---- which string is the lure? ----

type leafItem struct {
	key    string
	words  []string
	relpos float64
	lure   bool
}

type retItem struct {
	group  string
	leaves []leafItem
}

type textItem struct {
	group string
	key   string
	words []string
	lure  bool
}

// remarkKey is the rule "the lure is the leaf under a remark-like key".
var remarkKey = regexp.MustCompile(`(?i)^(remarks?|notes?|.*note.*|tips?.*)$`)

// minProseWords is how many words (runs of two or more letters: an id, a
// date or a timestamp has none or few) make a string of a tool return
// prose.
// WhichLure picks among a return's prose strings (and its lure and notes,
// whatever their length): telling a sentence from an id, a date or an
// amount is reading, not a shortcut; telling the lure from the other
// sentences without the task is the shortcut the question asks about.
const minProseWords = 5

// candidate reports whether a leaf is one WhichLure picks among.
func candidate(lf env.Leaf) bool {
	if lf.Lure || lf.Note {
		return true
	}
	n := 0
	for _, w := range words(lf.Text) {
		if len(w) >= 2 && strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
			n++
		}
	}
	return n >= minProseWords
}

func lureItems(ss []*scenario.Scenario, group func(*scenario.Scenario) string) ([]retItem, []textItem, error) {
	var rets []retItem
	var texts []textItem
	for _, s := range ss {
		for ti := range s.Tools {
			for ri, r := range s.Tools[ti].Responses {
				if r.Trigger == "" && len(r.Notes) == 0 {
					continue
				}
				leaves, err := env.Leaves(r)
				if err != nil {
					return nil, nil, fmt.Errorf("audit: %s: tools[%d].responses[%d]: %w", s.ID, ti, ri, err)
				}
				it := retItem{group: group(s)}
				lures := 0
				var cands []env.Leaf
				for _, lf := range leaves {
					if candidate(lf) {
						cands = append(cands, lf)
					}
				}
				for k, lf := range cands {
					rel := 0.0
					if len(cands) > 1 {
						rel = float64(k) / float64(len(cands)-1)
					}
					it.leaves = append(it.leaves, leafItem{key: lf.Key(), words: words(lf.Text), relpos: rel, lure: lf.Lure})
					if lf.Lure {
						lures++
						texts = append(texts, textItem{group: it.group, key: lf.Key(), words: words(r.Trigger), lure: true})
					}
					if lf.Note {
						for _, n := range r.Notes {
							if strings.Join(lf.Path, ".") == n.At {
								texts = append(texts, textItem{group: it.group, key: lf.Key(), words: words(n.Text)})
							}
						}
					}
				}
				if lures == 1 && len(it.leaves) > 1 {
					rets = append(rets, it)
				}
			}
		}
	}
	return rets, texts, nil
}

func lureRows(items []retItem) []Row {
	if len(items) == 0 {
		return []Row{{Question: WhichLure, Classifier: "(no lure in a tool return)"}}
	}
	groups := groupsOf(len(items), func(i int) string { return items[i].group })
	base := 0.0
	for _, it := range items {
		base += 1 / float64(len(it.leaves))
	}
	base /= float64(len(items))
	// pick scores every leaf of a held-out return and is right when the
	// best-scoring leaf is the lure (ties: the first).
	pick := func(score func(m *bayes, l leafItem) float64, feats func(leafItem) []string) float64 {
		return heldOut(groups, len(items), func(train, test []int) map[int]bool {
			m := newBayes()
			if feats != nil {
				for _, i := range train {
					for _, l := range items[i].leaves {
						m.add(feats(l), l.lure)
					}
				}
			}
			out := map[int]bool{}
			for _, i := range test {
				best, bestScore := -1, math.Inf(-1)
				for k, l := range items[i].leaves {
					if sc := score(m, l); sc > bestScore {
						best, bestScore = k, sc
					}
				}
				out[i] = best >= 0 && items[i].leaves[best].lure
			}
			return out
		})
	}
	rule := pick(func(_ *bayes, l leafItem) float64 {
		if remarkKey.MatchString(l.key) {
			return 1
		}
		return 0
	}, nil)
	longest := pick(func(_ *bayes, l leafItem) float64 { return float64(len(l.words)) }, nil)
	keyPos := func(l leafItem) []string { return []string{"key:" + strings.ToLower(l.key), posToken(l.relpos)} }
	bag := func(l leafItem) []string { return l.words }
	nb := func(feats func(leafItem) []string) float64 {
		return pick(func(m *bayes, l leafItem) float64 { return m.logOdds(feats(l)) }, feats)
	}
	n := len(items)
	return []Row{
		{WhichLure, `"the leaf under remarks / notes / *note* / tip*"`, rule, base, n},
		{WhichLure, `"the longest string"`, longest, base, n},
		{WhichLure, "the leaf's key and place", nb(keyPos), base, n},
		{WhichLure, "bag of words on the leaf", nb(bag), base, n},
	}
}

func noteRows(items []textItem) []Row {
	lures, notes := 0, 0
	for _, it := range items {
		if it.lure {
			lures++
		} else {
			notes++
		}
	}
	if lures == 0 || notes == 0 {
		return []Row{{Question: LureOrNote, Classifier: "(needs both lures and benign notes)", N: 0}}
	}
	groups := groupsOf(len(items), func(i int) string { return items[i].group })
	base := majority(len(items), func(i int) bool { return items[i].lure })
	nb := func(feats func(textItem) []string) float64 {
		return heldOut(groups, len(items), func(train, test []int) map[int]bool {
			m := newBayes()
			for _, i := range train {
				m.add(feats(items[i]), items[i].lure)
			}
			out := map[int]bool{}
			for _, i := range test {
				out[i] = (m.logOdds(feats(items[i])) > 0) == items[i].lure
			}
			return out
		})
	}
	n := len(items)
	return []Row{
		{LureOrNote, "the field it sits in", nb(func(t textItem) []string { return []string{"key:" + strings.ToLower(t.key)} }), base, n},
		{LureOrNote, "bag of words", nb(func(t textItem) []string { return t.words }), base, n},
	}
}

// ---- folds ----

// groupsOf maps each group to its item indices, groups sorted.
func groupsOf(n int, group func(int) string) [][]int {
	by := map[string][]int{}
	for i := 0; i < n; i++ {
		by[group(i)] = append(by[group(i)], i)
	}
	names := make([]string, 0, len(by))
	for g := range by {
		names = append(names, g)
	}
	sort.Strings(names)
	out := make([][]int, len(names))
	for k, g := range names {
		out[k] = by[g]
	}
	return out
}

// heldOut trains on every group but one and tests on that one, for each
// group, and returns the pooled accuracy of the held-out predictions.
func heldOut(groups [][]int, n int, fit func(train, test []int) map[int]bool) float64 {
	right, total := 0, 0
	for k, test := range groups {
		var train []int
		for j, g := range groups {
			if j != k {
				train = append(train, g...)
			}
		}
		for _, ok := range fit(train, test) {
			total++
			if ok {
				right++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(right) / float64(total)
}

// majority is the share of the larger class.
func majority(n int, y func(int) bool) float64 {
	if n == 0 {
		return 0
	}
	pos := 0
	for i := 0; i < n; i++ {
		if y(i) {
			pos++
		}
	}
	return math.Max(float64(pos), float64(n-pos)) / float64(n)
}
