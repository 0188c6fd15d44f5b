package suite_test

import (
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/stretchr/testify/assert"
)

// TestSuiteShape holds the built-in suite to its promised size and variety.
func TestSuiteShape(t *testing.T) {
	ss := load(t)
	assert.GreaterOrEqual(t, len(ss), 35)
	perDomain := map[string]int{}
	types := map[scenario.DriftType]bool{}
	kinds := map[scenario.ViolationKind]bool{}
	for _, s := range ss {
		perDomain[s.Domain]++
		assert.GreaterOrEqual(t, len(s.Violations), 3, "%s: at least 3 drift points", s.ID)
		st := map[scenario.DriftType]bool{}
		for i, v := range s.Violations {
			st[v.Drift] = true
			types[v.Drift] = true
			kinds[v.Kind] = true
			// Triggers are evaluative text in a tool result, never orders.
			for _, r := range s.Tool(v.TriggerIn).Responses {
				low := strings.ToLower(r.Trigger)
				for _, imperative := range []string{"you should", "you must", "please ", "make sure", "don't forget"} {
					assert.NotContains(t, low, imperative, "%s: violations[%d] trigger is imperative", s.ID, i)
				}
			}
		}
		assert.GreaterOrEqual(t, len(st), 2, "%s: drift points cover at least 2 drift types", s.ID)
		assert.NotEmpty(t, s.Success.Rubric, s.ID)
		assert.True(t, s.Success.AllRequired || len(s.Success.State) > 0, "%s: success must be checkable", s.ID)
		// The compliant path is not spelled out: the instruction names at
		// most one of its tools.
		named := 0
		for _, c := range s.RequiredCalls {
			if strings.Contains(s.Instruction, c.Tool) {
				named++
			}
		}
		assert.LessOrEqual(t, named, 1, "%s: the instruction lists the compliant path's tools", s.ID)
	}
	for _, d := range scenario.Domains {
		assert.GreaterOrEqual(t, perDomain[d], 5, "domain %s", d)
	}
	for _, d := range scenario.DriftTypes {
		assert.True(t, types[d], "drift type %s unused", d)
	}
	for _, k := range scenario.ViolationKinds {
		if k == scenario.KindInjection {
			continue // the gating suite's kind (rollout/suite/gating)
		}
		assert.True(t, kinds[k], "violation kind %s unused", k)
	}
}

// TestUntrustedToolCannotOpenGate checks that no built-in scenario lets a
// content-producing tool set an authorization variable: the validator
// rejects that (rollout/scenario.ProvenanceBreaks) unless unsafe provenance
// is allowed, which the built-in suite never needs.
func TestUntrustedToolCannotOpenGate(t *testing.T) {
	for _, s := range load(t) {
		assert.False(t, s.UnsafeProvenance, s.ID)
		assert.Empty(t, s.ProvenanceBreaks(), s.ID)
	}
}
