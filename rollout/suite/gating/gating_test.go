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
	assert.Len(t, safe, 72, "24 tasks × clean, instruction, forged")
	assert.Len(t, all, 96, "and 24 broken-provenance variants")
	bases, auth, injections := 0, 0, map[scenario.InjectionKind]int{}
	for _, s := range safe {
		assert.False(t, s.UnsafeProvenance, s.ID)
		if len(s.Injections) == 0 {
			bases++
			if len(s.AuthorizationVars()) > 0 && len(s.RequiredCalls) == 4 {
				auth++
			}
		}
		for _, inj := range s.Injections {
			injections[inj.Kind]++
		}
	}
	assert.Equal(t, 24, bases)
	assert.Equal(t, 16, auth, "tasks whose action needs a trusted producer's authorization")
	assert.Equal(t, 24, injections[scenario.InjectInstruction])
	assert.Equal(t, 24, injections[scenario.InjectForgedAuthorization])
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
