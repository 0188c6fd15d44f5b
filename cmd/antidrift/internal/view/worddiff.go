package view

import (
	"unicode"
	"unicode/utf8"
)

// diffOp is one run of a word diff: "=" in both texts, "-" only in the
// first, "+" only in the second.
type diffOp struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// maxDiffCells bounds the LCS table; past it the differing middle is shown
// as replaced whole (after the common start and end are taken off).
const maxDiffCells = 4 << 20

// wordDiff diffs a and b word by word: words (letters, digits, _), runs of
// white space and single other characters are the units, so a changed
// name or number shows as that word, not as its line. Concatenating the
// "=" and "-" runs gives a back, the "=" and "+" runs b.
func wordDiff(a, b string) []diffOp {
	ta, tb := tokens(a), tokens(b)
	// The common start and end need no table.
	pre := 0
	for pre < len(ta) && pre < len(tb) && ta[pre] == tb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ta)-pre && suf < len(tb)-pre && ta[len(ta)-1-suf] == tb[len(tb)-1-suf] {
		suf++
	}
	var out []diffOp
	add := func(op, text string) {
		if text == "" {
			return
		}
		if n := len(out); n > 0 && out[n-1].Op == op {
			out[n-1].Text += text
			return
		}
		out = append(out, diffOp{op, text})
	}
	for _, t := range ta[:pre] {
		add("=", t)
	}
	ma, mb := ta[pre:len(ta)-suf], tb[pre:len(tb)-suf]
	if (len(ma)+1)*(len(mb)+1) > maxDiffCells {
		for _, t := range ma {
			add("-", t)
		}
		for _, t := range mb {
			add("+", t)
		}
	} else {
		for _, o := range lcsOps(ma, mb) {
			add(o.Op, o.Text)
		}
	}
	for _, t := range ta[len(ta)-suf:] {
		add("=", t)
	}
	if out == nil {
		return []diffOp{}
	}
	return out
}

// lcsOps is the classic longest-common-subsequence diff of two token
// lists; deletions come before insertions within a change.
func lcsOps(a, b []string) []diffOp {
	n, m := len(a), len(b)
	// l[i][j] is the LCS length of a[i:] and b[j:].
	l := make([][]int32, n+1)
	for i := range l {
		l[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var out []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, diffOp{"=", a[i]})
			i++
			j++
		case l[i+1][j] >= l[i][j+1]:
			out = append(out, diffOp{"-", a[i]})
			i++
		default:
			out = append(out, diffOp{"+", b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffOp{"-", a[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffOp{"+", b[j]})
	}
	return out
}

// tokens splits s into words (letters, digits, _), runs of white space and
// single other characters.
func tokens(s string) []string {
	var out []string
	kind := func(r rune) int {
		switch {
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			return 1
		case unicode.IsSpace(r):
			return 2
		}
		return 0
	}
	start := 0
	for start < len(s) {
		r, w := utf8.DecodeRuneInString(s[start:])
		k := kind(r)
		end := start + w
		if k != 0 {
			for end < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[end:])
				if kind(r2) != k {
					break
				}
				end += w2
			}
		}
		out = append(out, s[start:end])
		start = end
	}
	return out
}
