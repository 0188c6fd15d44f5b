package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestPairsDefaultLayout: by default the DPO table holds drift-onset step
// pairs whose chosen and rejected are one assistant turn each (model-written
// tokens only), and the card says so; trajectory pairs come by flag.
func TestPairsDefaultLayout(t *testing.T) {
	dirs := pairRuns(t)
	for _, tc := range []struct {
		name   string
		args   []string
		types  map[string]bool
		layout string
	}{
		{"default", nil, map[string]bool{pairs.TypeStep: true}, "**Layout of this file:** step pairs only, each side one assistant turn"},
		{"trajectory", []string{"--pair-types", "trajectory"}, map[string]bool{pairs.TypeTrajectory: true}, "**Layout of this file:** trajectory pairs only"},
		{"both", []string{"--pair-types", "step,trajectory"}, map[string]bool{pairs.TypeStep: true, pairs.TypeTrajectory: true}, "**Layout of this file:** trajectory and step pairs mixed"},
		{"step rest", []string{"--step-continuation", "rest"}, map[string]bool{pairs.TypeStep: true}, "**Layout of this file:** step pairs only, each side the rest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			code, _, stderr := runScenarios(t, append(append(append([]string{"pairs"}, dirs...), "--out", out, "--format", "jsonl"), tc.args...)...)
			require.Equal(t, 0, code, stderr)
			rows := readJSONL[dataset.DPORow](t, filepath.Join(out, "jsonl/dpo.jsonl"))
			require.NotEmpty(t, rows)
			seen := map[string]bool{}
			for i, r := range rows {
				seen[r.PairType] = true
				require.True(t, tc.types[r.PairType], "row %d: pair_type %s", i, r.PairType)
				if r.PairType == pairs.TypeStep && tc.name != "step rest" {
					for _, side := range [][]byte{r.Chosen[0], r.Rejected[0]} {
						var m struct {
							Role string `json:"role"`
						}
						require.NoError(t, json.Unmarshal(side, &m))
						assert.Equal(t, string(trajectory.RoleAssistant), m.Role, "row %d: a step side is the model's turn", i)
					}
					assert.Len(t, r.Chosen, 1, "row %d: chosen is one assistant turn", i)
					assert.Len(t, r.Rejected, 1, "row %d: rejected is one assistant turn", i)
				}
			}
			assert.Equal(t, tc.types, seen)
			card, err := os.ReadFile(filepath.Join(out, "README.md"))
			require.NoError(t, err)
			assert.Contains(t, string(card), tc.layout)
		})
	}
	code, _, stderr := runScenarios(t, "pairs", dirs[0], "--out", t.TempDir(), "--pair-types", "turn")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--pair-types")
	code, _, stderr = runScenarios(t, "pairs", dirs[0], "--out", t.TempDir(), "--step-pairs", "--pair-types", "step")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "give one")
}
