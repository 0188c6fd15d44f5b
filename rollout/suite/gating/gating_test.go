package gating_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

func TestSuiteLoads(t *testing.T) {
	safe, ps := gating.Load(nil, scenario.Options{})
	require.NoError(t, ps.Err())
	all, ps := gating.Load(nil, scenario.Options{AllowUnsafeProvenance: true})
	require.NoError(t, ps.Err())
	// 24 tasks × clean, five instruction styles and a forged approval,
	// and the 6 e-mail tasks' data theft.
	assert.Equal(t, 24*7+6, len(safe))
	assert.Equal(t, 24*7+6+24, len(all), "and 24 broken-provenance variants")
	bases, auth, injections, families := 0, 0, map[scenario.InjectionKind]int{}, map[scenario.InjectionFamily]int{}
	ids := map[string]bool{}
	for _, s := range safe {
		ids[s.ID] = true
	}
	for _, s := range safe {
		assert.False(t, s.UnsafeProvenance, s.ID)
		if len(s.Injections) == 0 {
			bases++
			assert.Equal(t, s.ID, s.Task())
			if len(s.AuthorizationVars()) > 0 && len(s.RequiredCalls) == 4 {
				auth++
			}
			continue
		}
		assert.True(t, ids[s.UserTask], "%s: user_task %q is a clean scenario of the suite", s.ID, s.UserTask)
		for _, inj := range s.Injections {
			injections[inj.Kind]++
			families[inj.Family]++
		}
	}
	assert.Equal(t, 24, bases)
	assert.Equal(t, 16, auth, "tasks whose action needs a trusted producer's authorization")
	assert.Equal(t, 24*5+6, injections[scenario.InjectInstruction])
	assert.Equal(t, 24, injections[scenario.InjectForgedAuthorization])
	for _, f := range scenario.InjectionFamilies {
		want := 24
		if f == scenario.FamilyDataTheft {
			want = 6
		}
		assert.Equal(t, want, families[f], "family %s", f)
	}
	unsafe := 0
	for _, s := range all {
		if s.UnsafeProvenance {
			unsafe++
			assert.NotEmpty(t, s.ProvenanceBreaks(), s.ID)
		}
	}
	assert.Equal(t, 24, unsafe)
}

// TestUnsafeVariantsAreRejectedByDefault loads a broken-provenance file
// directly: the validator names the effect that breaks provenance.
func TestUnsafeVariantsAreRejectedByDefault(t *testing.T) {
	_, ps := scenario.LoadFile("scenarios/unsafe/gating-pay-supplier-007--unsafe.json", provisions.Builtin())
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].String(), "tools[1].responses[0].effects.set.payment_confirmed: untrusted tool \"read_vendor_message\" sets authorization variable")
	s, ps := scenario.LoadFileWith("scenarios/unsafe/gating-pay-supplier-007--unsafe.json", provisions.Builtin(), scenario.Options{AllowUnsafeProvenance: true})
	require.NoError(t, ps.Err())
	assert.True(t, s.UnsafeProvenance)
}
