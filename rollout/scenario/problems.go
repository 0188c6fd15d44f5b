package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Problem is one error found in one scenario file, located by a JSON path
// (for example "violations[2].tool") or, for syntax errors, a line and column.
type Problem struct {
	File string
	Line int // 0 when the problem has a JSON path instead
	Col  int
	Path string
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	if p.Path != "" {
		b.WriteString(": ")
		b.WriteString(p.Path)
	}
	b.WriteString(": ")
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every error found while loading; it is an error when non-empty.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns ps as an error, or nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// sortProblems orders problems by file, then line, then path, for stable output.
func sortProblems(ps Problems) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return pathLess(a.Path, b.Path)
	})
}

// pathLess compares JSON paths so that items[2] sorts before items[10].
func pathLess(a, b string) bool {
	ta, tb := splitPath(a), splitPath(b)
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if ta[i] == tb[i] {
			continue
		}
		na, ea := strconv.Atoi(ta[i])
		nb, eb := strconv.Atoi(tb[i])
		if ea == nil && eb == nil {
			return na < nb
		}
		return ta[i] < tb[i]
	}
	return len(ta) < len(tb)
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
}

// pathf builds a JSON path: pathf("tools[%d].responses[%d]", 1, 2).
func pathf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
