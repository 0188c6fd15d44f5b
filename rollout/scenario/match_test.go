package scenario_test

import (
	"encoding/json"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decode parses JSON text as the package does (numbers kept as json.Number).
func decode(t *testing.T, text string) any {
	t.Helper()
	v, err := scenario.DecodeJSON([]byte(text))
	require.NoError(t, err, text)
	return v
}

// rawArgs splits a JSON object into the per-argument raw messages the
// scenario format stores.
func rawArgs(t *testing.T, text string) map[string]json.RawMessage {
	t.Helper()
	if text == "" {
		return nil
	}
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(text), &m), text)
	return m
}

func callArgs(t *testing.T, text string) map[string]any {
	t.Helper()
	m, err := scenario.ParseArgs([]byte(text))
	require.NoError(t, err, text)
	return m
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"integer and decimal", `1`, `1.0`, true},
		{"integer and exponent", `1`, `1e0`, true},
		{"integer and scaled exponent", `1`, `10e-1`, true},
		{"decimal and upper-case exponent", `1.0`, `0.1E1`, true},
		{"hundred", `1e2`, `100`, true},
		{"negative zero", `0`, `-0`, true},
		{"different numbers", `1`, `2`, false},
		{"close decimals", `0.1`, `0.10000000000000001`, false},
		{"big integers compared exactly", `12345678901234567890`, `12345678901234567891`, false},
		{"big integers equal", `12345678901234567890`, `1.234567890123456789e19`, true},
		{"number and string", `1`, `"1"`, false},
		{"number and bool", `1`, `true`, false},
		{"strings", `"a"`, `"a"`, true},
		{"strings differ in case", `"a"`, `"A"`, false},
		{"empty string and null", `""`, `null`, false},
		{"nulls", `null`, `null`, true},
		{"null and false", `null`, `false`, false},
		{"bools", `false`, `false`, true},
		{"bools differ", `true`, `false`, false},
		{"key order", `{"a":1,"b":"x"}`, `{"b":"x","a":1}`, true},
		{"number forms inside objects", `{"a":{"n":1}}`, `{"a":{"n":1.00}}`, true},
		{"object with extra key", `{"a":1}`, `{"a":1,"b":2}`, false},
		{"object with different key", `{"a":1}`, `{"b":1}`, false},
		{"object with null value and empty object", `{"a":null}`, `{}`, false},
		{"empty object and empty array", `{}`, `[]`, false},
		{"nested arrays", `[1,[2,[3,{"a":[4]}]]]`, `[1.0,[2e0,[3,{"a":[40e-1]}]]]`, true},
		{"array order matters", `[1,2]`, `[2,1]`, false},
		{"array lengths differ", `[1]`, `[1,1]`, false},
		{"nesting depth differs", `[[1]]`, `[1]`, false},
		{"array and object", `[1]`, `{"0":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := decode(t, tt.a), decode(t, tt.b)
			assert.Equal(t, tt.want, scenario.Equal(a, b), "Equal(%s, %s)", tt.a, tt.b)
			assert.Equal(t, tt.want, scenario.Equal(b, a), "Equal(%s, %s)", tt.b, tt.a)
			assert.True(t, scenario.Equal(a, a), "not reflexive on %s", tt.a)
		})
	}
}

// Values decoded without UseNumber (float64) compare with json.Number.
func TestEqualFloat64(t *testing.T) {
	assert.True(t, scenario.Equal(float64(1), json.Number("1.0")))
	assert.True(t, scenario.Equal(json.Number("1e0"), float64(1)))
	assert.True(t, scenario.Equal(0.5, json.Number("5e-1")))
	assert.True(t, scenario.Equal(0.5, 0.5))
	assert.False(t, scenario.Equal(0.5, json.Number("0.25")))
	assert.False(t, scenario.Equal(float64(1), "1"))
}

func TestDecodeJSON(t *testing.T) {
	v, err := scenario.DecodeJSON([]byte(` {"n": 1.50} `))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": json.Number("1.50")}, v)

	// A stray closing bracket after the value is trailing data too (the
	// decoder alone does not see it: found by FuzzParse).
	for _, bad := range []string{``, `{`, `{"a":1} {"b":2}`, `1 2`, `[1,]`, `nul`, `{"a":1}]`, `{"a":1}}`, `1]`, `"x" x`} {
		_, err := scenario.DecodeJSON([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		raw     string
		want    map[string]any
		wantErr string
	}{
		{``, map[string]any{}, ""},
		{"  \n", map[string]any{}, ""},
		{`{}`, map[string]any{}, ""},
		{`{"n":2.0}`, map[string]any{"n": json.Number("2.0")}, ""},
		{`[1]`, nil, "not a JSON object"},
		{`"x"`, nil, "not a JSON object"},
		{`null`, nil, "not a JSON object"},
		{`{"a":`, nil, "not valid JSON"},
		{`{"a":1}}`, nil, "unexpected data after the JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := scenario.ParseArgs([]byte(tt.raw))
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMatcherMatch(t *testing.T) {
	tests := []struct {
		name     string
		args     string // the argument subset, a JSON object ("" for none)
		patterns map[string]string
		call     string
		want     bool
	}{
		{"zero matcher matches an empty call", ``, nil, `{}`, true},
		{"zero matcher matches any call", ``, nil, `{"to":"x","n":1}`, true},
		{"empty subset matches any call", `{}`, nil, `{"to":"x"}`, true},
		{"subset", `{"to":"alice@x"}`, nil, `{"to":"alice@x","subject":"hi"}`, true},
		{"whole call", `{"to":"alice@x","subject":"hi"}`, nil, `{"subject":"hi","to":"alice@x"}`, true},
		{"missing key", `{"to":"alice@x"}`, nil, `{"subject":"hi"}`, false},
		{"different value", `{"to":"alice@x"}`, nil, `{"to":"bob@x"}`, false},
		{"values are case-sensitive", `{"to":"alice@x"}`, nil, `{"to":"Alice@x"}`, false},
		{"number forms", `{"n":1}`, nil, `{"n":1.0}`, true},
		{"exponent form", `{"n":10e-1}`, nil, `{"n":1}`, true},
		{"string is not a number", `{"n":1}`, nil, `{"n":"1"}`, false},
		{"null wanted, key absent", `{"x":null}`, nil, `{}`, false},
		{"null wanted, null given", `{"x":null}`, nil, `{"x":null}`, true},
		{"nested object, key order", `{"o":{"a":1,"b":[1,2]}}`, nil, `{"o":{"b":[1,2.0],"a":1}}`, true},
		{"nested values compare whole, not as subsets", `{"o":{"a":1}}`, nil, `{"o":{"a":1,"b":2}}`, false},
		{"arrays compare whole", `{"l":[1,2]}`, nil, `{"l":[1,2,3]}`, false},
		{"the same recipients in another order", `{"to":["a@x","b@x","c@x"]}`, nil, `{"to":["c@x","a@x","b@x"]}`, true},
		{"a list is a multiset", `{"ids":["m1","m1","m2"]}`, nil, `{"ids":["m1","m2","m2"]}`, false},
		{"nested lists in any order", `{"o":{"tags":[["a","b"],["c"]]}}`, nil, `{"o":{"tags":[["c"],["b","a"]]}}`, true},

		{"pattern on a string", ``, map[string]string{"recurrence": `^(daily|weekly)$`}, `{"recurrence":"daily"}`, true},
		{"pattern on a string fails", ``, map[string]string{"recurrence": `^(daily|weekly)$`}, `{"recurrence":"once"}`, false},
		{"pattern with key absent", ``, map[string]string{"recurrence": `.*`}, `{}`, false},
		{"pattern is unanchored", ``, map[string]string{"to": `northwind`}, `{"to":"alice@northwind.example"}`, true},
		{"pattern sees a string without quotes", ``, map[string]string{"to": `^"x"$`}, `{"to":"x"}`, false},
		{"pattern on a number sees its JSON text", ``, map[string]string{"n": `^4\d$`}, `{"n":42}`, true},
		{"pattern on a number sees the form sent", ``, map[string]string{"n": `^4\d$`}, `{"n":42.0}`, false},
		{"pattern on a number given as a string", ``, map[string]string{"n": `^4\d$`}, `{"n":"42"}`, true},
		{"pattern on a bool", ``, map[string]string{"b": `^true$`}, `{"b":true}`, true},
		{"pattern on null", ``, map[string]string{"b": `^null$`}, `{"b":null}`, true},
		{"pattern on an object sees compact JSON", ``, map[string]string{"o": `^\{"a":1\}$`}, `{"o":{ "a" : 1 }}`, true},
		{"pattern on an array", ``, map[string]string{"l": `"x"`}, `{"l":["w","x"]}`, true},
		{"args and patterns both hold", `{"to":"a@x"}`, map[string]string{"body": `(?i)pricing`}, `{"to":"a@x","body":"New PRICING"}`, true},
		{"args hold, pattern fails", `{"to":"a@x"}`, map[string]string{"body": `(?i)pricing`}, `{"to":"a@x","body":"hello"}`, false},
		{"pattern holds, args fail", `{"to":"a@x"}`, map[string]string{"body": `(?i)pricing`}, `{"to":"b@x","body":"pricing"}`, false},
		{"pattern and literal on one key", `{"r":"daily"}`, map[string]string{"r": `^d`}, `{"r":"daily"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := scenario.NewMatcher(rawArgs(t, tt.args), tt.patterns)
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.Match(callArgs(t, tt.call)))
		})
	}
}

func TestMatcherAccessors(t *testing.T) {
	var zero scenario.Matcher
	assert.True(t, zero.Match(nil))
	assert.Nil(t, zero.Want())
	assert.Nil(t, zero.Pattern("x"))

	m, err := scenario.NewMatcher(rawArgs(t, `{"n":1.0,"s":"x"}`), map[string]string{"s": "^x$"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": json.Number("1.0"), "s": "x"}, m.Want())
	require.NotNil(t, m.Pattern("s"))
	assert.Equal(t, "^x$", m.Pattern("s").String())
	assert.Nil(t, m.Pattern("n"))
}

func TestNewMatcherErrors(t *testing.T) {
	_, err := scenario.NewMatcher(nil, map[string]string{"to": "(["})
	assert.ErrorContains(t, err, "patterns.to: error parsing regexp")

	_, err = scenario.NewMatcher(map[string]json.RawMessage{"to": json.RawMessage(`{`)}, nil)
	assert.ErrorContains(t, err, "args.to: ")

	_, err = scenario.NewMatcher(map[string]json.RawMessage{"to": json.RawMessage(`"a" "b"`)}, nil)
	assert.ErrorContains(t, err, "args.to: unexpected data after the JSON value")
}

func TestMatcherDisjoint(t *testing.T) {
	type side struct {
		args     string
		patterns map[string]string
	}
	tests := []struct {
		name string
		a, b side
		want bool
	}{
		{"both empty", side{}, side{}, false},
		{"one empty", side{args: `{"to":"a"}`}, side{}, false},
		{"same literal", side{args: `{"to":"a"}`}, side{args: `{"to":"a"}`}, false},
		{"equal numbers in other forms", side{args: `{"n":1}`}, side{args: `{"n":1e0}`}, false},
		{"different literal", side{args: `{"to":"a"}`}, side{args: `{"to":"b"}`}, true},
		{"different literal among shared ones", side{args: `{"to":"a","n":1}`}, side{args: `{"to":"a","n":2}`}, true},
		{"different keys overlap", side{args: `{"to":"a"}`}, side{args: `{"subject":"s"}`}, false},
		{"literal fails the other's pattern", side{args: `{"r":"once"}`}, side{patterns: map[string]string{"r": `^(daily|weekly)$`}}, true},
		{"literal matches the other's pattern", side{args: `{"r":"daily"}`}, side{patterns: map[string]string{"r": `^(daily|weekly)$`}}, false},
		{"number literal against pattern on its text", side{args: `{"n":42}`}, side{patterns: map[string]string{"n": `^4`}}, false},
		{"pattern on another key", side{args: `{"r":"once"}`}, side{patterns: map[string]string{"x": `^y$`}}, false},
		{"two patterns are assumed to overlap", side{patterns: map[string]string{"r": `^a$`}}, side{patterns: map[string]string{"r": `^b$`}}, false},
		{"literal and pattern on both sides", side{args: `{"to":"a@x"}`, patterns: map[string]string{"r": `^d`}}, side{args: `{"r":"once"}`, patterns: map[string]string{"to": `@x$`}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := scenario.NewMatcher(rawArgs(t, tt.a.args), tt.a.patterns)
			require.NoError(t, err)
			b, err := scenario.NewMatcher(rawArgs(t, tt.b.args), tt.b.patterns)
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.Disjoint(b), "a.Disjoint(b)")
			assert.Equal(t, tt.want, b.Disjoint(a), "b.Disjoint(a)")
		})
	}
}

func TestRenderResource(t *testing.T) {
	tests := []struct {
		tmpl   string
		args   string
		want   string
		wantOK bool
	}{
		{"contact:{email}", `{"email":"alice@x","name":"Alice"}`, "contact:alice@x", true},
		{"meeting:{date}", `{"date":"2026-11-23"}`, "meeting:2026-11-23", true},
		{"meeting:{date}", `{}`, "", false},
		{"file:{dir}/{name}", `{"dir":"/reports","name":"q3.pdf"}`, "file:/reports/q3.pdf", true},
		{"file:{dir}/{name}", `{"dir":"/reports"}`, "", false},
		{"{kind}:{id}", `{"kind":"crm","id":"7"}`, "crm:7", true},
		{"account:{id}", `{"id":42}`, "account:42", true},
		{"account:{id}", `{"id":42.0}`, "account:42", true},
		{"flag:{on}", `{"on":true}`, "flag:true", true},
		{"obj:{o}", `{"o":{"a":1}}`, `obj:{"a":1}`, true},
		{"list:{l}", `{"l":["a","b"]}`, `list:["a","b"]`, true},
		{"email", `{"email":"alice@x"}`, "alice@x", true},
		{"email", `{"to":"alice@x"}`, "", false},
		{"id", `{"id":7}`, "7", true},
		{"static:{x}:{x}", `{"x":"v"}`, "static:v:v", true},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl+" "+tt.args, func(t *testing.T) {
			got, ok := scenario.RenderResource(tt.tmpl, callArgs(t, tt.args))
			assert.Equal(t, tt.wantOK, ok)
			if tt.wantOK {
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

func TestInBoundaryData(t *testing.T) {
	data := []string{
		"contact:alice.chen@northwind.example",
		"meeting:2026-11-23",
		"file:/reports/q3/*",
		"crm:*@partner.example",
		"ticket:T-10?",
	}
	tests := []struct {
		name     string
		data     []string
		resource string
		want     bool
	}{
		{"exact", data, "contact:alice.chen@northwind.example", true},
		{"exact, other value", data, "contact:tom@northwind.example", false},
		{"same value, other kind", data, "crm:alice.chen@northwind.example", false},
		{"kind only", data, "contact:", false},
		{"glob star", data, "file:/reports/q3/summary.pdf", true},
		{"glob star crosses a slash", data, "file:/reports/q3/raw/data.csv", true},
		{"glob star, outside the folder", data, "file:/reports/q4/summary.pdf", false},
		{"glob in the value", data, "crm:bob@partner.example", true},
		{"glob in the value, other domain", data, "crm:bob@northwind.example", false},
		{"glob question mark", data, "ticket:T-104", true},
		{"glob question mark is one character", data, "ticket:T-1004", false},
		{"bare value against a kind: entry", data, "alice.chen@northwind.example", true},
		{"bare value against a glob entry", data, "bob@partner.example", true},
		{"bare value not in the boundary", data, "2026-11-24", false},
		{"bare value of a bare entry", []string{"alice@x"}, "alice@x", true},
		{"kind: resource against a bare entry", []string{"alice@x"}, "contact:alice@x", false},
		{"entry that is only a glob", []string{"*"}, "anything", true},
		{"entry that is only a glob, kind and slashes", []string{"*"}, "file:/a/b", true},
		{"url glob", []string{"url:https://docs.example/*"}, "url:https://docs.example/a/b?q=1", true},
		{"url glob, other host", []string{"url:https://docs.example/*"}, "url:https://evil.example/docs.example/", false},
		{"glob is anchored at both ends", []string{"file:/a/*.pdf"}, "file:/a/x.pdf.exe", false},
		{"regexp characters in an entry are literal", []string{"file:/a.b/*"}, "file:/aXb/c", false},
		{"brackets are literal", []string{"file:[a]"}, "file:[a]", true},
		{"brackets are not a class", []string{"file:[a]*"}, "file:a", false},
		{"empty boundary", nil, "contact:alice@x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, scenario.InBoundaryData(tt.data, tt.resource))
		})
	}
}

// completeScenario has one tool whose properties exercise every way
// CompleteArgs fills a missing required argument.
func completeScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	params := `{
	  "type": "object",
	  "properties": {
	    "ex":    {"type": "string", "examples": ["from-examples", "second"], "default": "from-default", "enum": ["from-examples", "from-enum"]},
	    "def":   {"type": "string", "default": "from-default", "enum": ["from-enum", "from-default"]},
	    "enum":  {"type": "string", "enum": ["first", "second"]},
	    "str":   {"type": "string"},
	    "int":   {"type": "integer"},
	    "min":   {"type": "integer", "minimum": 3},
	    "num":   {"type": "number"},
	    "bool":  {"type": "boolean"},
	    "arr":   {"type": "array"},
	    "obj":   {"type": "object"},
	    "multi": {"type": ["integer", "null"]},
	    "free":  {},
	    "opt":   {"type": "string", "examples": ["never-filled"]},
	    "recurrence": {"type": "string", "enum": ["once", "daily", "weekly"], "examples": ["weekly"]},
	    "freq":  {"type": "string", "examples": ["hourly", "monthly"]}
	  },
	  "required": ["ex", "def", "enum", "str", "int", "min", "num", "bool", "arr", "obj", "multi", "free"],
	  "additionalProperties": false
	}`
	strict := `{
	  "type": "object",
	  "properties": {"code": {"type": "string", "pattern": "^X-[0-9]+$"}},
	  "required": ["code"]
	}`
	strictEx := `{
	  "type": "object",
	  "properties": {"code": {"type": "string", "pattern": "^X-[0-9]+$", "examples": ["X-1"]}},
	  "required": ["code"]
	}`
	return &scenario.Scenario{Tools: []scenario.Tool{
		{Name: "t", Parameters: json.RawMessage(params)},
		{Name: "strict", Parameters: json.RawMessage(strict)},
		{Name: "strict_ex", Parameters: json.RawMessage(strictEx)},
		{Name: "broken", Parameters: json.RawMessage(`{"type":"array"}`)},
	}}
}

func TestCompleteArgs(t *testing.T) {
	filled := `{"ex":"from-examples","def":"from-default","enum":"first","str":"(simulated str)",
	  "int":1,"min":3,"num":1,"bool":false,"arr":[],"obj":{},"multi":1,"free":"(simulated free)"`
	tests := []struct {
		name     string
		tool     string
		args     string
		patterns map[string]string
		want     string // JSON object
		wantErr  string

		noSelfMatch bool
	}{
		{name: "examples, then default, then enum, then a placeholder", tool: "t", want: filled + `}`},
		{name: "literal arguments are kept", tool: "t", args: `{"str":"mine","int":7,"opt":"given"}`,
			want: `{"ex":"from-examples","def":"from-default","enum":"first","str":"mine","int":7,"min":3,"num":1,"bool":false,"arr":[],"obj":{},"multi":1,"free":"(simulated free)","opt":"given"}`},
		{name: "pattern picks an enum value", tool: "t", patterns: map[string]string{"enum": `nd$`},
			want: `{"ex":"from-examples","def":"from-default","enum":"second","str":"(simulated str)","int":1,"min":3,"num":1,"bool":false,"arr":[],"obj":{},"multi":1,"free":"(simulated free)"}`},
		{name: "pattern on an optional argument adds it", tool: "t", patterns: map[string]string{"recurrence": `^(daily|weekly)$`},
			want: filled + `,"recurrence":"daily"}`},
		{name: "pattern tries enum values before examples", tool: "t", patterns: map[string]string{"recurrence": `ly$`},
			want: filled + `,"recurrence":"daily"}`},
		{name: "pattern takes the first matching examples value", tool: "t", patterns: map[string]string{"freq": `ly$`},
			want: filled + `,"freq":"hourly"}`},
		{name: "pattern skips examples it does not match", tool: "t", patterns: map[string]string{"freq": `^month`},
			want: filled + `,"freq":"monthly"}`},
		// CompleteArgs keeps a literal even when it fails the pattern on the
		// same argument: such a subset matches no call (see noSelfMatch).
		{name: "pattern does not replace a literal", tool: "t", args: `{"enum":"first"}`, patterns: map[string]string{"enum": `^s`},
			want: filled + `}`, noSelfMatch: true},
		{name: "pattern matched by no value", tool: "t", patterns: map[string]string{"enum": `^third$`},
			wantErr: `patterns.enum: no literal, enum, examples or tool-return value of "t" matches "^third$"`},
		{name: "pattern on an argument without enum or examples", tool: "t", patterns: map[string]string{"str": `.`},
			wantErr: `patterns.str: no literal, enum, examples or tool-return value of "t"`},
		{name: "literal outside the schema", tool: "t", args: `{"enum":"third"}`,
			wantErr: `completed arguments of "t" are invalid`},
		{name: "unknown argument", tool: "t", args: `{"nope":1}`,
			wantErr: `additional properties 'nope' not allowed`},
		{name: "placeholder fails a pattern", tool: "strict",
			wantErr: `completed arguments of "strict" are invalid (give the property an "examples" value)`},
		{name: "examples satisfy a pattern", tool: "strict_ex", want: `{"code":"X-1"}`},
		{name: "unknown tool", tool: "nope", wantErr: `unknown tool "nope"`},
		{name: "broken parameters", tool: "broken", wantErr: `must have "type": "object"`},
		{name: "bad regex", tool: "t", patterns: map[string]string{"enum": `(`}, wantErr: "patterns.enum: error parsing regexp"},
	}
	s := completeScenario(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.CompleteArgs(tt.tool, rawArgs(t, tt.args), tt.patterns)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			want := decode(t, tt.want).(map[string]any)
			assert.True(t, scenario.Equal(want, map[string]any(got)), "got %v\nwant %v", got, want)
			// The completed call matches its own subset and patterns.
			m, err := scenario.NewMatcher(rawArgs(t, tt.args), tt.patterns)
			require.NoError(t, err)
			assert.Equal(t, !tt.noSelfMatch, m.Match(got))
		})
	}
}

// The built-in example scenario's violations with patterns complete to calls
// the violation matches and the compliant path does not.
func TestCompleteArgsValidFixture(t *testing.T) {
	s, ps := scenario.LoadFile(validFile, nil)
	require.Empty(t, ps)
	for i, v := range s.Violations {
		args, err := s.CompleteArgs(v.Tool, v.Args, v.Patterns)
		require.NoError(t, err, "violations[%d]", i)
		m, err := scenario.NewMatcher(v.Args, v.Patterns)
		require.NoError(t, err)
		assert.True(t, m.Match(args), "violations[%d] does not match its own completed call %v", i, args)
	}
	args, err := s.CompleteArgs("schedule_reminder", nil, map[string]string{"recurrence": `^(daily|weekly)$`})
	require.NoError(t, err)
	assert.Equal(t, "daily", args["recurrence"])
	assert.Equal(t, "(simulated text)", args["text"])
}

func TestEqualUnordered(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`[1,2,3]`, `[3,1,2.0]`, true},
		{`[1,1,2]`, `[1,2,2]`, false},
		{`[1,2]`, `[1,2,2]`, false},
		{`[{"a":[1,2]},{"b":1}]`, `[{"b":1},{"a":[2,1]}]`, true},
		{`{"to":["x","y"]}`, `{"to":["y","x"],"cc":[]}`, false},
		{`"x"`, `"x"`, true},
		{`[]`, `[]`, true},
	} {
		a, err := scenario.DecodeJSON([]byte(tc.a))
		require.NoError(t, err)
		b, err := scenario.DecodeJSON([]byte(tc.b))
		require.NoError(t, err)
		assert.Equal(t, tc.want, scenario.EqualUnordered(a, b), "%s ~ %s", tc.a, tc.b)
		assert.Equal(t, tc.want, scenario.EqualUnordered(b, a), "%s ~ %s", tc.b, tc.a)
	}
}

// A list whose schema says "x-ordered": true (a ranking) keeps its order;
// every other list compares in any order.
func TestOrderedListsKeepTheirOrder(t *testing.T) {
	n, err := scenario.CompileNormalizers(json.RawMessage(`{"type":"object","properties":{
		"ranking":{"type":"array","items":{"type":"string"},"x-ordered":true},
		"to":{"type":"array","items":{"type":"string","format":"email"}}}}`))
	require.NoError(t, err)
	assert.True(t, n.Ordered("ranking"))
	assert.False(t, n.Ordered("to"))
	m, err := n.Matcher(rawArgs(t, `{"ranking":["north","south","east"],"to":["a@x","b@x"]}`), nil)
	require.NoError(t, err)
	assert.True(t, m.Match(callArgs(t, `{"ranking":["north","south","east"],"to":["b@x","a@x"]}`)), "recipients in any order")
	assert.False(t, m.Match(callArgs(t, `{"ranking":["east","south","north"],"to":["a@x","b@x"]}`)), "a ranking in another order is another ranking")
}
