package export

import (
	"slices"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// Lengths summarises a table's token-length estimates: percentiles of the
// prompt and of prompt + the longest completion of a row (chosen or
// rejected for pairs), and the limits that keep at least 99% of rows whole.
type Lengths struct {
	Rows   int64    `json:"rows"`
	Prompt [4]int64 `json:"prompt_p50_p90_p99_max"`
	Total  [4]int64 `json:"total_p50_p90_p99_max"`
	// MaxLength and MaxPromptLength are the p99 figures rounded up to a
	// multiple of 64: a trainer's max_length and max_prompt_length set to
	// them drop or cut at most 1% of rows.
	MaxLength       int64 `json:"max_length"`
	MaxPromptLength int64 `json:"max_prompt_length"`
}

// lengthsOf is a row's (prompt, prompt + longest completion) estimate; ok
// is false for tables without one (trajectories).
func lengthsOf[R Row](r *R) (prompt, total int64, ok bool) {
	switch v := any(r).(type) {
	case *dataset.DPORow:
		return v.PromptTokensEst, v.PromptTokensEst + max(v.ChosenTokensEst, v.RejectedTokensEst), true
	case *dataset.KTORow:
		return v.PromptTokensEst, v.PromptTokensEst + v.CompletionTokensEst, true
	case *dataset.RewardRow:
		return v.PromptTokensEst, v.PromptTokensEst + v.CompletionTokensEst, true
	}
	return 0, 0, false
}

func summariseLengths(prompt, total *lengthCounts) *Lengths {
	if prompt.n == 0 {
		return nil
	}
	l := &Lengths{Rows: prompt.n, Prompt: prompt.percentiles(), Total: total.percentiles()}
	// OpenRLHF's max_len and LLaMA-Factory's cutoff_len bound the same
	// whole sequence as max_length.
	l.MaxLength, l.MaxPromptLength = roundUp(l.Total[2], 64), roundUp(l.Prompt[2], 64)
	return l
}

// lengthCounts counts the rows of each length: the percentiles of a
// million rows from a few thousand distinct lengths, where keeping every
// row's length held 16 bytes a row until the card was written.
type lengthCounts struct {
	n      int64
	counts map[int64]int64
}

func (c *lengthCounts) add(v int64) {
	if c.counts == nil {
		c.counts = map[int64]int64{}
	}
	c.counts[v]++
	c.n++
}

// percentiles are p50, p90, p99 (nearest rank) and the maximum: the values
// at those ranks of the lengths sorted.
func (c *lengthCounts) percentiles() [4]int64 {
	vs := make([]int64, 0, len(c.counts))
	for v := range c.counts {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	at := func(i int64) int64 { // the i-th length, 0-based, in sorted order
		for _, v := range vs {
			if i < c.counts[v] {
				return v
			}
			i -= c.counts[v]
		}
		return vs[len(vs)-1]
	}
	rank := func(p float64) int64 {
		i := int64(p*float64(c.n)+0.999999) - 1
		return at(max(0, min(i, c.n-1)))
	}
	return [4]int64{rank(0.5), rank(0.9), rank(0.99), vs[len(vs)-1]}
}

func roundUp(v, m int64) int64 { return (v + m - 1) / m * m }

// percentiles are p50, p90, p99 (nearest rank) and the maximum of vs (a
// sample: the template meter's).
func percentiles(vs []int64) [4]int64 {
	var c lengthCounts
	for _, v := range vs {
		c.add(v)
	}
	return c.percentiles()
}
