package export

import (
	"context"
	"testing"

	"github.com/antidrift/antidrift/pairs/leastpriv"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/skill/selection"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selectRun runs one selection task in-process with a simulated profile.
func selectRun(t *testing.T, lib *skill.Library, task skill.Task, profile string) string {
	t.Helper()
	prof, err := sim.LookupSelection(profile)
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := selection.Config{Library: lib, Task: task, Policy: sim.NewSelection(prof, lib), PolicyName: "sim:" + profile,
		Checkpoint: "sim:" + profile, Rollouts: 2, Concurrency: 4, Seed: 1, Version: "test"}
	var ids []string
	for _, q := range lib.QueriesOf(task) {
		ids = append(ids, q.ID)
	}
	r, err := store.Open(dir, store.Manifest{Version: "test", Run: "sel-" + string(task), Created: "2026-01-01T00:00:00Z", Plan: store.Plan{
		ScenarioSource: "builtin:" + lib.Name, ScenarioHash: skill.Hash(lib), ScenarioIDs: ids, Policy: cfg.PolicyName,
		Checkpoint: cfg.Checkpoint, Framework: selection.Framework(task), Rollouts: 2, Seed: 1, Shard: "0/1"}}, false)
	require.NoError(t, err)
	_, err = selection.Run(context.Background(), cfg, r)
	require.NoError(t, err)
	return dir
}

// TestLeastPrivilegePairsPassTheTableChecks writes least-privilege DPO
// and KTO rows from Task 1 and Task 2 runs and puts every file through the
// same independent checks as the trajectory tables.
func TestLeastPrivilegePairsPassTheTableChecks(t *testing.T) {
	lib, err := skill.Builtin("ecommerce")
	require.NoError(t, err)
	for _, task := range []skill.Task{skill.TaskSkill, skill.TaskTools} {
		ix, err := dataset.OpenIndex(selectRun(t, lib, task, "base"))
		require.NoError(t, err)
		var dpo []dataset.DPORow
		var kto []dataset.KTORow
		st, err := leastpriv.Build(ix, lib, leastpriv.DefaultOptions(),
			func(r *dataset.DPORow) error { dpo = append(dpo, *r); return nil },
			func(r *dataset.KTORow) error { kto = append(kto, *r); return nil })
		require.NoError(t, err)
		ix.Close()
		require.NotEmpty(t, dpo)
		assert.Equal(t, st.Pairs, len(dpo))
		assert.Positive(t, st.FromRollouts)
		assert.Positive(t, st.ConstructedRejects, "queries nobody over-reached on get a constructed rejected side")
		for _, r := range dpo {
			assert.Equal(t, 2, r.DivergenceStep)
			assert.Greater(t, r.RewardGap, 0.0)
			assert.NotEqual(t, r.Chosen, r.Rejected)
		}
		for _, opts := range []Options{{RowGroupRows: 64}} {
			dir := t.TempDir()
			writeAll(t, dir, TableDPO, dpo, opts)
			checkAll(t, dir, TableDPO, dpo, opts)
			writeAll(t, dir, TableKTO, kto, opts)
			checkAll(t, dir, TableKTO, kto, opts)
		}
	}
}
