package audit_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/audit"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
)

func row(t *testing.T, l audit.Learnability, q audit.Question, classifier string) audit.Row {
	t.Helper()
	for _, r := range l.Rows {
		if r.Question == q && r.Classifier == classifier {
			return r
		}
	}
	t.Fatalf("no row %q / %q", q, classifier)
	return audit.Row{}
}

// The tools' place teaches nothing once the order is drawn from the seed,
// while the file's order gives the answer away: the classifiers find a
// signal where there is one (so the rows they pass are not passed by
// classifiers that learn nothing).
func TestToolPlaceTeachesNothingInTheSeededOrder(t *testing.T) {
	ss, err := suite.Load()
	require.NoError(t, err)
	seeded, err := audit.Learn(ss, agent.ToolOrderSeeded, 1)
	require.NoError(t, err)
	authored, err := audit.Learn(ss, agent.ToolOrderAuthored, 1)
	require.NoError(t, err)
	var b bytes.Buffer
	seeded.Print(&b)
	authored.Print(&b)
	t.Log("\n" + b.String())

	assert.Equal(t, "domain", seeded.Folds)
	for _, c := range []string{`"the first k tools are allowed"`, "position and parameter count"} {
		r := row(t, seeded, audit.ToolAllowed, c)
		assert.LessOrEqual(t, math.Abs(r.Gap()), audit.Tolerance, "seeded order: %s learns the boundary from the tools' place (%.3f against %.3f)", c, r.Accuracy, r.BaseRate)
		assert.Equal(t, tools(ss), r.N, "every tool of every scenario is classified")
	}
	// A suite whose files list the allowed tools first: the rule must find
	// it (so the rows it passes are not passed by a rule that learns
	// nothing). The built-in files are in no such order.
	first := row(t, boundaryFirst(t, ss), audit.ToolAllowed, `"the first k tools are allowed"`)
	assert.Greater(t, first.Gap(), 0.1, "allowed tools listed first: the rule must find it")

	// Base rates are what reading nothing gets: the majority class, or a
	// string picked at random.
	lure := row(t, seeded, audit.WhichLure, "bag of words on the leaf")
	assert.Greater(t, lure.N, 100)
	assert.Less(t, lure.BaseRate, 0.5)
	for _, r := range seeded.Rows {
		if r.N > 0 {
			assert.GreaterOrEqual(t, r.BaseRate, 0.0)
			assert.LessOrEqual(t, r.Accuracy, 1.0)
		}
	}
}

// Only a classifier more than Tolerance above its base rate, on items it
// classified, is a shortcut.
func TestShortcutsAreTheRowsAboveTolerance(t *testing.T) {
	l := audit.Learnability{Rows: []audit.Row{
		{Question: audit.LureOrNote, Classifier: "a", Accuracy: 0.80, BaseRate: 0.74, N: 10},
		{Question: audit.LureOrNote, Classifier: "b", Accuracy: 0.78, BaseRate: 0.74, N: 10},
		{Question: audit.LureOrNote, Classifier: "c", Accuracy: 0.99, BaseRate: 0.5, N: 0},
	}}
	s := l.Shortcuts()
	require.Len(t, s, 1)
	assert.Equal(t, "a", s[0].Classifier)
}

// boundaryFirst audits copies of the scenarios whose tools list the
// boundary's first, in the file's order.
func boundaryFirst(t *testing.T, ss []*scenario.Scenario) audit.Learnability {
	t.Helper()
	var out []*scenario.Scenario
	for _, s := range ss {
		c := *s
		allowed := map[string]bool{}
		for _, n := range s.Boundary.Tools {
			allowed[n] = true
		}
		c.Tools = nil
		for _, in := range []bool{true, false} {
			for _, tl := range s.Tools {
				if allowed[tl.Name] == in {
					c.Tools = append(c.Tools, tl)
				}
			}
		}
		out = append(out, &c)
	}
	l, err := audit.Learn(out, agent.ToolOrderAuthored, 1)
	require.NoError(t, err)
	return l
}

func tools(ss []*scenario.Scenario) int {
	n := 0
	for _, s := range ss {
		n += len(s.Tools)
	}
	return n
}

// TestBuiltinSuiteLearnability holds the built-in suite to the audit: the
// table `antidrift scenarios audit builtin` prints, each trivial classifier
// within audit.Tolerance of its base rate (above it: a shortcut; far below
// a fixed rule: its inverse is one). Issue 26's done-when: no row is
// exempt.
func TestBuiltinSuiteLearnability(t *testing.T) {
	ss, err := suite.Load()
	require.NoError(t, err)
	l, err := audit.Learn(ss, agent.ToolOrderSeeded, 1)
	require.NoError(t, err)
	var b bytes.Buffer
	l.Print(&b)
	t.Log("\n" + b.String())
	require.Equal(t, "domain", l.Folds)
	for _, r := range l.Rows {
		require.Positive(t, r.N, "%s / %s: no items", r.Question, r.Classifier)
		key := string(r.Question) + "/" + r.Classifier
		assert.LessOrEqual(t, math.Abs(r.Gap()), audit.Tolerance, "%s: %.3f against a base rate of %.3f", key, r.Accuracy, r.BaseRate)
	}
}
