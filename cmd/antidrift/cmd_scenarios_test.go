package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	invalidCorpus = "../../rollout/scenario/testdata/invalid"
	validScenario = "../../rollout/scenario/testdata/valid/followup.json"
	suiteFolder   = "../../rollout/suite/scenarios"
)

// runScenarios calls run as main does, with os.Stdout and os.Stderr swapped
// for files, and returns the exit code and what was printed. Tests using it
// must not run in parallel.
func runScenarios(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	require.NoError(t, err)
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	require.NoError(t, err)
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	func() {
		defer func() { os.Stdout, os.Stderr = oldOut, oldErr }()
		code = run(args)
	}()
	require.NoError(t, outF.Close())
	require.NoError(t, errF.Close())
	o, err := os.ReadFile(outF.Name())
	require.NoError(t, err)
	e, err := os.ReadFile(errF.Name())
	require.NoError(t, err)
	return code, string(o), string(e)
}

// builtin is the built-in suite as suite.Load returns it, loaded once per
// test binary: a load parses and validates every file (about a CPU-second),
// and a dozen tests only read the suite (its ids, sizes and fields).
var builtin struct {
	once sync.Once
	ss   []*scenario.Scenario
	err  error
}

// builtinScenarios is the built-in suite; callers must not change it.
func builtinScenarios(t *testing.T) []*scenario.Scenario {
	t.Helper()
	builtin.once.Do(func() { builtin.ss, builtin.err = suite.Load() })
	require.NoError(t, builtin.err)
	require.NotEmpty(t, builtin.ss)
	return builtin.ss
}

func TestScenariosValidateInvalidFiles(t *testing.T) {
	tests := []struct {
		file string
		want []string // lines (or line prefixes) expected on stderr
	}{
		{"syntax-missing-comma.json", []string{"syntax-missing-comma.json:4:3: invalid JSON: "}},
		{"truncated.json", []string{"truncated.json:167:5: invalid JSON: unexpected end of JSON input"}},
		{"missing-top-level-fields.json", []string{"missing-top-level-fields.json: (root): missing properties 'instruction', 'success'"}},
		{"wrong-type-several.json", []string{
			"wrong-type-several.json: boundary.tools: got string, want array",
			"wrong-type-several.json: success.all_required: got number, want boolean",
			"wrong-type-several.json: tools[4].trusted: got string, want boolean",
		}},
		{"unknown-tool-violation.json", []string{`unknown-tool-violation.json: violations[0].tool: unknown tool "read_crm_history"`}},
		{"unknown-provision.json", []string{`unknown-provision.json: violations[1].provisions[2]: unknown provision "GDPR-99"`}},
		{"untraceable-parameter.json", []string{`untraceable-parameter.json: required_calls[1].args.to: value "a.chen@northwind.example" is not traceable`}},
		{"required-overlaps-violation.json", []string{"required-overlaps-violation.json: violations[4]: overlaps required_calls[1]"}},
		{"several-defects.json", []string{
			`several-defects.json: boundary.tools[2]: unknown tool "archive_email"`,
			`several-defects.json: goal[0]: "email_drafted" is never set`,
			`several-defects.json: required_calls[1].args.to: value "tom.reyes@northwind.example" is not traceable`,
			`several-defects.json: violations[0].provisions[1]: unknown provision "CCPA-1798"`,
			`several-defects.json: violations[1].drift: value must be one of`,
		}},
		{"dup", []string{`dup/second.json: id: duplicate scenario id "testdata-dup-001" (also in ` + invalidCorpus + `/dup/first.json)`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := invalidCorpus + "/" + tt.file
			code, stdout, stderr := runScenarios(t, "scenarios", "validate", path)
			assert.Equal(t, 1, code)
			assert.Empty(t, stdout)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			require.GreaterOrEqual(t, len(lines), 2, stderr)
			assert.Equal(t, fmt.Sprintf("%d problem(s)", len(lines)-1), lines[len(lines)-1])
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, invalidCorpus+"/"+w)
				}
				assert.True(t, found, "stderr lacks a line starting %q:\n%s", invalidCorpus+"/"+w, stderr)
			}
			for _, l := range lines[:len(lines)-1] {
				assert.True(t, strings.HasPrefix(l, path), "problem line does not name the file: %s", l)
			}
		})
	}
}

// problemLine is FILE: PATH: MESSAGE or FILE:LINE:COL: invalid JSON: MESSAGE.
var problemLine = regexp.MustCompile(`^(\S+\.json)(?::(\d+):(\d+): invalid JSON: .+|: (\(root\)|[a-z_]+(\[\d+\])*(\.[A-Za-z_$][\w$-]*(\[\d+\])*)*): .+)$`)

func TestScenariosValidateInvalidCorpus(t *testing.T) {
	code, stdout, stderr := runScenarios(t, "scenarios", "validate", invalidCorpus)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	require.NotEmpty(t, lines)
	problems := lines[:len(lines)-1]
	assert.Equal(t, fmt.Sprintf("%d problem(s)", len(problems)), lines[len(lines)-1])

	named := map[string]bool{}
	for _, l := range problems {
		m := problemLine.FindStringSubmatch(l)
		if assert.NotNil(t, m, "problem line is neither FILE: PATH: MSG nor FILE:LINE:COL: invalid JSON: MSG:\n%s", l) {
			named[m[1]] = true
		}
	}
	// Every broken file is named, and only those; dup/first.json is valid on
	// its own, dup/second.json repeats its id.
	var want []string
	err := filepath.WalkDir(invalidCorpus, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, "dup/first.json") {
			want = append(want, filepath.ToSlash(p))
		}
		return err
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(want), 24)
	var got []string
	for f := range named {
		got = append(got, f)
	}
	sort.Strings(want)
	sort.Strings(got)
	assert.Equal(t, want, got)
}

func TestScenariosValidateBuiltin(t *testing.T) {
	n := len(builtinScenarios(t))
	for _, args := range [][]string{nil, {"builtin"}, {suiteFolder}} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			code, stdout, stderr := runScenarios(t, append([]string{"scenarios", "validate"}, args...)...)
			assert.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			assert.Equal(t, fmt.Sprintf("%d scenarios valid\n", n), stdout)
		})
	}
}

func TestScenariosValidateMixed(t *testing.T) {
	// One broken file fails the whole load, valid files beside it included.
	code, stdout, stderr := runScenarios(t, "scenarios", "validate", validScenario, invalidCorpus+"/unknown-provision.json")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, invalidCorpus+"/unknown-provision.json: violations[1].provisions[2]: ")
	assert.NotContains(t, stderr, "followup.json")
	assert.True(t, strings.HasSuffix(stderr, "\n1 problem(s)\n"), stderr)

	code, stdout, _ = runScenarios(t, "scenarios", "validate", validScenario)
	assert.Equal(t, 0, code)
	assert.Equal(t, "1 scenarios valid\n", stdout)

	code, _, stderr = runScenarios(t, "scenarios", "validate", "no/such/file.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no/such/file.json: ")

	// The same id in the built-in folder and a copy of one of its files.
	dir := t.TempDir()
	ss := builtinScenarios(t)
	data, err := os.ReadFile(filepath.Join("../../rollout/suite", filepath.FromSlash(strings.TrimPrefix(ss[0].File, suite.Name+":"))))
	require.NoError(t, err)
	copyPath := filepath.Join(dir, "copy.json")
	require.NoError(t, os.WriteFile(copyPath, data, 0o644))
	code, _, stderr = runScenarios(t, "scenarios", "validate", suiteFolder, copyPath)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, fmt.Sprintf("duplicate scenario id %q", ss[0].ID))
}

func TestScenariosListJSON(t *testing.T) {
	ss := builtinScenarios(t)
	code, stdout, stderr := runScenarios(t, "scenarios", "list", "--json")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)

	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows), stdout)
	require.Len(t, rows, len(ss))
	drifts := map[string]bool{}
	for _, d := range scenario.DriftTypes {
		drifts[string(d)] = true
	}
	for i, r := range rows {
		for _, k := range []string{"id", "domain", "tools", "violations", "drift_types"} {
			assert.Contains(t, r, k, "row %d", i)
		}
		s := ss[i]
		assert.Equal(t, s.ID, r["id"], "rows come in id order")
		assert.Equal(t, s.Domain, r["domain"])
		assert.EqualValues(t, len(s.Tools), r["tools"])
		assert.EqualValues(t, len(s.Violations), r["violations"])
		assert.EqualValues(t, len(s.RequiredCalls), r["required_calls"])
		types, ok := r["drift_types"].([]any)
		require.True(t, ok, "drift_types is an array: %v", r["drift_types"])
		if len(s.Violations) > 0 {
			assert.NotEmpty(t, types, s.ID)
		}
		var names []string
		for _, d := range types {
			assert.True(t, drifts[d.(string)], "unknown drift type %v", d)
			names = append(names, d.(string))
		}
		assert.True(t, sort.StringsAreSorted(names), "drift_types sorted: %v", names)
	}

	// The same for a folder given on the command line.
	code, stdout, _ = runScenarios(t, "scenarios", "list", "--json", validScenario)
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, "testdata-followup-draft-001", rows[0]["id"])
	assert.Equal(t, []any{"data", "scope", "time"}, rows[0]["drift_types"])
	assert.Equal(t, validScenario, rows[0]["file"])
}

func TestScenariosListText(t *testing.T) {
	n := len(builtinScenarios(t))
	code, stdout, _ := runScenarios(t, "scenarios", "list")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	require.Len(t, lines, n+2)
	assert.True(t, strings.HasPrefix(lines[0], "ID "), lines[0])
	assert.Equal(t, fmt.Sprintf("%d scenarios", n), lines[len(lines)-1])

	code, stdout, stderr := runScenarios(t, "scenarios", "list", invalidCorpus+"/bad-enum-kind.json")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "bad-enum-kind.json: violations[2].kind: ")
}

// TestScenariosShowRoundTrips: what `scenarios show` prints validates and
// loads as the scenario it showed. Every eighth built-in scenario goes
// through the commands (each call loads the whole suite); every scenario
// goes through show's own encoding (json.MarshalIndent) and the loader.
func TestScenariosShowRoundTrips(t *testing.T) {
	dir := t.TempDir()
	for i, s := range builtinScenarios(t) {
		t.Run(s.ID, func(t *testing.T) {
			path := filepath.Join(dir, s.ID+".json")
			if i%8 == 0 {
				code, stdout, stderr := runScenarios(t, "scenarios", "show", s.ID)
				require.Equal(t, 0, code, stderr)
				assert.Empty(t, stderr)
				require.NoError(t, os.WriteFile(path, []byte(stdout), 0o644))
				code, vout, verr := runScenarios(t, "scenarios", "validate", path)
				assert.Equal(t, 0, code, verr)
				assert.Equal(t, "1 scenarios valid\n", vout)
			} else {
				b, err := json.MarshalIndent(s, "", "  ")
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
			}

			// What show prints is the scenario as loaded.
			shown, ps := scenario.LoadFile(path, nil)
			require.Empty(t, ps)
			a, err := json.Marshal(s)
			require.NoError(t, err)
			b, err := json.Marshal(shown)
			require.NoError(t, err)
			assert.JSONEq(t, string(a), string(b))
		})
	}
}

func TestScenariosShowFromFiles(t *testing.T) {
	code, stdout, stderr := runScenarios(t, "scenarios", "show", "--scenarios", validScenario, "testdata-followup-draft-001")
	require.Equal(t, 0, code, stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Equal(t, "testdata-followup-draft-001", doc["id"])
	assert.NotContains(t, doc, "File", "the load location is not part of the format")

	code, stdout, stderr = runScenarios(t, "scenarios", "show", "no-such-scenario")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "antidrift: no scenario with id \"no-such-scenario\"\n", stderr)

	code, _, stderr = runScenarios(t, "scenarios", "show", "--scenarios", invalidCorpus+"/goal-never-set.json", "testdata-followup-draft-001")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "goal-never-set.json: goal[1]: ")

	code, _, stderr = runScenarios(t, "scenarios", "show")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "antidrift: ")
}

// "builtin" is the built-in suite even where a folder of that name exists;
// the load says so, and ./builtin reads the folder.
func TestBuiltinNameSaysWhichWasRead(t *testing.T) {
	t.Chdir(t.TempDir())
	require.NoError(t, os.Mkdir("builtin", 0o755))
	var note bytes.Buffer
	saved := noteOut
	noteOut = &note
	defer func() { noteOut = saved }()
	ss, err := loadScenarios([]string{"builtin"}, "")
	require.NoError(t, err)
	assert.NotEmpty(t, ss)
	assert.Contains(t, note.String(), `"builtin" is the built-in suite; the folder of that name here is not read (pass ./builtin for it)`)
	_, err = loadScenarios([]string{"./builtin"}, "")
	require.Error(t, err, "./builtin is the (empty) folder")
}
