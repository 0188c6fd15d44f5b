package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScenariosAudit(t *testing.T) {
	code, stdout, stderr := runScenarios(t, "scenarios", "audit", "builtin")
	require.Equal(t, 0, code, stderr)
	for _, s := range []string{"182 scenarios valid", "0 labelled as they must not be, 0 not built",
		"tools in seeded order, seed 1", `"the first k tools are allowed"`, "bag of words on the leaf", "lure or benign note?"} {
		assert.Contains(t, stdout, s)
	}

	code, stdout, stderr = runScenarios(t, "scenarios", "audit", "--json", "--tool-order", "authored", probeFixtures+"tight.json")
	require.Equal(t, 0, code, stderr)
	var rep auditReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, 1, rep.Scenarios)
	assert.Equal(t, 19, rep.Probes)
	assert.Equal(t, "scenario", rep.Learnable.Folds, "one domain: held out by scenario")
	assert.Equal(t, "authored", rep.Learnable.ToolOrder)
	assert.NotEmpty(t, rep.Learnable.Rows)

	// --strict fails on a wrong probe, naming it.
	code, _, stderr = runScenarios(t, "scenarios", "audit", "--strict", probeFixtures+"gap.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "probe repeat:issue_refund")

	code, _, stderr = runScenarios(t, "scenarios", "audit", "--tool-order", "shuffled")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `unknown tool order "shuffled"`)
}
