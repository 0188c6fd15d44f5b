package scenario_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// FuzzParse feeds arbitrary bytes to the loader. Properties: it never
// panics; it returns a scenario exactly when it reports no problem; every
// problem names the file and is located by a line or a JSON path; a scenario
// it accepts survives `scenarios show` (marshal, parse again) unchanged.
//
// Seeds: the valid fixture, every file of the invalid corpus, and
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/invalid/*.json")
	seeds = append(seeds, validFile)
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"tools":[{"name":"t","parameters":{"type":"object"}}],"required_calls":[{"tool":"t","args":{}}]}`))

	const name = "fuzz.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ps := scenario.Parse(name, data, nil)
		if (s == nil) != (len(ps) > 0) {
			t.Fatalf("scenario %v with %d problems:\n%v", s != nil, len(ps), ps)
		}
		for _, p := range ps {
			if p.File != name || !strings.HasPrefix(p.String(), name+":") {
				t.Fatalf("problem does not name the file: %q", p.String())
			}
			if p.Line == 0 && p.Path == "" {
				t.Fatalf("problem with neither line nor JSON path: %q", p.String())
			}
		}
		if s == nil {
			return
		}
		out, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatalf("accepted scenario does not marshal: %v", err)
		}
		s2, ps := scenario.Parse(name, out, nil)
		if len(ps) > 0 {
			t.Fatalf("shown scenario does not validate:\n%v\n%s", ps, out)
		}
		b1, _ := json.Marshal(s)
		b2, _ := json.Marshal(s2)
		if string(b1) != string(b2) {
			t.Fatalf("round trip changed the scenario:\n%s\n%s", b1, b2)
		}
	})
}

// FuzzMatch checks the matcher on arbitrary argument objects. Properties:
// Match and Disjoint never panic; Equal is reflexive and symmetric on
// decoded values; a matcher built from a call's own arguments (literals, or
// quoted patterns of their text) matches that call; a matcher that matches a
// call is never Disjoint from the call's own matcher.
//
// Seeds: f.Add below and testdata/fuzz/FuzzMatch.
func FuzzMatch(f *testing.F) {
	f.Add(`{"to":"alice@x"}`, `{"to":"alice@x","subject":"hi"}`, `^alice`)
	f.Add(`{"n":1}`, `{"n":1.0}`, `^1`)
	f.Add(`{"n":10e-1}`, `{"n":1e0}`, `\d`)
	f.Add(`{"o":{"a":[1,2]}}`, `{"o":{"a":[1,2.0]},"x":null}`, `"a"`)
	f.Add(`{}`, `{}`, ``)
	f.Add(`{"r":"daily"}`, `{"r":"once"}`, `^(daily|weekly)$`)
	f.Add(`[1,2]`, `"x"`, `(`)
	f.Add(`{"b":true}`, `{"b":false}`, `^true$`)
	f.Add(`{"s":"\u00e9"}`, `{"s":"é"}`, `(?i)É`)

	f.Fuzz(func(t *testing.T, argsText, callText, pattern string) {
		a, errA := scenario.DecodeJSON([]byte(argsText))
		b, errB := scenario.DecodeJSON([]byte(callText))
		if errA == nil {
			if !scenario.Equal(a, a) {
				t.Fatalf("Equal not reflexive on %s", argsText)
			}
		}
		if errA == nil && errB == nil {
			if scenario.Equal(a, b) != scenario.Equal(b, a) {
				t.Fatalf("Equal not symmetric on %s and %s", argsText, callText)
			}
		}

		call, err := scenario.ParseArgs([]byte(callText))
		if err != nil {
			return
		}

		// A matcher built from the call's own arguments matches the call.
		own, err := scenario.NewMatcher(raw(t, call), nil)
		if err != nil {
			t.Fatalf("call arguments do not make a matcher: %v", err)
		}
		if !own.Match(call) {
			t.Fatalf("matcher of %s does not match it", callText)
		}
		if own.Disjoint(own) {
			t.Fatalf("matcher of %s is disjoint from itself", callText)
		}
		quoted := map[string]string{}
		for k, v := range call {
			quoted[k] = "^" + regexp.QuoteMeta(text(t, v)) + "$"
		}
		byPattern, err := scenario.NewMatcher(nil, quoted)
		if err != nil {
			t.Fatalf("quoted patterns do not compile: %v", err)
		}
		if !byPattern.Match(call) {
			t.Fatalf("quoted patterns %v do not match %s", quoted, callText)
		}
		if byPattern.Disjoint(own) || own.Disjoint(byPattern) {
			t.Fatalf("quoted patterns of %s are disjoint from its literals", callText)
		}

		// An arbitrary subset, with an arbitrary pattern on each of its keys
		// and on one key of the call.
		args, err := scenario.ParseArgs([]byte(argsText))
		if err != nil {
			return
		}
		patterns := map[string]string{}
		if _, err := regexp.Compile(pattern); err == nil {
			for k := range args {
				patterns[k] = pattern
			}
			for k := range call {
				patterns[k] = pattern
				break
			}
		}
		m, err := scenario.NewMatcher(raw(t, args), patterns)
		if err != nil {
			t.Fatalf("NewMatcher(%s, %v): %v", argsText, patterns, err)
		}
		matched := m.Match(call)
		if matched && (m.Disjoint(own) || own.Disjoint(m)) {
			t.Fatalf("%s with %v matches %s but is disjoint from its matcher", argsText, patterns, callText)
		}
		lit, err := scenario.NewMatcher(raw(t, args), nil)
		if err != nil {
			t.Fatal(err)
		}
		if lit.Match(call) {
			for k, v := range args {
				if !scenario.Equal(v, call[k]) {
					t.Fatalf("match with %s unequal to %v", k, call[k])
				}
			}
		}
		if matched && !lit.Match(call) {
			t.Fatalf("adding patterns made %s match %s", argsText, callText)
		}
	})
}

// raw re-encodes decoded arguments as the scenario format stores them.
func raw(t *testing.T, args map[string]any) map[string]json.RawMessage {
	t.Helper()
	out := make(map[string]json.RawMessage, len(args))
	for k, v := range args {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal %s: %v", k, err)
		}
		out[k] = b
	}
	return out
}

// text is what a pattern sees of a value: a string as it is, anything else
// as JSON (matching the package's rule).
func text(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
