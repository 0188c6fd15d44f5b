package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ArgSchema validates a tool's arguments against its parameters schema.
type ArgSchema struct {
	full    *jsonschema.Schema // as declared
	partial *jsonschema.Schema // with the top-level "required" dropped, for argument subsets

	fullMemo, partialMemo validMemo
}

var printer = message.NewPrinter(language.English)

// refuseLoader keeps schemas self-contained: a $ref to a file or URL is an
// error, never a read from disk or the network.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed: tool schemas must be self-contained", url)
}

// compiled memoises CompileArgSchema by the parameters' exact bytes: a
// compiled schema is immutable and safe for concurrent use, and the same
// tool's parameters are compiled by validation, the environment and the
// drift detector of every run (compiling checks the schema against its
// meta-schema, by far the costliest part of preparing a scenario). It holds
// one entry per distinct parameters text the process has compiled; failures
// are not kept.
var compiled sync.Map // string(params) → *ArgSchema

// CompileArgSchema compiles a tool's parameters (a JSON Schema, draft 2020-12
// unless it says otherwise). The error names the first problem found.
func CompileArgSchema(params json.RawMessage) (*ArgSchema, error) {
	if as, ok := compiled.Load(string(params)); ok {
		return as.(*ArgSchema), nil
	}
	as, err := compileArgSchema(params)
	if err != nil {
		return nil, err
	}
	compiled.Store(string(params), as)
	return as, nil
}

func compileArgSchema(params json.RawMessage) (*ArgSchema, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return nil, fmt.Errorf("missing")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON Schema object")
	}
	if t, ok := obj["type"]; !ok || t != "object" {
		return nil, fmt.Errorf(`must have "type": "object" (tool arguments are a JSON object)`)
	}
	full, err := compile(obj)
	if err != nil {
		return nil, err
	}
	relaxed := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "required" {
			relaxed[k] = v
		}
	}
	partial, err := compile(relaxed)
	if err != nil {
		return nil, err
	}
	return &ArgSchema{full: full, partial: partial}, nil
}

func compile(doc map[string]any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	c.RegisterVocabulary(timeFormatVocab)
	c.AssertVocabs()
	if err := c.AddResource("parameters.json", doc); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	s, err := c.Compile("parameters.json")
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %s", schemaErrorText(err))
	}
	return s, nil
}

// Validate checks complete call arguments, as a model sends them.
func (a *ArgSchema) Validate(args map[string]any) error {
	return a.fullMemo.validate(a.full, nonNil(args))
}

// ValidateSubset checks an argument subset: present values must be valid,
// absent required ones are fine.
func (a *ArgSchema) ValidateSubset(args map[string]any) error {
	return a.partialMemo.validate(a.partial, nonNil(args))
}

func nonNil(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

func validateArgsUncached(s *jsonschema.Schema, args map[string]any) error {
	err := s.Validate(args)
	if err == nil {
		return nil
	}
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		return fmt.Errorf("%s", strings.Join(leafMessages(ve), "; "))
	}
	return err
}

// leafMessages flattens a validation error tree into "at /path: message"
// lines, sorted so that messages are deterministic.
func leafMessages(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return out
}

func schemaErrorText(err error) string {
	if se, ok := err.(*jsonschema.SchemaValidationError); ok {
		if ve, ok := se.Err.(*jsonschema.ValidationError); ok {
			return strings.Join(leafMessages(ve), "; ")
		}
		return se.Err.Error()
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
