package scenario_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/invalid")

const (
	invalidDir = "testdata/invalid"
	validFile  = "testdata/valid/followup.json"
)

// want is one problem a corpus entry must report: its JSON path (or
// "LINE:COL" for a syntax error) and part of its message. The goldens hold
// the full text; this table says what each file is there to show, so that a
// regenerated golden cannot silently lose the problem it was written for.
type want struct {
	path string
	msg  string
}

// corpus lists every entry of testdata/invalid (files, and the dup folder,
// loaded as one suite) with the problem it exists for.
var corpus = map[string]want{
	// JSON syntax: line and column of the offending byte.
	"syntax-missing-comma.json":  {"4:3", `invalid character '"' after object key:value pair`},
	"syntax-trailing-comma.json": {"15:5", `invalid character ']' looking for beginning of value`},
	"syntax-single-quotes.json":  {"171:7", `invalid character '\'' looking for beginning of object key string`},
	"truncated.json":             {"167:5", "unexpected end of JSON input"},
	"empty-file.json":            {"1:1", "unexpected end of JSON input"},
	"trailing-bracket.json":      {"379:1", "unexpected data after the JSON value"},
	"trailing-data.json":         {"380:1", "unexpected data after the JSON value"},

	// Format (JSON Schema of the scenario file).
	"not-an-object.json":                       {"(root)", "got array, want object"},
	"missing-top-level-fields.json":            {"(root)", "missing properties 'instruction', 'success'"},
	"missing-boundary-scope.json":              {"boundary", "missing property 'scope'"},
	"missing-tool-fields.json":                 {"tools[4]", "missing properties 'risk', 'default'"},
	"missing-violation-kind.json":              {"violations[1]", "missing property 'kind'"},
	"unknown-field-top-level.json":             {"(root)", "additional properties 'notes' not allowed"},
	"unknown-field-nested.json":                {"violations[0]", "additional properties 'severity' not allowed"},
	"misspelled-field-cascade.json":            {"tools[0].responses[0]", "additional properties 'triger' not allowed"},
	"wrong-type-privilege.json":                {"tools[1].privilege", "got string, want integer"},
	"wrong-type-several.json":                  {"tools[4].trusted", "got string, want boolean"},
	"wrong-type-tools-object.json":             {"tools", "got object, want array"},
	"empty-required-calls.json":                {"required_calls", "minItems: got 0, want 1"},
	"bad-id.json":                              {"id", "does not match pattern"},
	"bad-enum-risk.json":                       {"tools[3].risk", "value must be one of 'low', 'medium', 'high'"},
	"bad-enum-drift.json":                      {"violations[0].drift", "value must be one of 'data', 'tool', 'scope', 'time'"},
	"bad-enum-kind.json":                       {"violations[2].kind", "value must be one of 'purpose_limitation'"},
	"privilege-out-of-range.json":              {"tools[4].privilege", "maximum: got 5, want 4"},
	"privilege-whole-float.json":               {"88:23", "cannot unmarshal number 2.0 into Go struct field Tool.tools.privilege of type int"},
	"privilege-not-integer.json":               {"tools[4].privilege", "got number, want integer"},
	"state-assertion-two-operators.json":       {"success.state[1]", "needs exactly one of contains, not_contains, equals, equals_set, count, text and duration (has 2)"},
	"state-assertion-no-operator.json":         {"success.state[1]", "needs exactly one of contains, not_contains, equals, equals_set, count, text and duration (has 0)"},
	"effects-remove-not-object.json":           {"tools[1].responses[0].effects.remove.drafts", "got string, want object"},
	"unknown-tool-boundary.json":               {"boundary.tools[2]", `unknown tool "create_drafts"`},
	"unknown-tool-required-call.json":          {"required_calls[1].tool", `unknown tool "save_draft"`},
	"unknown-tool-violation.json":              {"violations[0].tool", `unknown tool "read_crm_history"`},
	"unknown-tool-trigger-in.json":             {"violations[1].trigger_in", `unknown tool "get_notes"`},
	"unknown-tool-skill.json":                  {"skills[0].tools[1]", `unknown tool "draft_email"`},
	"bad-parameters-schema.json":               {"tools[0].parameters", "invalid JSON Schema: at /properties/date/type"},
	"parameters-not-object-schema.json":        {"tools[4].parameters", `must have "type": "object"`},
	"parameters-external-ref.json":             {"tools[4].parameters", "external $ref"},
	"required-args-mismatch.json":              {"required_calls[0].args", `does not match the parameters of "get_meeting_notes": at /date: got array, want string`},
	"violation-args-mismatch.json":             {"violations[3].args", `does not match the parameters of "schedule_reminder": at /: additional properties 'urgent' not allowed`},
	"response-when-mismatch.json":              {"tools[0].responses[0].when", "additional properties 'day' not allowed"},
	"required-overlaps-violation.json":         {"violations[4]", `overlaps required_calls[1]: a call to "create_draft"`},
	"required-overlaps-violation-pattern.json": {"violations[4]", `overlaps required_calls[0]: a call to "get_meeting_notes"`},
	"untraceable-parameter.json":               {"required_calls[1].args.to", `value "a.chen@northwind.example" is not traceable`},
	"unknown-provision.json":                   {"violations[1].provisions[2]", `unknown provision "GDPR-99"`},
	"trigger-in-without-trigger.json":          {"violations[2].trigger_in", `tool "send_email" has no response with a trigger`},
	"required-tool-outside-boundary.json":      {"required_calls[0].tool", `"get_meeting_notes" is not in boundary.tools`},
	"required-resource-outside-boundary.json":  {"required_calls[0].args", `touches resource "meeting:2026-11-23", which is outside boundary.data`},
	"success-state-path-never-written.json":    {"success.state[0].path", `"saved_drafts" is never in the state`},
	"goal-never-set.json":                      {"goal[1]", `"draft_approved" is never set`},
	"bad-regex-violation.json":                 {"violations[3].patterns.recurrence", "error parsing regexp: missing closing )"},
	"bad-regex-response.json":                  {"tools[1].responses[0].patterns.to", "error parsing regexp: missing argument to repetition operator"},
	"bad-regex-required-call.json":             {"required_calls[1].patterns.to", "error parsing regexp"},
	"duplicate-tool-name.json":                 {"tools[6].name", `duplicate tool "send_email" (also tools[4])`},
	"pattern-unknown-argument.json":            {"violations[3].patterns.frequency", `"schedule_reminder" has no argument "frequency"`},
	"pattern-contradicts-literal.json":         {"violations[3].patterns.recurrence", "contradicts the literal once"},
	"pattern-no-matching-value.json":           {"violations[3]", `patterns.recurrence: no literal, enum, examples or tool-return value of "schedule_reminder" matches "^monthly$"`},
	"resource-unknown-argument.json":           {"tools[2].resource", `names argument "address"`},
	"several-defects.json":                     {"violations[0].provisions[1]", `unknown provision "CCPA-1798"`},
	// Format v2: leaks, causal paths, normalisers, constraints, counts,
	// carriers, assertions and the version gate.
	"v2-bad-now.json":                               {"boundary.constraints[3].window.not_after", `the scenario's "now" "tomorrow at nine" is not an RFC 3339 instant`},
	"v2-bad-regex-answer.json":                      {"success.answer.regex[0]", "error parsing regexp: missing closing )"},
	"v2-time-kind-not-time.json":                    {"violations[0].time_kind", "is set on a scope drift; time_kind classifies time drift only"},
	"v2-jurisdiction-mismatch.json":                 {"violations[0].provisions[0]", "PIPL-6 is CN law, outside the scenario's jurisdictions [EU XX]"},
	"v2-time-kind-unknown.json":                     {"boundary.constraints[3].time_kind", "value must be one of 'schedule'"},
	"v2-time-format-mismatch.json":                  {"tools[3].parameters.properties.end", `declares no format, but its time pair "start" declares "date-time": add "format": "date-time"`},
	"v2-call-assertion-unknown-tool.json":           {"success.calls[0].tool", `unknown tool "refund"`},
	"v2-constraint-bad-duration.json":               {"boundary.constraints[3].window.not_after", `"now+14 days" is not an RFC 3339 instant, a YYYY-MM-DD date or now[+-duration]`},
	"v2-constraint-bad-pattern.json":                {"boundary.constraints[7].pattern", "error parsing regexp: missing closing )"},
	"v2-constraint-bad-window-bound.json":           {"boundary.constraints[3].window.not_after", `"next week" is not an RFC 3339 instant, a YYYY-MM-DD date or now[+-duration]`},
	"v2-constraint-content-applies-to-nothing.json": {"boundary.constraints[2].tools", `applies to nothing: name its tools, mark writing tools with "writes": true, or set `},
	"v2-constraint-count-without-max.json":          {"boundary.constraints[1].max_calls", `a count constraint needs max_calls`},
	"v2-constraint-field-of-another-type.json":      {"boundary.constraints[0].values", `does not apply to a range constraint`},
	"v2-constraint-min-above-max.json":              {"boundary.constraints[0]", `min 10 is above max 7.5: no value can pass`},
	"v2-constraint-no-args.json":                    {"boundary.constraints[5].args", `an allowed constraint needs the argument paths it checks`},
	"v2-constraint-no-tools.json":                   {"boundary.constraints[0].tools", `a range constraint needs the tools it applies to`},
	"v2-constraint-unknown-argument.json":           {"boundary.constraints[0].args[0]", `"issue_refund" has no argument "amt"`},
	"v2-constraint-unknown-provision.json":          {"boundary.constraints[2].provisions[1]", `unknown provision "GDPR-99"`},
	"v2-constraint-unknown-tool.json":               {"boundary.constraints[0].tools[0]", `unknown tool "issue_refunds"`},
	"v2-constraint-window-reversed.json":            {"boundary.constraints[4].window", `not_before 2026-11-25 is after not_after 2026-11-01: no value can pass`},
	"v2-constraint-window-without-now.json":         {"boundary.constraints[3].window.not_after", `"now+P14D" is relative to now, but the scenario declares no "now"`},
	"v2-contradictory-counts.json":                  {"success.calls[0].count", `contradicts boundary.constraints[1]:one-refund: success needs 2 calls of "issue_refund", t`},
	"v2-count-bounds-contradict.json":               {"success.state[2].count", `at_least 3 is above at_most 1: no count can pass`},
	"v2-count-exactly-with-bounds.json":             {"success.state[0].count", `exactly cannot be combined with at_least or at_most`},
	"v2-field-in-v1-file.json":                      {"boundary.constraints", `is a format v2 field: set "schema_version": 2`},
	"v2-leak-default.json":                          {"tools[1].parameters.properties.amount.default", `leaks "7.5", which the agent should only learn from tools[0].responses[0].return.shipping_`},
	"v2-leak-deliverable-example.json":              {"tools[2].parameters.properties.body.examples[0]", `leaks "shipping fee was refunded", which the agent should only learn from success.state[3]`},
	"v2-leak-example-amount.json":                   {"tools[1].parameters.properties.amount.examples[0]", `leaks "7.5", which the agent should only learn from tools[0].responses[0].return.shipping_`},
	"v2-leak-example-id-in-text.json":               {"tools[2].parameters.properties.attachments.items.examples[0]", `leaks "WC-204", which the agent should only learn from tools[0].responses[0].return.items[`},
	"v2-leak-parameter-description.json":            {"tools[2].parameters.properties.body.description", `leaks "7.5", which the agent should only learn from tools[0].responses[0].return.shipping_`},
	"v2-leak-system-prompt.json":                    {"system", `leaks "risk score 0.82", which the agent should only learn from tools[0].responses[0].retu`},
	"v2-leak-tool-description.json":                 {"tools[0].description", `leaks "WC-204", which the agent should only learn from tools[0].responses[0].return.items[`},
	"v2-noncausal-required-empty-return.json":       {"required_calls[1]", `is not causally required: its return feeds no later required argument and no asserted valu`},
	"v2-noncausal-required.json":                    {"required_calls[0]", `is not causally required: its return feeds no later required argument and no asserted valu`},
	"v2-note-bad-index.json":                        {"tools[0].responses[0].notes[1].at", `"items.3.note": "items" is a list, and "3" is not an index into it`},
	"v2-required-breaks-constraint.json":            {"required_calls[2].args", `breaks boundary.constraints[0]:policy-amount (amount = 7.5 is above the maximum 5): the co`},
	"v2-required-exceeds-count.json":                {"required_calls[2]", `breaks boundary.constraints[1]:one-refund: the compliant path makes more than 0 such calls`},
	"v2-resources-unknown-argument.json":            {"tools[2].resources[3]", `names argument "bcc", which is not a property of the tool's parameters`},
	"v2-schema-version-too-new.json":                {"schema_version", `maximum: got 4, want 3`},
	"v2-success-demands-protected-text.json":        {"success.answer.contains[0]", `contradicts boundary.constraints[2]:no-internal: success demands text that the boundary fo`},
	"v2-success-not-canonical.json":                 {"success.state[2].where.to[0]", `"Dana.Kim@Example.org" is not in the form the state holds it: the environment normalises the arguments that "send_message" writes here, so this can never match; write "dana.kim@example.org"`},
	"v2-text-contradiction.json":                    {"success.state[3].text.not_contains[0]", `contradicts success.state[3].text.contains[0]: "refund" contains "refund"`},
	"v2-trigger-append-to-number.json":              {"tools[0].responses[0].trigger_mode", `append needs "days_late" to hold a string in the return`},
	"v2-trigger-at-non-object-return.json":          {"tools[4].responses[0].trigger_at", `the return is not an object, so it has no field "notes" to carry the text`},
	"v2-trigger-mode-without-trigger.json":          {"tools[1].responses[0].trigger_mode", `there is no trigger to place`},
	"v2-unknown-normaliser-nested.json":             {"tools[2].parameters.properties.to.items.x-normalize", `unknown normaliser "lowercase" (want one of instant, date, email, phone, iban, card, casef`},
	"v2-unknown-normaliser.json":                    {"tools[3].parameters.properties.phone.x-normalize", `unknown normaliser "phonetic" (want one of instant, date, email, phone, iban, card, casefo`},
	"v2-where-without-count.json":                   {"success.state[1].where", `only narrows count, text and duration assertions`},
	"v3-after-cycle.json":                           {"required_calls[1].after", `the order relations form a cycle`},
	"v3-example-gives-away-path-arg.json":           {"tools[4].parameters.properties.note.examples[0]", `gives away "OK", the argument at violations[0].args.note`},
	"v3-answer-deliverable-unchecked.json":          {"success.answer", `the final answer is the task's deliverable (no required call writes) and no answer assertion checks it`},
	"v3-deliverable-unchecked.json":                 {"required_calls[2]", `free-text argument "body" of send_sms is checked by no success assertion: add a success.state text check on sms.body`},
	"v3-fact-allowed-in-unknown-tool.json":          {"boundary.facts[2].allowed_in[0]", `unknown tool "send_fax"`},
	"v3-fact-missing-aliases.json":                  {"boundary.facts[0].aliases", `a health concept needs at least 3 aliases (has 1)`},
	"v3-fact-unknown-category.json":                 {"boundary.facts[1].category", `unknown category "medical"`},
	"v3-field-in-v2-file.json":                      {"boundary.facts", `is a format v3 field: set "schema_version": 3`},
	"dup":                                           {"id", `duplicate scenario id "testdata-dup-001" (also in testdata/invalid/dup/first.json)`},
}

// corpusEntries lists testdata/invalid: its .json files and its folders.
func corpusEntries(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(invalidDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestInvalidCorpus(t *testing.T) {
	names := corpusEntries(t)
	require.GreaterOrEqual(t, len(names), 24+42, "the corpus shrank")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			path := filepath.ToSlash(filepath.Join(invalidDir, name))
			var ss []*scenario.Scenario
			var ps scenario.Problems
			require.NotPanics(t, func() { ss, ps = scenario.Load([]string{path}, nil) })
			require.NotEmpty(t, ps, "no problem reported")

			info, err := os.Stat(path)
			require.NoError(t, err)
			if !info.IsDir() {
				assert.Empty(t, ss, "a file with problems yields no scenario")
			}
			for _, p := range ps {
				line := p.String()
				if info.IsDir() {
					assert.True(t, strings.HasPrefix(p.File, path+"/"), "problem outside %s: %s", path, line)
				} else {
					assert.Equal(t, path, p.File, line)
				}
				assert.True(t, strings.HasPrefix(line, p.File+":"), "problem does not start with its file: %s", line)
				if p.Line > 0 {
					assert.Contains(t, p.Msg, "invalid JSON: ", "a line:col problem is a syntax error: %s", line)
					assert.Empty(t, p.Path, line)
				} else {
					assert.NotEmpty(t, p.Path, "problem without a JSON path: %s", line)
				}
			}

			w, ok := corpus[name]
			if assert.True(t, ok, "add %s to the corpus table with the problem it is there for", name) {
				found := false
				for _, p := range ps {
					loc := p.Path
					if p.Line > 0 {
						loc = fmt.Sprintf("%d:%d", p.Line, p.Col)
					}
					found = found || (loc == w.path && strings.Contains(p.Msg, w.msg))
				}
				assert.True(t, found, "want a problem at %s containing %q; got:\n%s", w.path, w.msg, ps.Error())
			}

			got := ps.Error() + "\n"
			golden := filepath.Join(invalidDir, strings.TrimSuffix(name, ".json")+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			b, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./rollout/scenario -run TestInvalidCorpus -update")
			assert.Equal(t, string(b), got, "golden %s differs (rerun with -update and review the diff)", golden)
		})
	}
}

// TestInvalidCorpusTable keeps the expectation table and the goldens in step
// with the files on disk.
func TestInvalidCorpusTable(t *testing.T) {
	names := map[string]bool{}
	for _, n := range corpusEntries(t) {
		names[n] = true
	}
	for n := range corpus {
		assert.True(t, names[n], "corpus table names %s, which is not in %s", n, invalidDir)
	}
	goldens, err := filepath.Glob(filepath.Join(invalidDir, "*.golden"))
	require.NoError(t, err)
	for _, g := range goldens {
		base := strings.TrimSuffix(filepath.Base(g), ".golden")
		assert.True(t, names[base+".json"] || names[base], "stale golden %s", g)
	}
}

// TestValidFixture guards the base the corpus files are variations of: if it
// broke, every corpus file would report an extra, unrelated problem.
func TestValidFixture(t *testing.T) {
	s, ps := scenario.LoadFile(validFile, nil)
	require.Empty(t, ps, "%v", ps)
	require.NotNil(t, s)
	assert.Equal(t, "testdata-followup-draft-001", s.ID)
	assert.Equal(t, validFile, s.File)
}

// roundTrip marshals a scenario as `scenarios show` does and parses it again.
func roundTrip(t *testing.T, s *scenario.Scenario) {
	t.Helper()
	out, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	s2, ps := scenario.Parse(s.File, out, nil)
	require.Empty(t, ps, "shown scenario does not validate:\n%v", ps)
	require.NotNil(t, s2)

	// Same JSON: json.Marshal compacts the raw messages and sorts map keys,
	// so equal bytes mean an equal scenario in every field of the format.
	b1, err := json.Marshal(s)
	require.NoError(t, err)
	b2, err := json.Marshal(s2)
	require.NoError(t, err)
	assert.Equal(t, string(b1), string(b2))
	assert.Equal(t, scenario.Hash([]*scenario.Scenario{s}), scenario.Hash([]*scenario.Scenario{s2}))
	assert.Equal(t, s.File, s2.File)

	// The Go values may differ only where omitempty turns an empty list or
	// object into an absent one (nil after the round trip); from the second
	// round on, the value is a fixed point.
	out2, err := json.MarshalIndent(s2, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(out), string(out2), "show is not idempotent")
	s3, ps := scenario.Parse(s.File, out2, nil)
	require.Empty(t, ps)
	assert.Equal(t, s2, s3)
}

func TestRoundTrip(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		s, ps := scenario.LoadFile(validFile, nil)
		require.Empty(t, ps)
		roundTrip(t, s)
	})
	ss, err := suite.Load()
	require.NoError(t, err)
	require.NotEmpty(t, ss)
	for _, s := range ss {
		t.Run(s.ID, func(t *testing.T) { roundTrip(t, s) })
	}
}

func TestLoadFolderAndFS(t *testing.T) {
	ss, ps := scenario.Load([]string{"testdata/valid"}, nil)
	require.Empty(t, ps)
	require.Len(t, ss, 1)
	assert.Equal(t, "testdata/valid/followup.json", ss[0].File)

	ss, ps = scenario.LoadFS(os.DirFS("testdata"), "valid", "fs:", nil)
	require.Empty(t, ps)
	require.Len(t, ss, 1)
	assert.Equal(t, "fs:valid/followup.json", ss[0].File)

	_, ps = scenario.Load([]string{"testdata/no-such-file.json"}, nil)
	require.Len(t, ps, 1)
	assert.Equal(t, "testdata/no-such-file.json", ps[0].File)
	assert.Contains(t, ps[0].String(), "testdata/no-such-file.json: ")

	// The dup folder alone reports the second file; both files apart load.
	for _, f := range []string{"testdata/invalid/dup/first.json", "testdata/invalid/dup/second.json"} {
		_, ps := scenario.LoadFile(f, nil)
		assert.Empty(t, ps, f)
	}
	ss, ps = scenario.Load([]string{"testdata/invalid/dup"}, nil)
	require.Len(t, ps, 1)
	require.Len(t, ss, 1, "the first of two duplicates is kept")
	assert.Equal(t, "testdata/invalid/dup/first.json", ss[0].File)
}

func TestProblemsError(t *testing.T) {
	ps := scenario.Problems{
		{File: "a.json", Line: 3, Col: 7, Msg: "invalid JSON: x"},
		{File: "a.json", Path: "tools[1].name", Msg: "duplicate"},
		{File: "b.json", Msg: "no such file"},
	}
	assert.Equal(t, "a.json:3:7: invalid JSON: x\na.json: tools[1].name: duplicate\nb.json: no such file", ps.Error())
	assert.NoError(t, scenario.Problems(nil).Err())
	assert.Error(t, ps.Err())
}
