package scenario_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// formatSchema is scenario.schema.json decoded as plain JSON.
func formatSchema(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(scenario.SchemaJSON, &doc))
	return doc
}

// node follows a path of keys through the schema document, resolving a
// "$ref": "#/$defs/NAME" wherever it meets one.
func node(t *testing.T, doc map[string]any, path ...string) map[string]any {
	t.Helper()
	cur := resolve(t, doc, doc)
	for _, k := range path {
		next, ok := cur[k].(map[string]any)
		require.True(t, ok, "schema has no object at %s", strings.Join(path, "."))
		cur = resolve(t, doc, next)
	}
	return cur
}

func resolve(t *testing.T, doc, n map[string]any) map[string]any {
	t.Helper()
	ref, ok := n["$ref"].(string)
	if !ok {
		return n
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	require.True(t, ok, "unexpected $ref %q", ref)
	def, ok := doc["$defs"].(map[string]any)[name].(map[string]any)
	require.True(t, ok, "$ref %q names no definition", ref)
	return resolve(t, doc, def)
}

type goField struct {
	name      string
	omitempty bool
	typ       reflect.Type
}

// jsonFields lists a struct's JSON fields from its tags; fields tagged "-"
// are not part of the format.
func jsonFields(t *testing.T, typ reflect.Type) []goField {
	t.Helper()
	var out []goField
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, ok := f.Tag.Lookup("json")
		require.True(t, ok, "%s.%s has no json tag", typ.Name(), f.Name)
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		require.NotEmpty(t, name, "%s.%s has an empty json name", typ.Name(), f.Name)
		out = append(out, goField{name: name, omitempty: strings.Contains(","+opts+",", ",omitempty,"), typ: f.Type})
	}
	return out
}

func stringSet(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			out = append(out, e.(string))
		}
	case map[string]any:
		for k := range v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// schemaTypes maps Go types to the schema node that describes them. The
// schema deliberately differs from a straight reading of the Go types only
// where noted in exceptions below.
var schemaTypes = []struct {
	typ  reflect.Type
	path []string // keys from the schema root; "$ref"s are followed
}{
	{reflect.TypeFor[scenario.Scenario](), nil},
	{reflect.TypeFor[scenario.Boundary](), []string{"properties", "boundary"}},
	{reflect.TypeFor[scenario.Tool](), []string{"$defs", "tool"}},
	{reflect.TypeFor[scenario.Response](), []string{"$defs", "response"}},
	{reflect.TypeFor[scenario.Effects](), []string{"$defs", "response", "properties", "effects"}},
	{reflect.TypeFor[scenario.Call](), []string{"$defs", "call"}},
	{reflect.TypeFor[scenario.Violation](), []string{"$defs", "violation"}},
	{reflect.TypeFor[scenario.Success](), []string{"properties", "success"}},
	{reflect.TypeFor[scenario.StateAssertion](), []string{"$defs", "state_assertion"}},
	{reflect.TypeFor[scenario.AnswerAssertions](), []string{"$defs", "answer_assertions"}},
	{reflect.TypeFor[scenario.Constraint](), []string{"$defs", "constraint"}},
	{reflect.TypeFor[scenario.Window](), []string{"$defs", "constraint", "properties", "window"}},
	{reflect.TypeFor[scenario.Note](), []string{"$defs", "note"}},
	{reflect.TypeFor[scenario.Count](), []string{"$defs", "count"}},
	{reflect.TypeFor[scenario.TextCheck](), []string{"$defs", "text_check"}},
	{reflect.TypeFor[scenario.CallAssertion](), []string{"$defs", "call_assertion"}},
	{reflect.TypeFor[scenario.Skill](), []string{"properties", "skills", "items"}},
	{reflect.TypeFor[scenario.Injection](), []string{"properties", "injections", "items"}},
	{reflect.TypeFor[scenario.Probes](), []string{"properties", "probes"}},
	{reflect.TypeFor[scenario.ProbeCall](), []string{"$defs", "probe_call"}},
	{reflect.TypeFor[scenario.ProbeCase](), []string{"$defs", "probe_case"}},
}

// requiredExceptions lists, per type, the JSON fields whose "required"
// status in the schema deliberately differs from "no omitempty in Go". Each
// entry says why. (Today there are none: the schema's extra strictness is
// expressed with other keywords, listed in TestSchemaStricterThanGo.)
var requiredExceptions = map[string]map[string]string{}

func TestSchemaMatchesGoTypes(t *testing.T) {
	doc := formatSchema(t)
	for _, st := range schemaTypes {
		t.Run(st.typ.Name(), func(t *testing.T) {
			n := node(t, doc, st.path...)
			assert.Equal(t, "object", n["type"], "schema node is not an object")
			assert.Equal(t, false, n["additionalProperties"], "schema node accepts unknown fields")

			fields := jsonFields(t, st.typ)
			var names, required []string
			for _, f := range fields {
				names = append(names, f.name)
				req := !f.omitempty
				if why, ok := requiredExceptions[st.typ.Name()][f.name]; ok {
					t.Logf("%s: required differs on purpose: %s", f.name, why)
					req = !req
				}
				if req {
					required = append(required, f.name)
				}
			}
			sort.Strings(names)
			sort.Strings(required)
			assert.Equal(t, names, stringSet(n["properties"]), "JSON fields of %s vs schema properties", st.typ.Name())
			assert.Equal(t, required, stringSet(n["required"]), "fields without omitempty in %s vs schema required", st.typ.Name())

			props, _ := n["properties"].(map[string]any)
			for _, f := range fields {
				p, ok := props[f.name].(map[string]any)
				if !ok {
					continue
				}
				checkKind(t, doc, st.typ.Name()+"."+f.name, f.typ, resolve(t, doc, p))
			}
		})
	}
}

// checkKind checks that a schema property can hold the Go field's values:
// strings for strings, arrays for slices, and so on. json.RawMessage and
// maps of raw messages take any JSON (or any object).
func checkKind(t *testing.T, doc map[string]any, name string, typ reflect.Type, p map[string]any) {
	t.Helper()
	if typ == reflect.TypeFor[json.RawMessage]() {
		// Raw JSON: the schema may restrict it (state is an object) or not.
		return
	}
	if typ.Kind() == reflect.Pointer {
		// An optional value: the schema describes what it points to.
		checkKind(t, doc, name, typ.Elem(), p)
		return
	}
	want := map[reflect.Kind]string{
		reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Float64: "number",
		reflect.Slice: "array", reflect.Map: "object", reflect.Struct: "object",
	}[typ.Kind()]
	require.NotEmpty(t, want, "%s: unhandled Go kind %s", name, typ.Kind())
	if enum, ok := p["enum"].([]any); ok {
		for _, e := range enum {
			_, isString := e.(string)
			assert.True(t, isString && typ.Kind() == reflect.String, "%s: enum value %v does not fit %s", name, e, typ)
		}
		return
	}
	assert.Equal(t, want, p["type"], "%s: Go %s", name, typ)
	if typ.Kind() == reflect.Slice {
		items, ok := p["items"].(map[string]any)
		require.True(t, ok, "%s: array without items", name)
		checkKind(t, doc, name+"[]", typ.Elem(), resolve(t, doc, items))
	}
}

// TestSchemaEnumsMatchGo keeps the enums of the schema equal to the Go
// constants that the rest of the toolkit switches on.
func TestSchemaEnumsMatchGo(t *testing.T) {
	doc := formatSchema(t)
	strs := func(xs ...string) []string { sort.Strings(xs); return xs }

	risks := stringSet(node(t, doc, "$defs", "tool", "properties", "risk")["enum"])
	assert.Equal(t, strs("low", "medium", "high"), risks)
	for _, r := range risks {
		assert.True(t, scenario.Risk(r).Valid(), r)
	}
	assert.False(t, scenario.Risk("critical").Valid())

	var drifts, kinds []string
	for _, d := range scenario.DriftTypes {
		drifts = append(drifts, string(d))
		assert.True(t, d.Valid())
	}
	for _, k := range scenario.ViolationKinds {
		kinds = append(kinds, string(k))
		assert.True(t, k.Valid())
	}
	assert.Equal(t, strs(drifts...), stringSet(node(t, doc, "$defs", "violation", "properties", "drift")["enum"]))
	assert.Equal(t, strs(kinds...), stringSet(node(t, doc, "$defs", "violation", "properties", "kind")["enum"]))

	priv := node(t, doc, "$defs", "tool", "properties", "privilege")
	assert.EqualValues(t, 0, priv["minimum"])
	assert.EqualValues(t, 4, priv["maximum"])
}

// TestSchemaStricterThanGo documents the places where the schema says more
// than the Go types can: a file the Go decoder would accept is refused.
func TestSchemaStricterThanGo(t *testing.T) {
	doc := formatSchema(t)
	// At least one step on the compliant path and at least one tool.
	assert.EqualValues(t, 1, node(t, doc, "properties", "required_calls")["minItems"])
	assert.EqualValues(t, 1, node(t, doc, "properties", "tools")["minItems"])
	// A state assertion has its path and exactly one of contains,
	// not_contains and equals (all three are omitempty in Go).
	sa := node(t, doc, "$defs", "state_assertion")
	// "Exactly one operator" is checked by the validator, which can say so
	// in words, rather than by minProperties/maxProperties.
	assert.Nil(t, sa["minProperties"])
	assert.Nil(t, sa["maxProperties"])
	// Tool names follow OpenAI's function-name rule.
	assert.Equal(t, "^[A-Za-z_][A-Za-z0-9_-]{0,63}$", node(t, doc, "$defs", "name")["pattern"])
	// state is an object, though Go keeps it as raw JSON.
	assert.Equal(t, "object", node(t, doc, "properties", "state")["type"])
}

func compileFormatSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(scenario.SchemaJSON))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("scenario.schema.json", doc))
	s, err := c.Compile("scenario.schema.json")
	require.NoError(t, err, "scenario.schema.json does not compile")
	return s
}

func TestSchemaCompiles(t *testing.T) {
	s := compileFormatSchema(t)
	assert.NotNil(t, s)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(scenario.SchemaJSON, &doc))
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
}

// Every built-in scenario, and the valid fixture, validate against the
// published schema on its own (as an editor or another tool would use it).
func TestBuiltinScenariosValidateAgainstSchema(t *testing.T) {
	s := compileFormatSchema(t)
	n := 0
	err := fs.WalkDir(suite.FS(), "scenarios", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		n++
		t.Run(path, func(t *testing.T) {
			data, err := fs.ReadFile(suite.FS(), path)
			require.NoError(t, err)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			require.NoError(t, err)
			assert.NoError(t, s.Validate(inst))
		})
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, n, "no built-in scenario found")

	for _, f := range []string{validFile, "testdata/invalid/dup/first.json"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		assert.NoError(t, s.Validate(inst), f)
	}
}

// The semantic-only corpus files are well-formed: the schema alone accepts
// them, so their problems come from the validator's own checks.
func TestSchemaAcceptsSemanticCorpus(t *testing.T) {
	s := compileFormatSchema(t)
	for _, name := range []string{
		"unknown-tool-boundary.json", "unknown-provision.json", "untraceable-parameter.json",
		"required-overlaps-violation.json", "goal-never-set.json", "duplicate-tool-name.json",
	} {
		data, err := os.ReadFile("testdata/invalid/" + name)
		require.NoError(t, err)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		assert.NoError(t, s.Validate(inst), name)
	}
}
