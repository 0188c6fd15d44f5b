package skill

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaJSON is the JSON Schema of the library format.
//
//go:embed library.schema.json
var SchemaJSON []byte

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
)

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed", url)
}

func formatSchema() *jsonschema.Schema {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			panic(fmt.Sprintf("skill: embedded schema: %v", err))
		}
		c := jsonschema.NewCompiler()
		c.UseLoader(noLoader{})
		if err := c.AddResource("library.schema.json", doc); err != nil {
			panic(fmt.Sprintf("skill: embedded schema: %v", err))
		}
		schema = c.MustCompile("library.schema.json")
	})
	return schema
}

// Parse decodes and validates one library file. Every problem names the
// file and a JSON path (or a line and column for syntax errors).
func Parse(name string, data []byte) (*Library, scenario.Problems) {
	if p := scenario.TextProblem(name, data); p != nil {
		return nil, scenario.Problems{*p}
	}
	doc, err := scenario.DecodeJSON(data)
	if err != nil {
		return nil, scenario.Problems{scenario.SyntaxProblem(name, data, err)}
	}
	if p := scenario.DuplicateKeyProblem(name, data); p != nil {
		return nil, scenario.Problems{*p}
	}
	var ps scenario.Problems
	if err := formatSchema().Validate(doc); err != nil {
		ps = scenario.SchemaProblems(name, doc, err)
	}
	var l Library
	if err := json.Unmarshal(data, &l); err != nil {
		if len(ps) == 0 {
			ps = scenario.Problems{scenario.SyntaxProblem(name, data, err)}
		}
		scenario.SortProblems(ps)
		return nil, ps
	}
	l.File = name
	ps = append(ps, Validate(&l)...)
	scenario.SortProblems(ps)
	if len(ps) > 0 {
		return nil, ps
	}
	return &l, nil
}

// LoadFile reads and validates a library file.
func LoadFile(path string) (*Library, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	l, ps := Parse(path, b)
	if len(ps) > 0 {
		return nil, ps
	}
	return l, nil
}

// Open resolves a library spec: "builtin:NAME" or a file path.
func Open(spec string) (*Library, error) {
	if name, ok := strings.CutPrefix(spec, "builtin:"); ok {
		return Builtin(name)
	}
	return LoadFile(spec)
}

// Hash is a stable fingerprint of a library: the SHA-256 of its canonical
// JSON. Runs record it so that a resumed run sees the same queries.
func Hash(l *Library) string {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err) // a loaded library always marshals
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Marshal writes a library as indented JSON, the file format.
func Marshal(l *Library) ([]byte, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
