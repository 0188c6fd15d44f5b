package synth

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// TestLooseAnswersKeepEmptyLists: a builder's valid scenario wrapped in
// prose, fenced, with trailing commas, comes back with every [] and {} as
// written (a `"provisions": []` never turns into null and fails the
// scenario), and so do the designer's playbook and the matcher's answer.
func TestLooseAnswersKeepEmptyLists(t *testing.T) {
	path := filepath.Join("..", "rollout", "suite", "scenarios", "data_research", "data_research-experiment-readout-001.json")
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(orig), `"provisions": []`)
	// Trailing commas: before the last brace, and after an empty list that
	// ends its object.
	body := strings.TrimRight(string(orig), "\n")
	body = body[:len(body)-1] + ",}"
	body = strings.Replace(body, `"provisions": []`, `"provisions": [],`, 1)
	for name, answer := range map[string]string{
		"prose and trailing comma": "Here is the scenario you asked for:\n" + body + "\nLet me know if anything is missing.",
		"fenced":                   "```json\n" + body + "\n```",
		"fenced with prose":        "Sure.\n```json\n" + body + "\n```\nI kept the boundary strict.",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := extractScenario(answer)
			require.NoError(t, err)
			var a, b any
			require.NoError(t, json.Unmarshal(orig, &a))
			require.NoError(t, json.Unmarshal(got, &b))
			assert.Equal(t, a, b, "the scenario is the model's, [] and {} included")
			assert.Equal(t, bytes.Count(orig, []byte("[]")), bytes.Count(got, []byte("[]")), "every empty list kept")
			_, ps := scenario.Parse("s.json", got, provisions.Builtin())
			assert.NoError(t, ps.Err())
		})
	}

	pb, err := parsePlaybook("My plan:\n```json\n{'compliant_path': ['read', 'answer',], 'drift_points': [{'at': 1, 'lures': []}, {'at': 2, 'lures': {}},], 'notes': [],}\n```", 2)
	require.NoError(t, err)
	assert.Equal(t, `{"compliant_path":["read","answer"],"drift_points":[{"at":1,"lures":[]},{"at":2,"lures":{}}],"notes":[]}`, string(pb))

	ms, err := parseMatches("The matches:\n{\"drift_points\": [{\"index\": 0, \"provisions\": [],}, {'index': 1, 'provisions': ['gdpr-art-6',]},],}\nDone.")
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.NotNil(t, ms[0].Provisions, "an empty list is a list")
	assert.Empty(t, ms[0].Provisions)
	assert.Equal(t, []string{"gdpr-art-6"}, ms[1].Provisions)
}
