// Package mdtext escapes names (scenario ids, checkpoint and run names,
// paths, tool names) for the Markdown antidrift writes: report.md and the
// dataset cards. A name is data, never markup: it must not open HTML, a
// link, emphasis or a code span, and must not break a table row or a line.
package mdtext

import (
	"strings"
	"unicode"
)

// Escape returns s as literal inline Markdown text, safe in a table cell:
// ASCII punctuation that Markdown or HTML reads (| \ ` * _ [ ] < > # ! ~ &)
// is backslash-escaped, and newlines and other control characters become
// spaces.
func Escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || unicode.IsControl(r):
			b.WriteByte(' ')
		case strings.ContainsRune("|\\`*_[]<>#!~&", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Code returns s as an inline code span: fenced with one backtick more
// than its longest run of backticks, control characters as spaces.
func Code(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
