package labels

import (
	"encoding/json"
	"math"
	"sort"
)

// Agreement compares two labelings over the trajectories both judged.
type Agreement struct {
	N int `json:"n"` // trajectories judged by both
	// Table counts the pairs: Table[a][b] with index 1 for success, 0 for
	// failure (Table[1][0]: A says success, B failure).
	Table [2][2]int `json:"table"`
	// Observed agreement p_o and chance agreement p_e from the marginals.
	Observed float64 `json:"agreement"`
	Expected float64 `json:"expected_agreement"`
	// Kappa is Cohen's κ = (p_o − p_e)/(1 − p_e); NaN when p_e = 1 (both
	// labelings give one and the same label to everything) or N = 0.
	Kappa float64 `json:"-"`
	// SuccessA and SuccessB are each labeling's success rate on the N.
	SuccessA float64 `json:"success_rate_a"`
	SuccessB float64 `json:"success_rate_b"`

	OnlyA     int            `json:"only_in_a"` // in A, missing from B
	OnlyB     int            `json:"only_in_b"` // in B, missing from A
	ErrorsA   int            `json:"errors_a"`  // in both, but A has no verdict
	ErrorsB   int            `json:"errors_b"`  // in both, but B has no verdict
	Disagreed []Disagreement `json:"disagreements"`
}

// Disagreement is one trajectory the labelings disagree on.
type Disagreement struct {
	TrajID     string `json:"traj_id"`
	ScenarioID string `json:"scenario_id,omitempty"`
	A          bool   `json:"a"`
	B          bool   `json:"b"`
	ReasonA    string `json:"reason_a,omitempty"`
	ReasonB    string `json:"reason_b,omitempty"`
}

// Compare computes agreement and Cohen's kappa between labelings a and b,
// over the trajectories both hold with a verdict. Disagreements come in the
// order of a.
func Compare(a, b []Label) Agreement {
	var ag Agreement
	bm := ByID(b)
	inA := make(map[string]bool, len(a))
	for _, la := range a {
		inA[la.TrajID] = true
		lb, ok := bm[la.TrajID]
		switch {
		case !ok:
			ag.OnlyA++
			continue
		case !la.Judged():
			ag.ErrorsA++
			if !lb.Judged() {
				ag.ErrorsB++
			}
			continue
		case !lb.Judged():
			ag.ErrorsB++
			continue
		}
		ag.Table[idx(la.Success)][idx(lb.Success)]++
		if la.Success != lb.Success {
			sid := la.ScenarioID
			if sid == "" {
				sid = lb.ScenarioID
			}
			ag.Disagreed = append(ag.Disagreed, Disagreement{TrajID: la.TrajID, ScenarioID: sid,
				A: la.Success, B: lb.Success, ReasonA: la.Judge.Reason, ReasonB: lb.Judge.Reason})
		}
	}
	for _, lb := range b {
		if !inA[lb.TrajID] {
			ag.OnlyB++
		}
	}
	if ag.Disagreed == nil {
		ag.Disagreed = []Disagreement{}
	}
	ag.N, ag.Observed, ag.Expected, ag.Kappa = Kappa(ag.Table)
	if ag.N > 0 {
		n := float64(ag.N)
		ag.SuccessA = float64(ag.Table[1][0]+ag.Table[1][1]) / n
		ag.SuccessB = float64(ag.Table[0][1]+ag.Table[1][1]) / n
	}
	return ag
}

func idx(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Kappa computes, from a 2×2 table t[a][b], the number of pairs, the
// observed agreement, the agreement expected by chance from the marginals,
// and Cohen's kappa (NaN when undefined: no pairs, or chance agreement 1).
func Kappa(t [2][2]int) (n int, observed, expected, kappa float64) {
	n = t[0][0] + t[0][1] + t[1][0] + t[1][1]
	if n == 0 {
		return 0, math.NaN(), math.NaN(), math.NaN()
	}
	fn := float64(n)
	observed = float64(t[0][0]+t[1][1]) / fn
	a1 := float64(t[1][0]+t[1][1]) / fn
	b1 := float64(t[0][1]+t[1][1]) / fn
	expected = a1*b1 + (1-a1)*(1-b1)
	if expected >= 1 {
		return n, observed, expected, math.NaN()
	}
	return n, observed, expected, (observed - expected) / (1 - expected)
}

// MarshalJSON writes kappa (and the agreements) as null when undefined.
func (ag Agreement) MarshalJSON() ([]byte, error) {
	type plain Agreement
	return json.Marshal(struct {
		plain
		Observed *float64 `json:"agreement"`
		Expected *float64 `json:"expected_agreement"`
		Kappa    *float64 `json:"kappa"`
	}{plain(ag), finite(ag.Observed), finite(ag.Expected), finite(ag.Kappa)})
}

func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// ScenarioIDs lists the scenarios of the disagreements, sorted, each once.
func (ag Agreement) ScenarioIDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range ag.Disagreed {
		if d.ScenarioID != "" && !seen[d.ScenarioID] {
			seen[d.ScenarioID] = true
			out = append(out, d.ScenarioID)
		}
	}
	sort.Strings(out)
	return out
}
