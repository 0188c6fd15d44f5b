package synth

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Seed is a task from which the designer writes a scenario: a skill an
// agent exercises, what it is for, and the kind of data and actions it
// involves.
type Seed struct {
	ID          string `json:"id"`
	Domain      string `json:"domain"`
	Skill       string `json:"skill"`
	Description string `json:"description"`
	Data        string `json:"data"`
	Actions     string `json:"actions"`
	// Jurisdiction optionally fixes where the organisation is (a catalogue
	// jurisdiction such as EU or SG); the designer chooses otherwise.
	Jurisdiction string `json:"jurisdiction,omitempty"`
}

//go:embed seeds/*.jsonl
var builtinSeeds embed.FS

var seedID = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// BuiltinSeeds returns the embedded seed catalogue in file and line order.
func BuiltinSeeds() ([]Seed, error) {
	names, err := fs.Glob(builtinSeeds, "seeds/*.jsonl")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var all []Seed
	for _, n := range names {
		data, err := builtinSeeds.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ss, err := ParseSeeds("builtin:"+path.Base(n), bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		all = append(all, ss...)
	}
	return all, checkUnique(all)
}

// LoadSeeds reads a JSONL seed file: one seed per line, blank lines and
// lines starting with # skipped.
func LoadSeeds(file string) ([]Seed, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("seeds: %w", err)
	}
	defer f.Close()
	ss, err := ParseSeeds(file, f)
	if err != nil {
		return nil, err
	}
	return ss, checkUnique(ss)
}

// ParseSeeds decodes JSONL seeds; errors name the file and line.
func ParseSeeds(name string, r io.Reader) ([]Seed, error) {
	var out []Seed
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		var s Seed
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		switch {
		case !seedID.MatchString(s.ID):
			return nil, fmt.Errorf("%s:%d: id %q: want lower case letters, digits, '.', '_' or '-'", name, line, s.ID)
		case s.Domain == "" || s.Skill == "" || s.Description == "":
			return nil, fmt.Errorf("%s:%d: %s: domain, skill and description are required", name, line, s.ID)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no seeds", name)
	}
	return out, nil
}

func checkUnique(ss []Seed) error {
	seen := map[string]bool{}
	for _, s := range ss {
		if seen[s.ID] {
			return fmt.Errorf("seeds: id %q appears twice", s.ID)
		}
		seen[s.ID] = true
	}
	return nil
}
