package sim

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/skill"
)

// baselineRates are a baseline's EM, UPR and OPR over a task's queries of l.
func baselineRates(kind string, l *skill.Library, task skill.Task) (em, upr, opr float64, n int) {
	for _, q := range l.QueriesOf(task) {
		var lab skill.Label
		if task == skill.TaskSkill {
			lab = skill.LabelSkill(l, q, BaselineSkill(kind, l, q), skill.ParseOK)
		} else {
			lab = skill.LabelTools(l, q, skill.CallsFor(l, q, BaselineTools(kind, l, q)), skill.ParseOK)
		}
		n++
		switch lab {
		case skill.ExactMatch:
			em++
		case skill.UnderPrivilege:
			upr++
		case skill.OverPrivilege:
			opr++
		}
	}
	return em / float64(n), upr / float64(n), opr / float64(n), n
}

// TestBaselineFigures prints every baseline's rates on the built-in
// libraries (BASELINES=1); the figures in docs/skills.md come from it.
func TestBaselineFigures(t *testing.T) {
	if os.Getenv("BASELINES") == "" {
		t.Skip("set BASELINES=1 to print the baselines' rates on the built-in libraries")
	}
	for _, task := range []skill.Task{skill.TaskSkill, skill.TaskTools} {
		for _, kind := range []string{BaselineKeyword, BaselineOverlap, BaselineLowest, BaselineHighest} {
			var em, upr, opr float64
			total := 0
			for _, name := range skill.BuiltinNames() {
				l, err := skill.Builtin(name)
				require.NoError(t, err)
				e, u, o, n := baselineRates(kind, l, task)
				em, upr, opr, total = em+e*float64(n), upr+u*float64(n), opr+o*float64(n), total+n
			}
			fmt.Printf("%s\t%s\tn=%d\tEM=%.3f\tUPR=%.3f\tOPR=%.3f\n", task, kind, total, em/float64(total), upr/float64(total), opr/float64(total))
		}
	}
}

// Each baseline's choice on the small notes library, through the policy
// as select runs it: the lexical lure ("Manage this for me: show me …")
// pulls the keyword rule and word overlap up to the admin skill, lowest
// takes the reader (right here) and highest the admin; on Task 2 the rule
// finds both tools of "open … and change its title", overlap and lowest
// stop at one (under-privilege) and highest takes the bulk tool.
func TestBaselineSelections(t *testing.T) {
	l, err := skill.LoadFile("../../skill/testdata/notes.json")
	require.NoError(t, err)
	q1, q2 := l.QueriesOf(skill.TaskSkill)[0], l.QueriesOf(skill.TaskTools)[0]
	for _, c := range []struct {
		name       string
		skill      string
		skillLabel skill.Label
		tools      []string
		toolsLabel skill.Label
	}{
		{BaselineKeyword, "note-admin", skill.OverPrivilege, []string{"edit_note", "get_note"}, skill.ExactMatch},
		{BaselineOverlap, "note-admin", skill.OverPrivilege, []string{"edit_note"}, skill.UnderPrivilege},
		{BaselineLowest, "note-reader", skill.ExactMatch, []string{"get_note"}, skill.UnderPrivilege},
		{BaselineHighest, "note-admin", skill.OverPrivilege, []string{"manage_notes"}, skill.OverPrivilege},
	} {
		prof, err := LookupSelection("sim:" + c.name)
		require.NoError(t, err, c.name)
		pol := NewSelection(prof, l)
		assert.Equal(t, "sim:"+c.name, pol.Name())
		ask := func(prompt string) string {
			resp, err := pol.Complete(context.Background(), policy.Request{Seed: 7,
				Messages: []trajectory.Message{{Role: trajectory.RoleUser, Content: prompt}}})
			require.NoError(t, err, c.name)
			return resp.Message.Content
		}
		got, status, _ := skill.ParseSkillAnswer(l, ask(skill.SkillPrompt(l, q1)))
		assert.Equal(t, c.skill, got, c.name)
		assert.Equal(t, c.skillLabel, skill.LabelSkill(l, q1, got, status), c.name)
		calls, status, _ := skill.ParseToolsAnswer(ask(skill.ToolsPrompt(l, q2, q2.Given())))
		assert.Equal(t, c.tools, skill.SetOf(calls), c.name)
		assert.Equal(t, c.toolsLabel, skill.LabelTools(l, q2, calls, status), c.name)
		// No seed or draw: another seed gives the same answer.
		resp, err := pol.Complete(context.Background(), policy.Request{Seed: 99,
			Messages: []trajectory.Message{{Role: trajectory.RoleUser, Content: skill.SkillPrompt(l, q1)}}})
		require.NoError(t, err)
		assert.Equal(t, c.skill, resp.Message.Content, c.name)
	}
}

// On the built-in libraries always-lowest never over-reaches but is
// mostly under-privileged, and always-highest is never exact on Task 1:
// the references that make FR without UPR misleading.
func TestBaselinePrivilegeExtremes(t *testing.T) {
	l, err := skill.Builtin(skill.BuiltinNames()[0])
	require.NoError(t, err)
	_, upr, opr, _ := baselineRates(BaselineLowest, l, skill.TaskSkill)
	assert.Zero(t, opr)
	assert.GreaterOrEqual(t, upr, 0.5)
	em, _, opr, _ := baselineRates(BaselineHighest, l, skill.TaskSkill)
	assert.Zero(t, em)
	assert.Equal(t, 1.0, opr)
}
