package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// RiskWeights weigh tools by risk level: the gated framework's risk
// penalty λ multiplies them along a causal path, and the attack-surface
// metrics sum them over the visible tools.
type RiskWeights struct {
	Low    float64 `json:"low"`
	Medium float64 `json:"medium"`
	High   float64 `json:"high"`
}

// DefaultRiskWeights are low 0, medium 0.5, high 1.
var DefaultRiskWeights = RiskWeights{Low: 0, Medium: 0.5, High: 1}

// Of is the weight of a risk level (0 for an unknown one).
func (w RiskWeights) Of(r Risk) float64 {
	switch r {
	case RiskLow:
		return w.Low
	case RiskMedium:
		return w.Medium
	case RiskHigh:
		return w.High
	}
	return 0
}

// String is the form ParseRiskWeights reads.
func (w RiskWeights) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return "low=" + f(w.Low) + ",medium=" + f(w.Medium) + ",high=" + f(w.High)
}

// ParseRiskWeights reads "low=0,medium=0.5,high=1"; levels left out keep
// their default weight. Weights must be finite and non-negative.
func ParseRiskWeights(spec string) (RiskWeights, error) {
	w := DefaultRiskWeights
	if strings.TrimSpace(spec) == "" {
		return w, nil
	}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return w, fmt.Errorf("risk weights: %q is not level=weight", part)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return w, fmt.Errorf("risk weights: %s: want a finite non-negative number, got %q", k, v)
		}
		switch Risk(strings.TrimSpace(k)) {
		case RiskLow:
			w.Low = x
		case RiskMedium:
			w.Medium = x
		case RiskHigh:
			w.High = x
		default:
			return w, fmt.Errorf("risk weights: unknown level %q (want low, medium, high)", k)
		}
	}
	return w, nil
}
