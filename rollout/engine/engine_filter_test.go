package engine_test

import (
	"testing"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run's recorded filter reads back as the options it was run with.
func TestFilterOfThePlan(t *testing.T) {
	o, err := engine.FilterOf(nil)
	require.NoError(t, err)
	assert.Equal(t, agent.FilterOptions{}, o, "no record: the defaults")

	o, err = engine.FilterOf(&store.FilterPlan{RelevanceK: 3, RiskLambda: 2, RiskWeights: "low=0,medium=1,high=4"})
	require.NoError(t, err)
	assert.Equal(t, 3, o.RelevanceK)
	assert.Equal(t, 2.0, o.RiskLambda)
	require.NotNil(t, o.RiskWeights)
	assert.Equal(t, scenario.RiskWeights{Low: 0, Medium: 1, High: 4}, *o.RiskWeights)

	_, err = engine.FilterOf(&store.FilterPlan{RiskWeights: "medium=x"})
	assert.Error(t, err)
	_, err = engine.FilterOf(&store.FilterPlan{RiskLambda: -1})
	assert.Error(t, err)

	o, err = engine.FilterOf(&store.FilterPlan{LowRisk: "causal"})
	require.NoError(t, err)
	assert.Equal(t, agent.LowRiskCausal, o.LowRisk)
	_, err = engine.FilterOf(&store.FilterPlan{LowRisk: "some"})
	assert.ErrorContains(t, err, "low-risk visibility")
}
