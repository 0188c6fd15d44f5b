package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// A Filter chooses which of a scenario's tools a framework offers at a
// step: the exposure filters that risk-aware gating is compared with.
// Offer returns, for each of the scenario's tools in order, whether it is
// offered in state e after the conversation msgs. Filters are shared
// read-only by every episode of a scenario.
type Filter interface {
	Offer(e *env.Env, msgs []trajectory.Message) []bool
}

// FilterKind names an exposure filter; each is a framework of the same
// native tool-calling loop, with the same records and metrics.
type FilterKind string

// The exposure filters, from all tools to risk-aware causal gating.
const (
	// FilterNone offers every tool (the normal framework).
	FilterNone FilterKind = "normal"
	// FilterRelevance offers the top-k tools by BM25 relevance of their
	// name, description and parameters to the task and the conversation.
	FilterRelevance FilterKind = "relevance"
	// FilterStateAware offers the tools whose `requires` hold now.
	FilterStateAware FilterKind = "state-aware"
	// FilterCausal offers every low-risk tool and the risk-bearing tools on
	// a minimal causal path to the goal whose `requires` hold, ignoring
	// risk (λ = 0) and authorization: the causal tool-filtering baseline.
	FilterCausal FilterKind = "causal"
	// FilterGated is risk-aware causal gating: causal with the risk
	// penalty λ in the path search and every `authorizes` variable held.
	FilterGated FilterKind = "gated"
)

// FilterKinds lists the filters in order of how much they restrict.
var FilterKinds = []FilterKind{FilterNone, FilterRelevance, FilterStateAware, FilterCausal, FilterGated}

func (k FilterKind) String() string { return string(k) }

// DefaultRelevanceK is the relevance filter's k unless chosen.
const DefaultRelevanceK = 4

// FilterOptions parameterise the filters; the zero value means the
// defaults (k = DefaultRelevanceK, λ = 0, DefaultRiskWeights).
type FilterOptions struct {
	RelevanceK  int
	RiskLambda  float64
	RiskWeights *scenario.RiskWeights
	// LowRisk says which low-risk tools the causal and gated filters show
	// ("" or LowRiskAll: all; LowRiskCausal: those on the path).
	LowRisk LowRiskVisibility
}

func (o FilterOptions) withDefaults() FilterOptions {
	if o.RelevanceK <= 0 {
		o.RelevanceK = DefaultRelevanceK
	}
	if o.RiskWeights == nil {
		w := scenario.DefaultRiskWeights
		o.RiskWeights = &w
	}
	return o
}

// Check reports options no filter can use.
func (o FilterOptions) Check() error {
	if o.RelevanceK < 0 {
		return fmt.Errorf("relevance k must be at least 1, got %d", o.RelevanceK)
	}
	if o.RiskLambda < 0 || o.RiskLambda != o.RiskLambda {
		return fmt.Errorf("risk lambda must be a non-negative number, got %v", o.RiskLambda)
	}
	if _, err := ParseLowRisk(string(o.LowRisk)); err != nil {
		return err
	}
	return nil
}

// filterKey identifies a filter built for a scenario.
type filterKey struct {
	kind    FilterKind
	k       int
	lambda  float64
	weights scenario.RiskWeights
	low     LowRiskVisibility
}

// filterCache holds the filters built for a prepared scenario.
type filterCache struct {
	mu sync.Mutex
	m  map[filterKey]Filter
}

// Filter returns the scenario's filter of a kind under opts (nil for
// FilterNone), built once and shared by every episode.
func (p *Scenario) Filter(kind FilterKind, opts FilterOptions) (Filter, error) {
	opts = opts.withDefaults()
	if err := opts.Check(); err != nil {
		return nil, err
	}
	low, _ := ParseLowRisk(string(opts.LowRisk)) // checked above
	key := filterKey{kind: kind, weights: *opts.RiskWeights}
	switch kind {
	case FilterNone:
		return nil, nil
	case FilterRelevance:
		key.k = opts.RelevanceK
	case FilterGated:
		key.lambda, key.low = opts.RiskLambda, low
	case FilterCausal:
		key.low = low
	case FilterStateAware:
	default:
		return nil, fmt.Errorf("unknown exposure filter %q", kind)
	}
	if kind == FilterGated && opts.RiskLambda == 0 && *opts.RiskWeights == scenario.DefaultRiskWeights && low == LowRiskAll {
		return p.gate, nil
	}
	fc := &p.filters
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.m == nil {
		fc.m = map[filterKey]Filter{}
	}
	if f := fc.m[key]; f != nil {
		return f, nil
	}
	var f Filter
	switch kind {
	case FilterRelevance:
		f = newRelevance(p, opts.RelevanceK)
	case FilterStateAware:
		f = stateAware{s: p.S}
	case FilterCausal:
		f = NewGateWith(p.S, GateOptions{Weights: *opts.RiskWeights, IgnoreAuthorization: true, LowRisk: low})
	case FilterGated:
		f = NewGateWith(p.S, GateOptions{Lambda: opts.RiskLambda, Weights: *opts.RiskWeights, LowRisk: low})
	}
	fc.m[key] = f
	return f, nil
}

// stateAware offers the tools whose `requires` hold in the current state.
type stateAware struct{ s *scenario.Scenario }

func (f stateAware) Offer(e *env.Env, _ []trajectory.Message) []bool {
	out := make([]bool, len(f.s.Tools))
	for i, t := range f.s.Tools {
		out[i] = true
		for _, v := range t.Requires {
			if !e.Holds(v) {
				out[i] = false
				break
			}
		}
	}
	return out
}

// RunFiltered runs the native tool-calling loop of RunNormal with the
// tools offered at each step chosen by an exposure filter. As in the gated
// framework, the visible set is recorded per step, and a call to a hidden
// tool is refused (outcome not_visible) yet still drift-labelled.
func RunFiltered(ctx context.Context, pol policy.Policy, ep Episode, lim Limits, kind FilterKind, opts FilterOptions) (Result, error) {
	f, err := ep.Scenario.Filter(kind, opts)
	if err != nil {
		return Result{}, err
	}
	r, cancel := begin(ctx, pol, ep, lim)
	defer cancel()
	r.filter = f
	return r.native(ep.Scenario.S.System, f != nil)
}
