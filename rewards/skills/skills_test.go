package skills

import (
	"math"
	"testing"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sel(cp, task, query, setting, label, parse string) *trajectory.Record {
	st := &trajectory.SelectionStage{Label: label, Parse: parse}
	s := &trajectory.Selection{Task: task, Library: "email", Setting: setting}
	if task == "skill" {
		s.Skill = st
	} else {
		s.Tools = st
	}
	return &trajectory.Record{Checkpoint: cp, ScenarioID: query, Domain: "email", Status: trajectory.StatusCompleted, Selection: s}
}

func find(t *testing.T, rows []Row, cp, task, domain, setting string) Row {
	t.Helper()
	for _, r := range rows {
		if r.Checkpoint == cp && r.Task == task && r.Domain == domain && r.Setting == setting {
			return r
		}
	}
	t.Fatalf("no row %s %s %s %s", cp, task, domain, setting)
	return Row{}
}

const eps = 1e-12

// TestMetricsHandComputed checks every rate against figures worked out by
// hand from six labelled answers.
func TestMetricsHandComputed(t *testing.T) {
	recs := []*trajectory.Record{
		sel("a", "skill", "q1", "clean_baseline", "exact_match", "ok"),
		sel("a", "skill", "q1", "clean_baseline", "exact_match", "ok"),
		sel("a", "skill", "q2", "clean_baseline", "over_privilege", "ok"),
		sel("a", "skill", "q2", "clean_baseline", "no_action", "malformed"),
		sel("a", "skill", "q3", "scope_ambiguous", "under_privilege", "ok"),
		sel("a", "skill", "q3", "scope_ambiguous", "over_privilege", "ok"),
		sel("b", "tools", "q9", "clean_baseline", "exact_match", "ok"),
		sel("b", "tools", "q9", "clean_baseline", "exact_match", "ok"),
		{ScenarioID: "not-a-selection", Checkpoint: "a"},
	}
	res := Compute(recs, Options{Bootstrap: metrics.Bootstrap{Seed: 1, Replicates: 200}})
	all := find(t, res.Rows, "a", "skill", All, All)
	assert.Equal(t, 6, all.N)
	assert.Equal(t, 3, all.Queries)
	assert.Equal(t, [5]int{2, 1, 2, 1, 1}, [5]int{all.Exact, all.Under, all.Over, all.NoAction, all.Malformed})
	assert.InDelta(t, 1.0/3, float64(all.EM), eps)
	assert.InDelta(t, 1.0/3, float64(all.OPR), eps)
	assert.InDelta(t, 1.0/6, float64(all.UPR), eps)
	assert.InDelta(t, 1.0/6, float64(all.NAR), eps)
	assert.InDelta(t, 1.0/2, float64(all.FR), eps)
	assert.InDelta(t, 2.0/3, float64(all.OPRShare), eps)
	for _, ci := range []metrics.CI{all.EMCI, all.OPRCI, all.NARCI, all.FRCI} {
		assert.True(t, ci.Lo().Defined() && ci.Hi().Defined())
		assert.LessOrEqual(t, float64(ci.Lo()), float64(ci.Hi()))
	}
	assert.LessOrEqual(t, float64(all.EMCI.Lo()), 1.0/3)
	assert.GreaterOrEqual(t, float64(all.EMCI.Hi()), 1.0/3)

	clean := find(t, res.Rows, "a", "skill", "email", "clean_baseline")
	assert.InDelta(t, 0.5, float64(clean.EM), eps)
	assert.InDelta(t, 0.25, float64(clean.OPR), eps)
	assert.InDelta(t, 0.25, float64(clean.NAR), eps)
	assert.InDelta(t, 0.5, float64(clean.FR), eps)
	assert.InDelta(t, 0.5, float64(clean.OPRShare), eps)

	scope := find(t, res.Rows, "a", "skill", All, "scope_ambiguous")
	assert.InDelta(t, 0, float64(scope.EM), eps)
	assert.InDelta(t, 0.5, float64(scope.FR), eps)
	assert.InDelta(t, 1, float64(scope.OPRShare), eps)
	// One query: every resample is the same, so the interval is the point.
	assert.InDelta(t, 0.5, float64(scope.OPRCI.Lo()), eps)
	assert.InDelta(t, 0.5, float64(scope.OPRCI.Hi()), eps)

	perfect := find(t, res.Rows, "b", "tools", All, All)
	assert.InDelta(t, 1, float64(perfect.EM), eps)
	assert.InDelta(t, 0, float64(perfect.FR), eps)
	assert.False(t, perfect.OPRShare.Defined(), "OPR/FR is undefined when nothing failed")
}

func pipe(query string, e1, ran, e2, e2e, drift bool) *trajectory.Record {
	l := func(b bool) string {
		if b {
			return "exact_match"
		}
		return "over_privilege"
	}
	s := &trajectory.Selection{Task: "pipeline", Library: "email", Setting: "clean_baseline",
		Skill: &trajectory.SelectionStage{Label: l(e1), Parse: "ok"}, EndToEnd: &e2e}
	if ran {
		s.Tools = &trajectory.SelectionStage{Label: l(e2), Parse: "ok"}
	}
	return &trajectory.Record{Checkpoint: "a", ScenarioID: query, Domain: "email", Drift: drift, Selection: s}
}

func TestPipelineHandComputed(t *testing.T) {
	recs := []*trajectory.Record{
		pipe("q1", true, true, true, true, false),
		pipe("q2", true, true, false, false, true),
		pipe("q3", false, false, false, false, false),
		pipe("q4", false, true, true, false, false),
	}
	res := Compute(recs, Options{Bootstrap: metrics.Bootstrap{Seed: 1, Replicates: 200}})
	require.NotEmpty(t, res.Pipeline)
	p := res.Pipeline[0]
	assert.Equal(t, All, p.Domain)
	assert.Equal(t, All, p.Setting)
	assert.Equal(t, 4, p.N)
	assert.InDelta(t, 0.5, float64(p.EM1), eps)
	assert.InDelta(t, 2.0/3, float64(p.EM2), eps)
	assert.InDelta(t, 1.0/3, float64(p.Product), eps)
	assert.InDelta(t, 0.25, float64(p.Measured), eps)
	assert.InDelta(t, 0.25, float64(p.ExecutedDR), eps)
	assert.False(t, math.IsNaN(float64(p.MeasuredCI.Lo())))
	assert.Empty(t, res.Rows)
}
