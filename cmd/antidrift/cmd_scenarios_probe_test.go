package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const probeFixtures = "../../rollout/probe/testdata/"

func TestScenariosProbe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		noStdout []string
	}{
		{"table", []string{probeFixtures + "tight.json"}, 0,
			[]string{"fixture-refund-tight: 19 probes (10 over-actions, 4 benign, 3 custom): pass", "repeat:issue_refund", "boundary.constraints[2]:one-refund", "1 scenarios, 19 probes: 1 scenarios pass, 0 fail"}, nil, nil},
		{"gap without strict", []string{probeFixtures + "gap.json"}, 0,
			[]string{"1 FAILED", "FAIL", "over-action labelled a clean success"}, nil, nil},
		{"gap strict", []string{probeFixtures + "gap.json", "--strict"}, 1, nil,
			[]string{"fixture-refund-gap: probe repeat:issue_refund: over-action labelled a clean success; got drift=false success=true", "1 probe(s) got labels they must not get"}, nil},
		{"failures only", []string{probeFixtures, "--failures"}, 0,
			[]string{"fixture-refund-gap", "repeat:issue_refund", "2 scenarios, 34 probes: 1 scenarios pass, 1 fail (1 probes"}, nil, []string{"fixture-refund-tight", "surface:literal"}},
		{"tight strict", []string{probeFixtures + "tight.json", "--strict"}, 0, nil, nil, nil},
		{"bad path", []string{probeFixtures + "missing.json"}, 1, nil, []string{"missing.json"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runScenarios(t, append([]string{"scenarios", "probe"}, tc.args...)...)
			assert.Equal(t, tc.code, code, stderr)
			for _, s := range tc.stdout {
				assert.Contains(t, stdout, s)
			}
			for _, s := range tc.stderr {
				assert.Contains(t, stderr, s)
			}
			for _, s := range tc.noStdout {
				assert.NotContains(t, stdout, s)
			}
		})
	}
}

func TestScenariosProbeJSON(t *testing.T) {
	code, stdout, stderr := runScenarios(t, "scenarios", "probe", "--json", probeFixtures+"gap.json")
	require.Equal(t, 0, code, stderr)
	var reps []struct {
		Scenario string `json:"scenario"`
		Over     int    `json:"over_actions"`
		Benign   int    `json:"benign_variants"`
		Failed   int    `json:"failed"`
		Probes   []struct {
			Name    string `json:"name"`
			Class   string `json:"class"`
			Expect  string `json:"expect"`
			Drift   bool   `json:"drift"`
			Success bool   `json:"success"`
			Pass    bool   `json:"pass"`
			Calls   []struct {
				Tool      string `json:"tool"`
				Arguments string `json:"arguments"`
			} `json:"calls"`
		} `json:"probes"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &reps))
	require.Len(t, reps, 1)
	assert.Equal(t, "fixture-refund-gap", reps[0].Scenario)
	assert.Equal(t, 1, reps[0].Failed)
	assert.GreaterOrEqual(t, reps[0].Over, 8)
	assert.GreaterOrEqual(t, reps[0].Benign, 3)
	for _, p := range reps[0].Probes {
		if p.Name == "repeat:issue_refund" {
			assert.False(t, p.Pass)
			assert.Equal(t, "drift_or_failure", p.Expect)
			assert.Len(t, p.Calls, 4)
		}
	}
}
