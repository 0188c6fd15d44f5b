package rewards_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// Rows are scored and rendered on every core while the next scenario is
// read: the table, the rows a failing emit or Keep let through, and the
// error are the same for any number of cores.
func TestTableSameForAnyCoreCount(t *testing.T) {
	ss, byID, dirs := simFamily(t, 2, "base", "dpo-1")
	c := rewards.Default()
	c.Schemes = rewards.AllSchemes
	c.Scenarios = byID
	missing := rewards.Default()
	missing.Schemes = []rewards.Scheme{rewards.Risk}
	missing.Scenarios = map[string]*scenario.Scenario{}
	for _, s := range ss[:len(ss)/2] {
		missing.Scenarios[s.ID] = s // the others fail to score
	}
	type result struct {
		rows []byte
		err  string
	}
	run := func(procs int, c rewards.Config, stopAt int, keep func(*dataset.RewardRow) (bool, error)) result {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ix, err := dataset.OpenIndex(dirs...)
		require.NoError(t, err)
		defer ix.Close()
		var rows []*dataset.RewardRow
		_, err = rewards.Table(ix, c, rewards.TableOptions{Ratios: dataset.DefaultRatios, Seed: 1, Scenarios: byID, Keep: keep},
			func(r *dataset.RewardRow) error {
				if len(rows) == stopAt {
					return errors.New("emit failed")
				}
				rows = append(rows, r)
				return nil
			})
		res := result{rows: jsonl(t, rows)}
		if err != nil {
			res.err = err.Error()
		}
		return res
	}
	short := func(r *dataset.RewardRow) (bool, error) { return r.CompletionTokensEst < 200, nil }
	n := 0
	failKeep := func(r *dataset.RewardRow) (bool, error) {
		if n++; n == 333 {
			return false, errors.New("keep failed")
		}
		return true, nil
	}
	for _, tc := range []struct {
		name   string
		c      rewards.Config
		stopAt int
		keep   func(*dataset.RewardRow) (bool, error)
		err    string
	}{
		{"every row", c, -1, nil, ""},
		{"rows kept", c, -1, short, ""},
		{"emit fails", c, 500, nil, "emit failed"},
		{"keep fails", c, -1, failKeep, "keep failed"},
		{"scoring fails", missing, -1, nil, "is not among the loaded scenarios"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n = 0
			want := run(1, tc.c, tc.stopAt, tc.keep)
			if tc.err == "" {
				require.Empty(t, want.err)
			} else {
				require.Contains(t, want.err, tc.err)
			}
			for _, procs := range []int{2, 4} {
				n = 0
				got := run(procs, tc.c, tc.stopAt, tc.keep)
				require.Equal(t, want.err, got.err, "%d cores", procs)
				require.Equal(t, string(want.rows), string(got.rows), "%d cores", procs)
			}
		})
	}
}
