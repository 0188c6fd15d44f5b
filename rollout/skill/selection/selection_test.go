package selection

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runTask(t *testing.T, lib *skill.Library, task skill.Task, profile string, rollouts int) []trajectory.Record {
	t.Helper()
	prof, err := sim.LookupSelection(profile)
	require.NoError(t, err)
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "r", Plan: store.Plan{Policy: "sim:" + profile}}, false)
	require.NoError(t, err)
	cfg := Config{Library: lib, Task: task, Policy: sim.NewSelection(prof, lib), PolicyName: "sim:" + profile,
		Checkpoint: profile, Rollouts: rollouts, Concurrency: 4, Seed: 1}
	sum, err := Run(context.Background(), cfg, run)
	require.NoError(t, err)
	require.Equal(t, len(lib.QueriesOf(task))*rollouts, sum.Ran)
	var out []trajectory.Record
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		out = append(out, *it.At())
	}
	require.NoError(t, it.Err())
	return out
}

func TestPipelineExecutesAndLabels(t *testing.T) {
	lib, err := skill.Builtin("email")
	require.NoError(t, err)
	recs := runTask(t, lib, skill.TaskPipeline, "base", 1)
	var em1, em2, e2e, drift, n, slipped float64
	byID := map[string]*skill.Query{}
	for _, q := range lib.QueriesOf(skill.TaskPipeline) {
		byID[q.ID] = q
	}
	for _, r := range recs {
		n++
		sel := r.Selection
		require.NotNil(t, sel.Skill)
		require.NotNil(t, sel.EndToEnd)
		if sel.Skill.Label == "exact_match" {
			em1++
		}
		if sel.Tools != nil && sel.Tools.Label == "exact_match" {
			em2++
			var want []trajectory.SelectionCall
			for _, c := range byID[r.ScenarioID].Calls {
				b, _ := json.Marshal(c.Args)
				want = append(want, trajectory.SelectionCall{Tool: c.Tool, Arguments: b})
			}
			if assert.ObjectsAreEqual(want, sel.Tools.Calls) {
				assert.True(t, r.Success && !r.Drift, "%s: the ground-truth calls are a clean success", r.ScenarioID)
			} else {
				// Right tools, another item: only execution shows it.
				slipped++
				assert.False(t, r.Success && !r.Drift, "%s: exact by tool set but wrong arguments is not clean", r.ScenarioID)
				assert.False(t, *sel.EndToEnd, r.ScenarioID)
			}
		}
		if sel.Tools != nil && sel.Tools.Label == "over_privilege" && sel.Tools.ChosenPrivilege > sel.Tools.ExpectedPrivilege {
			assert.True(t, r.Drift, "%s: a call above the ceiling is tool drift when executed", r.ScenarioID)
		}
		if r.Drift {
			drift++
		}
		if *sel.EndToEnd {
			e2e++
		}
	}
	t.Logf("EM1 %.3f EM2 %.3f EM1xEM2 %.3f measured %.3f executed DR %.3f", em1/n, em2/n, em1/n*em2/n, e2e/n, drift/n)
	assert.Greater(t, drift, 0.0)
	assert.Greater(t, slipped, 0.0, "the simulation's argument slips reach execution")
}

// refusingPolicy answers every request with the same 4xx, as an endpoint
// refusing a parameter does.
type refusingPolicy struct{}

type refusal400 struct{}

func (refusal400) Error() string   { return "HTTP 400: request rejected by gateway policy 7" }
func (refusal400) HTTPStatus() int { return 400 }
func (refusal400) Unwrap() error   { return policy.ErrModel }

func (refusingPolicy) Complete(context.Context, policy.Request) (policy.Response, error) {
	return policy.Response{}, refusal400{}
}

// Selection runs share the first-wave refusal gate: an endpoint refusing
// every request stops the run with no model_error records written.
func TestEndpointRefusingEveryRequestStopsTheSelectionRun(t *testing.T) {
	lib, err := skill.Builtin("email")
	require.NoError(t, err)
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "r", Plan: store.Plan{Policy: "openai:m"}}, false)
	require.NoError(t, err)
	cfg := Config{Library: lib, Task: skill.TaskSkill, Policy: refusingPolicy{}, PolicyName: "openai:m",
		Checkpoint: "m", Rollouts: 1, Concurrency: 2, Seed: 1}
	sum, err := Run(context.Background(), cfg, run)
	require.ErrorIs(t, err, engine.ErrRefused)
	assert.Contains(t, err.Error(), "gateway policy 7")
	assert.Zero(t, sum.Ran)
	require.NoError(t, run.Close())
	it := store.Records(dir)
	defer it.Close()
	assert.False(t, it.Next(), "no record for a refused endpoint")
	require.NoError(t, it.Err())
}
