package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// docCommand is one runnable command of a ```sh test block.
type docCommand struct {
	file string
	line int
	args []string
}

// docFiles are the documentation files, README.md first, then docs/*.md by
// name (relative to the repository root).
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	slices.Sort(pages)
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, "docs/"+filepath.Base(p))
	}
	return files
}

// parseDocCommands reads the ```sh test blocks of a Markdown file (see
// docs/README.md for the convention).
func parseDocCommands(name, text string) ([]docCommand, error) {
	var out []docCommand
	lines := strings.Split(text, "\n")
	inBlock, runnable := false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if !inBlock {
				inBlock = true
				info := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "```"))
				runnable = len(info) == 2 && info[0] == "sh" && info[1] == "test"
			} else {
				inBlock, runnable = false, false
			}
			continue
		}
		if !runnable {
			continue
		}
		start := i + 1
		cmd := strings.TrimSpace(l)
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
		}
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		if j := strings.Index(cmd, " # "); j >= 0 {
			cmd = strings.TrimSpace(cmd[:j])
		}
		words, err := shellWords(cmd)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, start, err)
		}
		if len(words) == 0 || words[0] != "antidrift" {
			return nil, fmt.Errorf("%s:%d: a ```sh test block holds only antidrift commands, not %q", name, start, cmd)
		}
		out = append(out, docCommand{file: name, line: start, args: words[1:]})
	}
	if inBlock {
		return nil, fmt.Errorf("%s: unclosed code block", name)
	}
	return out, nil
}

// shellWords splits a command line as sh would for the plain words and
// quotes the docs use (no variables, no substitutions).
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>$`", r):
			return nil, fmt.Errorf("shell syntax %q is not supported in a runnable example", r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestParseDocCommands(t *testing.T) {
	text := "x\n```sh\nantidrift rollout RUN... [--x]\n```\n```sh test\n# a comment\nantidrift score 'a b' \\\n  --by checkpoint   # why\n\nantidrift pairs r --out p\n```\n"
	cmds, err := parseDocCommands("f.md", text)
	require.NoError(t, err)
	require.Len(t, cmds, 2)
	require.Equal(t, docCommand{file: "f.md", line: 7, args: []string{"score", "a b", "--by", "checkpoint"}}, cmds[0])
	require.Equal(t, 10, cmds[1].line)
	_, err = parseDocCommands("f.md", "```sh test\nmake demo\n```\n")
	require.ErrorContains(t, err, "f.md:2: a ```sh test block holds only antidrift commands")
	_, err = parseDocCommands("f.md", "```sh test\nantidrift score a | head\n```\n")
	require.ErrorContains(t, err, "f.md:2:")
	_, err = parseDocCommands("f.md", "```sh test\nantidrift score\n")
	require.ErrorContains(t, err, "unclosed")
}

// TestDocsCommands runs every ```sh test command of README.md and docs/ in
// one scratch folder holding a small demo.
func TestDocsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the documented commands")
	}
	var cmds []docCommand
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("../..", f))
		require.NoError(t, err)
		c, err := parseDocCommands(f, string(b))
		require.NoError(t, err)
		cmds = append(cmds, c...)
	}
	require.GreaterOrEqual(t, len(cmds), 10, "the docs hold runnable examples")

	sim, err := os.ReadFile("../../docs/checkpoints.sim.json")
	require.NoError(t, err)
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.MkdirAll("docs", 0o755))
	require.NoError(t, os.WriteFile("docs/checkpoints.sim.json", sim, 0o644))
	runDoc := func(args ...string) (string, error) {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		return out.String(), err
	}
	// The documented commands read the demo's output (`demo --rollouts 2`,
	// the shared demo) where the docs put it.
	copyDemo(t, "antidrift-demo")

	for _, c := range cmds {
		var args []string
		for _, a := range c.args {
			if strings.ContainsAny(a, "*?[") {
				m, err := filepath.Glob(a)
				require.NoError(t, err)
				if len(m) == 0 {
					t.Errorf("%s:%d: %s matches nothing", c.file, c.line, a)
				}
				args = append(args, m...)
				continue
			}
			args = append(args, a)
		}
		out, err := runDoc(args...)
		if err != nil {
			t.Errorf("%s:%d: antidrift %s: %v\n%s", c.file, c.line, strings.Join(c.args, " "), err, out)
		}
	}
}

// pendingDocs are pages that work in progress on other branches writes; the
// README links them already. Remove a name when its page lands.
var pendingDocs = []string{"docs/guarantees.md"}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link in README.md and docs/ names a file
// that exists.
func TestDocsLinks(t *testing.T) {
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("../..", f))
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, frag, _ := strings.Cut(target, "#")
			rel := f
			if target != "" {
				rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), target)))
			}
			if slices.Contains(pendingDocs, rel) {
				continue
			}
			body, err := os.ReadFile(filepath.Join("../..", rel))
			if err != nil {
				if _, serr := os.Stat(filepath.Join("../..", rel)); serr != nil {
					t.Errorf("%s: link %s: %s does not exist", f, m[1], rel)
				}
				continue
			}
			if frag != "" && strings.HasSuffix(rel, ".md") && !slices.Contains(headingAnchors(string(body)), frag) {
				t.Errorf("%s: link %s: %s has no heading #%s", f, m[1], rel, frag)
			}
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings:
// lower case, letters, digits, '-' and '_' kept, spaces to '-'.
func headingAnchors(md string) []string {
	var out []string
	inBlock := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
		}
		if inBlock || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		out = append(out, b.String())
	}
	return out
}

func TestHeadingAnchors(t *testing.T) {
	require.Equal(t, []string{"antidrift-pareto", "the-drcsr-front", "pairs-and-rewards-input-and-output"},
		headingAnchors("# `antidrift pareto`\n```\n# not a heading\n```\n## The DR–CSR front\n### `pairs` and `rewards`: input and output\n"))
}

// TestReadmeStaysAFirstScreen: the README stays small and maps the docs.
func TestReadmeStaysAFirstScreen(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Less(t, len(b), 25*1024, "README.md is for a newcomer's first screen; move detail into docs/")
	s := string(b)
	for _, want := range []string{"make demo", "make test", "## A worked example", "## Documentation",
		"docs/scenarios.md", "docs/rollout.md", "docs/scoring.md", "docs/datasets.md", "docs/benchmarks.md"} {
		require.Contains(t, s, want)
	}
}
