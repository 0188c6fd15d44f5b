package pairs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var profiles = []string{"base", "sft", "dpo-1", "dpo-2", "overcautious"}

var simRoot string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{simRoot, benchRoot} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// family rolls the simulated checkpoint family out once (8 rollouts of the
// built-in suite each) and returns the run folders.
var family = sync.OnceValues(func() ([]string, error) {
	var err error
	if simRoot, err = os.MkdirTemp("", "antidrift-pairs-sim-"); err != nil {
		return nil, err
	}
	var dirs []string
	for _, p := range profiles {
		d := filepath.Join(simRoot, p)
		if err := simRun(d, p, 8, 1, 8); err != nil {
			return nil, err
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
})

func simDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := family()
	require.NoError(t, err)
	return dirs
}

func allRecords(t *testing.T, dirs ...string) map[string]*trajectory.Record {
	t.Helper()
	out := map[string]*trajectory.Record{}
	it := store.Records(dirs...)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		out[r.TrajID] = &r
	}
	require.NoError(t, it.Err())
	return out
}

func defaultReward(t *testing.T) func(*trajectory.Record) (float64, error) {
	cfg := rewards.Default()
	require.NoError(t, cfg.Validate())
	return func(r *trajectory.Record) (float64, error) {
		res, err := cfg.Score(r)
		return res.Reward, err
	}
}

// noNull fails when a JSON value holds a null anywhere.
func noNull(t *testing.T, what string, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		t.Errorf("%s: null", what)
	case map[string]any:
		for k, e := range x {
			noNull(t, what+"."+k, e)
		}
	case []any:
		for i, e := range x {
			noNull(t, fmt.Sprintf("%s[%d]", what, i), e)
		}
	}
}

// checkMessages asserts the export shape of a message column and returns
// the decoded messages.
func checkMessages(t *testing.T, what string, ms []json.RawMessage) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(ms))
	for i, raw := range ms {
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), "%s[%d] is not a JSON object", what, i)
		noNull(t, fmt.Sprintf("%s[%d]", what, i), m)
		require.Contains(t, m, "role")
		if tcs, ok := m["tool_calls"]; ok {
			for _, tc := range tcs.([]any) {
				args := tc.(map[string]any)["function"].(map[string]any)["arguments"]
				assert.IsType(t, map[string]any{}, args, "%s[%d]: tool-call arguments must be an object", what, i)
			}
		}
		out[i] = m
	}
	return out
}

func TestSimulatedFamilyProperties(t *testing.T) {
	dirs := simDirs(t)
	recs := allRecords(t, dirs...)
	for _, cross := range []bool{false, true} {
		for _, cont := range []string{pairs.ContinueRest, pairs.ContinueTurn} {
			t.Run(fmt.Sprintf("cross=%v/%s", cross, cont), func(t *testing.T) {
				if raceEnabled && (cross || cont != pairs.ContinueRest) {
					t.Skip("the race pass builds one variant (the same goroutines build the others); the plain pass runs all four")
				}
				o := pairs.DefaultOptions()
				o.StepPairs, o.CrossCheckpoint, o.StepContinuation, o.Reward = true, cross, cont, defaultReward(t)
				rows, st := build(t, o, dirs...)
				require.NotEmpty(t, rows)
				require.Positive(t, st.Step.Pairs, "the simulated family gives step pairs")
				require.Positive(t, st.Trajectory.Pairs)

				splitOf := map[string]string{}
				perPool := map[string]int{}
				uses := map[string]int{}
				seenIDs := map[string]bool{}
				for _, row := range rows {
					c, r := recs[row.ChosenTrajID], recs[row.RejectedTrajID]
					require.NotNil(t, c)
					require.NotNil(t, r)
					assert.True(t, c.Clean(), "chosen %s must be a clean success", c.TrajID)
					assert.True(t, r.Drift, "rejected %s must drift", r.TrajID)
					assert.Equal(t, c.ScenarioID, row.ScenarioID)
					assert.Equal(t, r.ScenarioID, row.ScenarioID)
					if cross {
						assert.NotEqual(t, row.ChosenCheckpoint, row.RejectedCheckpoint)
					} else {
						assert.Equal(t, row.ChosenCheckpoint, row.RejectedCheckpoint)
					}
					if s, ok := splitOf[row.ScenarioID]; ok {
						assert.Equal(t, s, row.Split, "scenario %s spans two splits", row.ScenarioID)
					}
					splitOf[row.ScenarioID] = row.Split
					assert.False(t, seenIDs[row.PairID], "pair ids are unique")
					seenIDs[row.PairID] = true

					prompt := checkMessages(t, "prompt", row.Prompt)
					chosen := checkMessages(t, "chosen", row.Chosen)
					rejected := checkMessages(t, "rejected", row.Rejected)
					require.NotEmpty(t, prompt)
					last := prompt[len(prompt)-1]["role"]
					assert.Contains(t, []any{"user", "tool"}, last, "a prompt ends on a user or tool message")
					assert.Equal(t, "assistant", chosen[0]["role"])
					assert.Equal(t, "assistant", rejected[0]["role"])
					assert.Equal(t, len(prompt), row.DivergenceStep)
					assert.Equal(t, dataset.Messages(c.Messages[:row.DivergenceStep]), row.Prompt)
					assert.NotEmpty(t, row.DriftTypes)

					if row.PairType == pairs.TypeStep {
						onset := false
						for _, m := range r.Matches {
							onset = onset || m.Turn == row.DivergenceStep
						}
						assert.True(t, onset, "step pair %s: the rejected side drifts at the divergence turn", row.PairID)
						if cont == pairs.ContinueTurn {
							assert.Len(t, row.Chosen, 1)
							assert.Len(t, row.Rejected, 1)
						}
					} else {
						p, _ := dataset.SplitPrompt(c.Messages)
						assert.Equal(t, len(p), row.DivergenceStep)
					}
					assert.InDelta(t, row.ChosenReward-row.RejectedReward, row.RewardGap, 1e-12)
					assert.Greater(t, row.RewardGap, 0.0)

					pool := row.PairType + "/" + row.ScenarioID
					if !cross {
						pool += "/" + row.ChosenCheckpoint
					}
					perPool[pool]++
					uses[row.PairType+"/"+row.ChosenTrajID]++
					uses[row.PairType+"/"+row.RejectedTrajID]++
				}
				for p, n := range perPool {
					assert.LessOrEqual(t, n, o.MaxPerScenario, "pool %s", p)
				}
				for id, n := range uses {
					assert.LessOrEqual(t, n, o.MaxReuse, "trajectory %s", id)
				}
				assert.Equal(t, len(recs), st.Trajectories)
				assert.Equal(t, len(rows), st.Pairs())
				for _, ts := range []*pairs.TypeStats{st.Trajectory, st.Step} {
					assert.Equal(t, ts.Pairs, ts.Splits["train"]+ts.Splits["validation"]+ts.Splits["test"])
					assert.Equal(t, ts.Pools, ts.PoolsWithPairs+ts.PoolsNoClean+ts.PoolsNoDrift+ts.PoolsNeither+ts.PoolsNoValidPair)
				}
				if !cross && cont == pairs.ContinueRest {
					var buf bytes.Buffer
					st.Print(&buf)
					t.Logf("statistics of the simulated family (8 rollouts per scenario):\n%s", buf.String())
				}
			})
		}
	}
}

func jsonl(t *testing.T, rows []*dataset.DPORow) []byte {
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func TestSimulatedDeterminism(t *testing.T) {
	dirs := simDirs(t)
	o := pairs.DefaultOptions()
	o.StepPairs, o.Reward = true, defaultReward(t)
	a, sa := build(t, o, dirs...)
	b, sb := build(t, o, dirs...)
	assert.Equal(t, a, b)
	assert.Equal(t, sa, sb)
	assert.True(t, bytes.Equal(jsonl(t, a), jsonl(t, b)), "same inputs give byte-identical JSONL")

	// The runs in another order: the same pairs.
	rev := append([]string(nil), dirs...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	c, _ := build(t, o, rev...)
	assert.True(t, bytes.Equal(jsonl(t, a), jsonl(t, c)))

	// The same plan rolled out again, one episode at a time (another file
	// order): the same pairs.
	again := t.TempDir()
	require.NoError(t, simRun(again, "base", 8, 1, 1))
	x, _ := build(t, o, dirs[0])
	y, _ := build(t, o, again)
	assert.True(t, bytes.Equal(jsonl(t, x), jsonl(t, y)))

	// Another seed: other selections and splits, same rules.
	o.Seed = 2
	d, _ := build(t, o, dirs...)
	assert.NotEqual(t, jsonl(t, a), jsonl(t, d))
}
