package rewards_test

import (
	"github.com/antidrift/antidrift/internal/racetest"

	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestTableStreamsAsOnePass: Table reads each scenario twice and holds a
// few bytes per trajectory, in memory or in a file; its rows, Summary, error and the sequence of
// Keep and emit calls (what a stateful Keep such as export.Writer.Admit
// sees) are those of the one-pass Table that held a scenario's rows,
// whether a scenario is held (one pass) or read twice, its groups held
// together, one by one, or streamed (Keep's rows rendered twice), and
// whether its groups' members are held or sorted in a file.
// raceCases are the cases of TestTableStreamsAsOnePass the race pass runs:
// rows written, a Keep that fails and an emit that fails, under every hold.
var raceCases = map[string]bool{"every row": true, "keep fails": true, "emit fails": true}

func TestTableStreamsAsOnePass(t *testing.T) {
	smallFamily(t, 4) // the code paths, not the suite: 4 scenarios a domain
	ss, byID, dirs := simFamily(t, 3, "base", "dpo-1")
	dirs = append(dirs, oddRun(t))
	all := rewards.Default()
	all.Schemes = rewards.AllSchemes
	all.Scenarios = map[string]*scenario.Scenario{"s1": testScenario()}
	for id, s := range byID {
		all.Scenarios[id] = s
	}
	missing := rewards.Default()
	missing.Schemes = []rewards.Scheme{rewards.Risk}
	missing.Scenarios = map[string]*scenario.Scenario{"s1": testScenario()}
	for _, s := range ss[:len(ss)/2] {
		missing.Scenarios[s.ID] = s // the others fail to score
	}
	// every scenario held; none; the odd run's groups held together and
	// the family's groups streamed; each family group held on its own
	holds := []int64{1 << 40, 0}
	{
		ix, err := dataset.OpenIndex(dirs...)
		require.NoError(t, err)
		holds = append(holds, ix.Bytes("s1")-1, ix.Bytes(ss[0].ID)*2/3)
		require.NoError(t, ix.Close())
	}
	type result struct {
		rows, sum, calls, err string
	}
	run := func(table func(*dataset.Index, rewards.Config, rewards.TableOptions, func(*dataset.RewardRow) error) (*rewards.Summary, error),
		c rewards.Config, turn bool, stopAt int, keep func(r *dataset.RewardRow) (bool, error)) result {
		ix, err := dataset.OpenIndex(dirs...)
		require.NoError(t, err)
		defer ix.Close()
		opt := rewards.TableOptions{Ratios: dataset.DefaultRatios, Seed: 1, Scenarios: byID}
		if turn {
			opt.Render.Completion = dataset.CompletionTurn
		}
		var calls strings.Builder
		if keep != nil {
			opt.Keep = func(r *dataset.RewardRow) (bool, error) {
				ok, err := keep(r)
				fmt.Fprintf(&calls, "keep %s %s %d %v\n", r.GroupID, r.TrajID, r.Turn, ok)
				return ok, err
			}
		}
		var rows []*dataset.RewardRow
		sum, err := table(ix, c, opt, func(r *dataset.RewardRow) error {
			if len(rows) == stopAt {
				return errors.New("emit failed")
			}
			fmt.Fprintf(&calls, "emit %s %s %d\n", r.GroupID, r.TrajID, r.Turn)
			rows = append(rows, r)
			return nil
		})
		res := result{rows: string(jsonl(t, rows)), calls: calls.String()}
		if err != nil {
			res.err = err.Error()
		}
		if sum != nil {
			b, err := json.Marshal(sum)
			require.NoError(t, err)
			res.sum = string(b)
		}
		return res
	}
	// o7 is its group's one member: the group loses every row
	short := func(r *dataset.RewardRow) (bool, error) { return r.CompletionTokensEst < 60 && r.TrajID != "o7", nil }
	failing := func(r *dataset.RewardRow) (bool, error) {
		if strings.HasSuffix(r.TrajID, "3") && r.Turn > 4 {
			return false, errors.New("keep failed")
		}
		return r.CompletionTokensEst < 80, nil
	}
	for _, tc := range []struct {
		name   string
		c      rewards.Config
		turn   bool
		stopAt int
		keep   func(*dataset.RewardRow) (bool, error)
		err    string
	}{
		{"every row", all, false, -1, nil, ""},
		{"rows kept", all, false, -1, short, ""},
		{"per turn", all, true, -1, nil, ""},
		{"per turn, rows kept", all, true, -1, short, ""},
		{"emit fails", all, false, 300, nil, "emit failed"},
		{"emit fails per turn, rows kept", all, true, 700, short, "emit failed"},
		{"keep fails", all, true, -1, failing, "keep failed"},
		{"scoring fails", missing, false, -1, nil, "is not among the loaded scenarios"},
		{"scoring fails, rows kept", missing, true, -1, short, "is not among the loaded scenarios"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if racetest.Enabled && !raceCases[tc.name] {
				t.Skip("the race pass runs the cases that reach every goroutine of the passes (raceCases); the plain pass runs all")
			}
			want := run(rewards.TableOnePass, tc.c, tc.turn, tc.stopAt, tc.keep)
			if tc.err == "" {
				require.Empty(t, want.err)
				require.NotEmpty(t, want.rows)
				var sum rewards.Summary
				require.NoError(t, json.Unmarshal([]byte(want.sum), &sum))
				// the odd run's trajectories reach the summary
				require.Equal(t, 1, sum.RawArguments)
				require.Equal(t, 1, sum.NoCompletion)
				require.Equal(t, 1, sum.SplitPrompts)
				if tc.keep != nil {
					require.Positive(t, sum.Dropped)
					require.Positive(t, sum.GroupsDropped)
				}
			} else {
				require.Contains(t, want.err, tc.err)
			}
			for _, hold := range holds {
				// members in memory, and in a file of runs of 7
				for _, spill := range []int{0, 7} {
					restoreHold, restoreSpill := rewards.SetHoldBytes(hold), func() {}
					if spill > 0 {
						restoreSpill = rewards.SetSpillMembers(spill)
					}
					got := run(rewards.Table, tc.c, tc.turn, tc.stopAt, tc.keep)
					restoreSpill()
					restoreHold()
					require.Equal(t, want.err, got.err, "hold %d, spill %d", hold, spill)
					require.Equal(t, want.sum, got.sum, "hold %d, spill %d", hold, spill)
					require.Equal(t, want.calls, got.calls, "hold %d, spill %d", hold, spill)
					require.Equal(t, want.rows, got.rows, "hold %d, spill %d", hold, spill)
				}
			}
		})
	}
}

// oddRun is a run of scenario s1 with what a table leaves out or splits:
// unparsed tool-call arguments, no completion, an unscored episode, two
// first requests under one checkpoint.
func oddRun(t *testing.T) string {
	raw := rec("o1", "s1", "A", true, call{tool: "a"})
	raw.Messages[2].ToolCalls[0].Function.Parsed = json.RawMessage(`"not an object"`)
	noCompletion := rec("o2", "s1", "A", false)
	noCompletion.Messages = noCompletion.Messages[:2]
	unscored := rec("o3", "s1", "A", true, call{tool: "a"})
	unscored.Status = trajectory.StatusInfraError
	other := rec("o4", "s1", "A", false, call{tool: "x", drift: true})
	other.Messages[1].Content += " (edited)"
	return writeRun(t, t.TempDir(), raw, noCompletion, unscored, other,
		rec("o5", "s1", "A", true, call{tool: "a"}, call{tool: "b"}),
		rec("o6", "s1", "A", false, call{tool: "a"}, call{tool: "x", drift: true}),
		rec("o7", "s1", "B", true, call{tool: "a"}))
}

// TestTableHoldsAWindow: a streamed scenario is held a batch of records at
// a time (batchPerCore per core), however many rollouts it has, and
// nothing else of it is held (no scenario or group of rows: holdBytes 0):
// five profiles' rollouts of a scenario are held as three profiles' are.
// Held whole (the one-pass way), a scenario's every row is held at once.
func TestTableHoldsAWindow(t *testing.T) {
	racetest.SingleThreaded(t) // a count of records held, at GOMAXPROCS 1; the passes' goroutines are raced by TestTableStreamsAsOnePass
	smallFamily(t, 2)          // a count of records held: two scenarios a domain show it
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	most := func(hold int64, profiles ...string) (held, records int) {
		defer rewards.SetHoldBytes(hold)()
		_, byID, dirs := simFamily(t, 4, profiles...)
		c := rewards.Default()
		c.Scenarios = byID
		ix, err := dataset.OpenIndex(dirs...)
		require.NoError(t, err)
		defer ix.Close()
		var mu sync.Mutex // called from the first passes ahead too
		defer rewards.OnHold(func(n int) {
			mu.Lock()
			defer mu.Unlock()
			held = max(held, n)
		})()
		_, err = rewards.Table(ix, c, rewards.TableOptions{Ratios: dataset.DefaultRatios, Seed: 1}, func(*dataset.RewardRow) error { return nil })
		require.NoError(t, err)
		return held, ix.Count(ix.Scenarios()[0])
	}
	small, n := most(0, "base", "sft", "dpo-1")
	large, m := most(0, "base", "sft", "dpo-1", "dpo-2", "overcautious")
	require.Greater(t, n, rewards.BatchPerCore, "a scenario larger than a batch")
	require.Greater(t, m, n)
	require.Equal(t, rewards.BatchPerCore, small)
	require.Equal(t, rewards.BatchPerCore, large)
	whole, n := most(1<<40, "base", "sft", "dpo-1")
	require.Equal(t, n, whole, "a scenario's every rollout")
}

// TestTableHoldsFewBytesPerTrajectory: what a streamed scenario keeps of
// each trajectory between its two passes (a member of its group: 32
// bytes) is held in memory up to spillMembers and in a temporary file
// past it, so that one scenario of any number of rollouts stays within
// the rewards command's memory bound. Measured as the live heap at the
// scenario's first row, beyond what the index holds, for two sizes of one
// scenario: the difference over the difference in trajectories is what
// one more trajectory costs, the window of records and rows (the same at
// both sizes) cancelled out.
func TestTableHoldsFewBytesPerTrajectory(t *testing.T) {
	racetest.SingleThreaded(t) // heap figures: the race detector's shadow memory would count
	defer rewards.SetHoldBytes(0)()
	held := func(n int) uint64 {
		recs := make([]*trajectory.Record, n)
		for i := range recs {
			// two checkpoints, so that the table keeps two groups
			recs[i] = rec(fmt.Sprintf("t%07d", i), "s1", []string{"A", "B"}[i%2], i%3 == 0, call{tool: "a"})
		}
		dir := writeRun(t, t.TempDir(), recs...)
		recs = nil
		ix, err := dataset.OpenIndex(dir)
		require.NoError(t, err)
		defer ix.Close()
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		var at uint64
		_, err = rewards.Table(ix, rewards.Default(), rewards.TableOptions{Ratios: dataset.DefaultRatios, Seed: 1}, func(*dataset.RewardRow) error {
			if at == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				at = ms.HeapAlloc
			}
			return nil
		})
		require.NoError(t, err)
		require.Greater(t, at, before)
		return at - before
	}
	perTrajectory := func(small, large int) float64 {
		a, b := held(small), held(large)
		per := float64(int64(b)-int64(a)) / float64(large-small)
		t.Logf("held at the first row: %d bytes for %d trajectories, %d for %d: %.1f bytes a trajectory", a, small, b, large, per)
		return per
	}
	require.Less(t, perTrajectory(20_000, 60_000), 44.0, "in memory: a member (32 bytes) and what its slice has spare")
	// In a file, what is held is the same at any size, within what the
	// reading ahead holds at the first row (one or two batches: up to
	// about 200 KB apart from one run to the next).
	defer rewards.SetSpillMembers(4096)()
	require.Less(t, perTrajectory(20_000, 100_000), 4.0, "in a file: nothing a trajectory")
}
