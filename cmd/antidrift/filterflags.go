package main

import (
	"fmt"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/pflag"
)

// filterFlags are the exposure filters' settings and the provenance
// switch, shared by rollout and sweep.
type filterFlags struct {
	relevanceK  int
	riskLambda  float64
	riskWeights string
	lowRisk     string
	allowUnsafe bool
	kSet        bool // --relevance-k registered
}

func (f *filterFlags) register(fl *pflag.FlagSet, withLambda bool) {
	f.kSet = true
	fl.IntVar(&f.relevanceK, "relevance-k", agent.DefaultRelevanceK, "relevance framework: tools offered per step (top k by BM25)")
	if withLambda {
		fl.Float64Var(&f.riskLambda, "risk-lambda", 0, "gated framework: risk penalty λ ≥ 0 of the causal path search (path cost + λ·Σ risk weights)")
	}
	fl.StringVar(&f.riskWeights, "risk-weights", scenario.DefaultRiskWeights.String(), "risk weights of λ and of the risk-weighted surface: low=W,medium=W,high=W")
	fl.StringVar(&f.lowRisk, "low-risk", string(agent.LowRiskAll), "causal and gated frameworks: which low-risk tools are shown: all, or causal (only those on the least-cost path from the current state, as the RACG paper)")
	fl.BoolVar(&f.allowUnsafe, "allow-unsafe-provenance", false, "load scenarios in which a content tool sets an authorization variable (the broken-provenance boundary case, e.g. builtin:gating's unsafe variants)")
}

// options are the agent's filter options for λ.
func (f *filterFlags) options(lambda float64) (agent.FilterOptions, error) {
	w, err := scenario.ParseRiskWeights(f.riskWeights)
	if err != nil {
		return agent.FilterOptions{}, fmt.Errorf("--risk-weights: %w", err)
	}
	k := f.relevanceK
	if k == 0 && !f.kSet {
		k = agent.DefaultRelevanceK // flags not registered (rescore builds rollout flags itself)
	}
	low, err := agent.ParseLowRisk(f.lowRisk)
	if err != nil {
		return agent.FilterOptions{}, fmt.Errorf("--low-risk: %w", err)
	}
	o := agent.FilterOptions{RelevanceK: k, RiskLambda: lambda, RiskWeights: &w, LowRisk: low}
	if k < 1 {
		return o, fmt.Errorf("--relevance-k must be at least 1, got %d", f.relevanceK)
	}
	if err := o.Check(); err != nil {
		return o, fmt.Errorf("--risk-lambda: %w", err)
	}
	return o, nil
}

// plan records the settings that differ from the defaults, for the
// framework that uses them (nil when none does).
func (f *filterFlags) plan(framework string, o agent.FilterOptions) *store.FilterPlan {
	p := &store.FilterPlan{}
	set := false
	switch framework {
	case "relevance":
		if o.RelevanceK != agent.DefaultRelevanceK {
			p.RelevanceK, set = o.RelevanceK, true
		}
	case "gated":
		if o.RiskLambda != 0 || *o.RiskWeights != scenario.DefaultRiskWeights || o.LowRisk == agent.LowRiskCausal {
			p.RiskLambda, p.RiskWeights, set = o.RiskLambda, o.RiskWeights.String(), true
		}
	}
	if (framework == "gated" || framework == "causal") && o.LowRisk == agent.LowRiskCausal {
		p.LowRisk, set = string(agent.LowRiskCausal), true
	}
	if !set {
		return nil
	}
	return p
}
