package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSkillsCommand(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runScenarios(t, "skills", "--write", dir, "--json")
	require.Equal(t, 0, code, stderr)
	var sums []librarySummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sums))
	require.Len(t, sums, 3)
	for _, s := range sums {
		assert.Equal(t, 20, s.Skills, s.Library)
		assert.GreaterOrEqual(t, s.Tools, 30, s.Library)
		assert.Equal(t, 200, s.Task1, s.Library)
		assert.Equal(t, 516, s.Task2, s.Library)
		// The written file is a valid library with the same hash.
		code, out, stderr := runScenarios(t, "skills", s.File, "--json")
		require.Equal(t, 0, code, stderr)
		var back []librarySummary
		require.NoError(t, json.Unmarshal([]byte(out), &back))
		assert.Equal(t, s.Hash, back[0].Hash)
	}
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name":"x","domain":"d","tools":[{"name":"t","description":"d","parameters":{"type":"object"},"privilege":1,"risk":"low","provides":["a"]}],"skills":[{"name":"s","description":"d","document":"d","privilege":1,"tools":["u"]}],"queries":[]}`), 0o644))
	code, _, stderr = runScenarios(t, "skills", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, bad+`: skills[0].tools[0]: unknown tool "u"`)
}
