package metrics

import (
	"encoding/json"
	"math"
)

// Num is a metric value. An undefined value (CCSR when DR = 1, PR when
// DR = 0, a rate over nothing) is NaN in Go and null in JSON, never a
// made-up number.
type Num float64

// NaN is the undefined value.
func NaN() Num { return Num(math.NaN()) }

// Defined reports whether the value is a number.
func (n Num) Defined() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// MarshalJSON writes null for an undefined value.
func (n Num) MarshalJSON() ([]byte, error) {
	if !n.Defined() {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as undefined.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NaN()
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// CI is a confidence interval [lo, hi] (interval.go: a cluster interval for
// a proportion or a rate, MOVER for a ratio or a difference, a bootstrap
// for the hypervolume); both ends are null when the metric is undefined.
type CI [2]Num

// Lo is the lower end.
func (c CI) Lo() Num { return c[0] }

// Hi is the upper end.
func (c CI) Hi() Num { return c[1] }

// Estimate is a value with its confidence interval.
type Estimate struct {
	Value Num `json:"value"`
	CI    CI  `json:"ci"`
	// Support is set on proportions: the clusters and events behind them.
	Support *Support `json:"support,omitempty"`
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
