package scenario

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaJSON is the JSON Schema of the scenario format.
//
//go:embed scenario.schema.json
var SchemaJSON []byte

var (
	formatOnce   sync.Once
	formatSchema *jsonschema.Schema
)

func formatValidator() *jsonschema.Schema {
	formatOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			panic(fmt.Sprintf("scenario: embedded schema: %v", err))
		}
		c := jsonschema.NewCompiler()
		c.UseLoader(refuseLoader{})
		if err := c.AddResource("scenario.schema.json", doc); err != nil {
			panic(fmt.Sprintf("scenario: embedded schema: %v", err))
		}
		formatSchema = c.MustCompile("scenario.schema.json")
	})
	return formatSchema
}

// Parse decodes one scenario file and validates it against the format and
// the semantic rules. It returns every problem found, each naming the file
// and a JSON path (or a line for syntax errors). cat may be nil for the
// built-in provisions catalogue.
func Parse(name string, data []byte, cat *provisions.Catalogue) (*Scenario, Problems) {
	return ParseWith(name, data, cat, Options{})
}

// Options change what loading accepts.
type Options struct {
	// AllowUnsafeProvenance loads scenarios in which a content-producing
	// (untrusted) tool sets an authorization variable, and marks them
	// UnsafeProvenance so that the environment honours it: the boundary
	// case where risk-aware gating must fail. Without it they are rejected.
	AllowUnsafeProvenance bool
}

// ParseWith is Parse with options.
func ParseWith(name string, data []byte, cat *provisions.Catalogue, opts Options) (*Scenario, Problems) {
	if cat == nil {
		cat = provisions.Builtin()
	}
	remember := rememberClean(cat)
	var sum [sha256.Size]byte
	if remember {
		sum = sha256.Sum256(data)
		if checkedBefore(sum) {
			var s Scenario
			if err := json.Unmarshal(data, &s); err == nil { // it decoded before: never fails
				s.File = name
				return withProvenance(&s, nil, opts)
			}
		}
	}
	if p := TextProblem(name, data); p != nil {
		return nil, Problems{*p}
	}
	doc, err := DecodeJSON(data)
	if err != nil {
		return nil, Problems{syntaxProblem(name, data, err)}
	}
	if p := DuplicateKeyProblem(name, data); p != nil {
		return nil, Problems{*p}
	}
	var ps Problems
	if err := formatValidator().Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, Problems{{File: name, Msg: err.Error()}}
		}
		ps = formatProblems(name, doc, ve)
	}
	var s Scenario
	if err := json.Unmarshal(data, &s); err != nil {
		// A value of the wrong type: the format problems usually say where.
		// When they do not (a whole number written 2.0 for an int field),
		// report the decoding error itself: never a nil scenario without a
		// problem.
		if len(ps) == 0 {
			ps = Problems{syntaxProblem(name, data, err)}
		}
		sortProblems(ps)
		return nil, ps
	}
	s.File = name
	// Semantic checks run even when the format is broken elsewhere (an enum
	// value, an unknown field), so that one pass reports every problem.
	ps = append(ps, check(&s, cat)...)
	if remember && len(ps) == 0 {
		markChecked(sum)
	}
	return withProvenance(&s, ps, opts)
}

// withProvenance ends a parse: a content-producing tool that sets an
// authorization variable is a problem unless opts allow it (the scenario
// is then marked), and the problems are sorted.
func withProvenance(s *Scenario, ps Problems, opts Options) (*Scenario, Problems) {
	if breaks := s.ProvenanceBreaks(); len(breaks) > 0 {
		if opts.AllowUnsafeProvenance {
			s.UnsafeProvenance = true
		} else {
			ps = append(ps, breaks...)
		}
	}
	sortProblems(ps)
	if len(ps) > 0 {
		return nil, ps
	}
	return s, nil
}

// syntaxProblem locates a JSON syntax error by line and column.
func syntaxProblem(name string, data []byte, err error) Problem {
	offset := int64(len(data))
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte: point at it, not past it.
		offset = max(se.Offset-1, 0)
	case errors.As(err, &te):
		offset = te.Offset
	}
	line, col := 1, 1
	for i := int64(0); i < offset && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || strings.Contains(msg, "unexpected EOF") {
		msg = "unexpected end of JSON input"
	}
	return Problem{File: name, Line: line, Col: col, Msg: "invalid JSON: " + msg}
}

// formatProblems turns schema validation errors into problems with paths in
// the style violations[2].tool.
func formatProblems(name string, doc any, ve *jsonschema.ValidationError) Problems {
	var ps Problems
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := Problem{File: name, Path: jsonPath(doc, e.InstanceLocation), Msg: e.ErrorKind.LocalizedString(printer)}
		if k := p.Path + "\x00" + p.Msg; !seen[k] {
			seen[k] = true
			ps = append(ps, p)
		}
	}
	walk(ve)
	return ps
}

// jsonPath renders an instance location, using [i] for array elements.
func jsonPath(doc any, loc []string) string {
	var b strings.Builder
	cur := doc
	for _, tok := range loc {
		switch v := cur.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			fmt.Fprintf(&b, "[%d]", i)
			if i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		case map[string]any:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			cur = v[tok]
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			cur = nil
		}
	}
	if b.Len() == 0 {
		return "(root)"
	}
	return b.String()
}

// MaxFileBytes caps the size of a scenario file (a scenario is a few KB;
// the cap keeps /dev/zero or a mistaken dataset from exhausting memory).
const MaxFileBytes = 16 << 20

// LoadFile loads and validates one scenario file. Only regular files are
// read (a FIFO, device or socket is refused, so nothing hangs), up to
// MaxFileBytes.
func LoadFile(path string, cat *provisions.Catalogue) (*Scenario, Problems) {
	return LoadFileWith(path, cat, Options{})
}

// LoadFileWith is LoadFile with options.
func LoadFileWith(path string, cat *provisions.Catalogue, opts Options) (*Scenario, Problems) {
	data, err := readRegular(path)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	return ParseWith(path, data, cat, opts)
}

func readRegular(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): scenarios are read from .json files", info.Mode().Type())
	}
	if info.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit of a scenario file", info.Size(), MaxFileBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("over the %d-byte limit of a scenario file", MaxFileBytes)
	}
	return data, nil
}

// Load loads scenarios from files and folders (folders recursively, files
// ending in .json), validates each, and checks that ids are unique across
// them. Scenarios come back sorted by id; problems are all problems found:
// every unreadable path, a folder holding no .json file, and no scenario
// at all are problems.
func Load(paths []string, cat *provisions.Catalogue) ([]*Scenario, Problems) {
	return LoadWith(paths, cat, Options{})
}

// LoadWith is Load with options.
func LoadWith(paths []string, cat *provisions.Catalogue, opts Options) ([]*Scenario, Problems) {
	var files []string
	var ps Problems
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			ps = append(ps, Problem{File: p, Msg: err.Error()})
			continue
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		found := 0
		var others []string
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil { // reported, and the walk goes on
				ps = append(ps, Problem{File: path, Msg: err.Error()})
				return nil
			}
			switch {
			case d.IsDir():
			case strings.HasSuffix(d.Name(), ".json"):
				files = append(files, path)
				found++
			default:
				others = append(others, d.Name())
			}
			return nil
		})
		if found == 0 {
			msg := "no scenario files (.json) in this folder"
			if len(others) > 0 {
				sort.Strings(others)
				if len(others) > 3 {
					others = append(others[:3], fmt.Sprintf("%d more", len(others)-3))
				}
				msg += "; skipped " + strings.Join(others, ", ") + " (scenarios are JSON files named *.json)"
			}
			ps = append(ps, Problem{File: p, Msg: msg})
		}
	}
	var out []*Scenario
	for _, f := range files {
		s, fps := LoadFileWith(f, cat, opts)
		ps = append(ps, fps...)
		if s != nil {
			out = append(out, s)
		}
	}
	if len(out) == 0 && len(ps) == 0 {
		ps = append(ps, Problem{File: strings.Join(paths, ","), Msg: "no scenarios: an empty suite"})
	}
	return finish(out, ps)
}

// LoadFS loads every .json file below root in fsys, as Load does. prefix is
// put before each file name in problems (for example "builtin:").
func LoadFS(fsys fs.FS, root, prefix string, cat *provisions.Catalogue) ([]*Scenario, Problems) {
	return LoadFSWith(fsys, root, prefix, cat, Options{})
}

// LoadFSWith is LoadFS with options.
func LoadFSWith(fsys fs.FS, root, prefix string, cat *provisions.Catalogue, opts Options) ([]*Scenario, Problems) {
	return LoadFSSelect(fsys, root, prefix, nil, cat, opts)
}

// LoadFSSelect is LoadFSWith over the files keep accepts (by path below
// fsys; nil keeps every file): a reader that needs a few scenarios of a
// large suite whose file names say their ids parses only those.
func LoadFSSelect(fsys fs.FS, root, prefix string, keep func(path string) bool, cat *provisions.Catalogue, opts Options) ([]*Scenario, Problems) {
	type file struct {
		path string
		data []byte
	}
	var files []file
	var ps Problems
	err := fs.WalkDir(fsys, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || (keep != nil && !keep(path)) {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		files = append(files, file{path, data})
		return nil
	})
	if err != nil {
		ps = append(ps, Problem{File: prefix + root, Msg: err.Error()})
	}
	// Parsing and validating is most of loading a suite: spread it over
	// the cores. Results keep the walk's order, and finish sorts both.
	parsed := make([]*Scenario, len(files))
	problems := make([]Problems, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				parsed[i], problems[i] = ParseWith(prefix+files[i].path, files[i].data, cat, opts)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []*Scenario
	for i := range files {
		ps = append(ps, problems[i]...)
		if parsed[i] != nil {
			out = append(out, parsed[i])
		}
	}
	return finish(out, ps)
}

// finish checks id uniqueness and sorts.
func finish(out []*Scenario, ps Problems) ([]*Scenario, Problems) {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].File < out[j].File
	})
	kept := out[:0]
	for i, s := range out {
		if i > 0 && out[i-1].ID == s.ID {
			ps = append(ps, Problem{File: s.File, Path: "id", Msg: fmt.Sprintf("duplicate scenario id %q (also in %s)", s.ID, out[i-1].File)})
			continue
		}
		kept = append(kept, s)
	}
	sortProblems(ps)
	return kept, ps
}
