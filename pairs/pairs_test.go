package pairs_test

import (
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// ids lists the (chosen, rejected) traj ids of rows.
func ids(rows []*dataset.DPORow) [][2]string {
	out := make([][2]string, len(rows))
	for i, r := range rows {
		out[i] = [2]string{r.ChosenTrajID, r.RejectedTrajID}
	}
	return out
}

func opts(f func(*pairs.Options)) pairs.Options {
	o := pairs.DefaultOptions()
	if f != nil {
		f(&o)
	}
	return o
}

func TestSelection(t *testing.T) {
	const s = "s1"
	clean := func(id string) *trajectory.Record { return rec(id, s, "ck", true, "a", "b") }
	shortcut := func(id string) *trajectory.Record { return rec(id, s, "ck", true, "a", "!x", "b") }
	failure := func(id string) *trajectory.Record { return rec(id, s, "ck", false, "!x") }
	other := func(id string) *trajectory.Record { return rec(id, s, "ck", false, "a") }

	cases := []struct {
		name           string
		recs           []*trajectory.Record
		k, m           int
		pairs          int
		rejectedFirst  string // the first rejected must be a shortcut when one exists
		unusedChosen   map[string]int
		unusedRejected map[string]int
	}{
		{name: "shortcuts before failures", recs: []*trajectory.Record{clean("c1"), failure("f1"), shortcut("s1")}, k: 1, m: 2,
			pairs: 1, rejectedFirst: "s1", unusedRejected: map[string]int{pairs.ReasonCap: 1}, unusedChosen: map[string]int{}},
		{name: "one chosen, reuse M", recs: []*trajectory.Record{clean("c1"), failure("f1"), failure("f2"), shortcut("s1")}, k: 10, m: 2,
			pairs: 2, rejectedFirst: "s1", unusedRejected: map[string]int{pairs.ReasonReuse: 1}, unusedChosen: map[string]int{}},
		{name: "cap K", recs: []*trajectory.Record{clean("c1"), clean("c2"), clean("c3"), failure("f1"), failure("f2"), failure("f3")}, k: 2, m: 2,
			pairs: 2, unusedRejected: map[string]int{pairs.ReasonCap: 1}, unusedChosen: map[string]int{pairs.ReasonCap: 1}},
		{name: "rejected reused after every rejected got one", recs: []*trajectory.Record{clean("c1"), clean("c2"), clean("c3"), failure("f1")}, k: 10, m: 2,
			pairs: 2, unusedRejected: map[string]int{}, unusedChosen: map[string]int{pairs.ReasonReuse: 1}},
		{name: "no clean success", recs: []*trajectory.Record{failure("f1"), shortcut("s1"), other("o1")}, k: 4, m: 2,
			pairs: 0, unusedRejected: map[string]int{pairs.ReasonNoClean: 2}, unusedChosen: map[string]int{}},
		{name: "no drifting", recs: []*trajectory.Record{clean("c1"), other("o1")}, k: 4, m: 2,
			pairs: 0, unusedRejected: map[string]int{}, unusedChosen: map[string]int{pairs.ReasonNoDrift: 1}},
		{name: "no limits", recs: []*trajectory.Record{clean("c1"), clean("c2"), failure("f1"), failure("f2")}, k: 0, m: 0,
			pairs: 4, unusedRejected: map[string]int{}, unusedChosen: map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRun(t, t.TempDir(), tc.recs)
			rows, st := build(t, opts(func(o *pairs.Options) { o.MaxPerScenario, o.MaxReuse = tc.k, tc.m }), dir)
			require.Len(t, rows, tc.pairs)
			if tc.rejectedFirst != "" {
				assert.Equal(t, tc.rejectedFirst, rows[0].RejectedTrajID)
			}
			uses := map[string]int{}
			for _, r := range rows {
				uses[r.ChosenTrajID]++
				uses[r.RejectedTrajID]++
				assert.Equal(t, pairs.TypeTrajectory, r.PairType)
				assert.Equal(t, 2, r.DivergenceStep)
			}
			if tc.m > 0 {
				for id, n := range uses {
					assert.LessOrEqual(t, n, tc.m, id)
				}
			}
			assert.Equal(t, tc.unusedChosen, st.Trajectory.UnusedChosen)
			assert.Equal(t, tc.unusedRejected, st.Trajectory.UnusedRejected)
			assert.Equal(t, tc.pairs, st.Trajectory.Pairs)
			assert.Equal(t, tc.pairs, st.Trajectory.ShortcutRejected+st.Trajectory.FailureRejected)
		})
	}
}

func TestTrajectoryPairShape(t *testing.T) {
	c := rec("c1", "s1", "ck", true, "a", "b")
	r := rec("r1", "s1", "ck", true, "a", "!x", "b")
	dir := writeRun(t, t.TempDir(), []*trajectory.Record{c, r})
	rows, _ := build(t, opts(func(o *pairs.Options) {
		o.Margin = true
		o.Reward = func(r *trajectory.Record) (float64, error) {
			if r.Drift {
				return -0.5, nil
			}
			return 1, nil
		}
	}), dir)
	require.Len(t, rows, 1)
	row := rows[0]
	assert.Equal(t, dataset.Messages(c.Messages[:2]), row.Prompt)
	// the default completion layout: the conversation as it happened, with
	// a mask of the model's messages
	assert.Equal(t, dataset.Messages(c.Messages[2:]), row.Chosen, "rest: the conversation as it happened")
	assert.Equal(t, dataset.Messages(r.Messages[2:]), row.Rejected)
	assert.Equal(t, c.Tools, row.Tools)
	assert.Equal(t, []int64{1, 0, 1, 0, 1}, row.ChosenTrain, "1 for the model's turns, 0 for tool results")
	assert.Equal(t, []int64{1, 0, 1, 0, 1, 0, 1}, row.RejectedTrain)
	mt, _ := build(t, opts(func(o *pairs.Options) { o.Render.Completion = dataset.CompletionModelTurns }), dir)
	require.Len(t, mt, 1)
	assert.Equal(t, dataset.Messages(assistantOnly(c.Messages[2:])), mt[0].Chosen, "model-turns: tool results left out")
	assert.Equal(t, dataset.Messages(assistantOnly(r.Messages[2:])), mt[0].Rejected)
	assert.Equal(t, []int64{1, 1, 1}, mt[0].ChosenTrain)
	// The drifting call's derived tool match sits beside its annotation:
	// it counts once, as the annotation's data drift.
	assert.Equal(t, []string{"data"}, row.DriftTypes)
	assert.Equal(t, []string{"purpose_limitation"}, row.ViolationKinds)
	assert.Equal(t, []string{"GDPR-5-1-b", "GDPR-5-1-c"}, row.Provisions)
	assert.Equal(t, 1.0, row.ChosenReward)
	assert.Equal(t, -0.5, row.RejectedReward)
	assert.Equal(t, 1.5, row.RewardGap)
	require.NotNil(t, row.Margin)
	assert.Equal(t, 1.5, *row.Margin)
	assert.Equal(t, dataset.SplitOf("s1", dataset.DefaultRatios, 1), row.Split)
	assert.Equal(t, dataset.SchemaVersion, row.SchemaVersion)
	assert.Len(t, row.PairID, 16)
	assert.Equal(t, "ck", row.ChosenCheckpoint)
	assert.Equal(t, "ck", row.RejectedCheckpoint)
}

func TestCrossCheckpoint(t *testing.T) {
	recs := []*trajectory.Record{
		rec("a-c1", "s1", "A", true, "a"),
		rec("a-r1", "s1", "A", false, "!x"),
		rec("b-r1", "s1", "B", false, "!y"),
		rec("b-c1", "s1", "B", true, "b"),
	}
	dir := writeRun(t, t.TempDir(), recs)

	rows, st := build(t, opts(nil), dir)
	assert.ElementsMatch(t, [][2]string{{"a-c1", "a-r1"}, {"b-c1", "b-r1"}}, ids(rows), "by default pairs stay within a checkpoint")
	assert.Equal(t, map[string]int{"A": 1, "B": 1}, st.Trajectory.ByCheckpoint)
	assert.Equal(t, 2, st.Trajectory.Pools)

	rows, st = build(t, opts(func(o *pairs.Options) { o.CrossCheckpoint = true }), dir)
	assert.ElementsMatch(t, [][2]string{{"a-c1", "b-r1"}, {"b-c1", "a-r1"}}, ids(rows))
	for _, r := range rows {
		assert.NotEqual(t, r.ChosenCheckpoint, r.RejectedCheckpoint)
	}
	assert.Equal(t, map[string]int{"A -> B": 1, "B -> A": 1}, st.Trajectory.ByCheckpoint)
	assert.Equal(t, 1, st.Trajectory.Pools)
	assert.Positive(t, st.Trajectory.Dropped[pairs.ReasonSameCkpt])
}

func TestPoolsHoldOneFramework(t *testing.T) {
	react := rec("r-c1", "s1", "ck", true, "a")
	react.Framework = "react"
	recs := []*trajectory.Record{rec("n-c1", "s1", "ck", true, "a"), react, rec("n-r1", "s1", "ck", false, "!x")}
	dir := writeRun(t, t.TempDir(), recs)
	rows, st := build(t, opts(func(o *pairs.Options) { o.MaxReuse = 5 }), dir)
	assert.Equal(t, [][2]string{{"n-c1", "n-r1"}}, ids(rows))
	assert.Equal(t, 2, st.Trajectory.Pools)
	assert.Equal(t, map[string]int{pairs.ReasonNoDrift: 1}, st.Trajectory.UnusedChosen)
}

func TestFilters(t *testing.T) {
	reward := func(r *trajectory.Record) (float64, error) {
		if !r.Drift {
			return 1, nil
		}
		return -0.5 * float64(len(r.DriftSteps)), nil
	}
	gap := func(g float64) *float64 { return &g }
	c := rec("c1", "s1", "ck", true, "a")
	r1 := rec("r1", "s1", "ck", false, "!x")                  // gap 1.5, 5 messages
	r3 := rec("r3", "s1", "ck", false, "!x", "!y", "!z")      // gap 2.5, 9 messages
	dup := rec("r3-dup", "s1", "ck", false, "!x", "!y", "!z") // r3 with other call ids
	dup.Messages[len(dup.Messages)-1].Content = r3.Messages[len(r3.Messages)-1].Content
	dir := writeRun(t, t.TempDir(), []*trajectory.Record{c, r1, r3, dup})

	cases := []struct {
		name    string
		opt     func(*pairs.Options)
		want    [][2]string
		dropped map[string]int
	}{
		{"dedup ignores tool-call ids", func(o *pairs.Options) { o.MaxReuse = 5 },
			[][2]string{{"c1", "r1"}, {"c1", "r3"}}, map[string]int{pairs.ReasonDedup: 1}},
		{"min gap", func(o *pairs.Options) { o.MinGap = gap(2) },
			[][2]string{{"c1", "r3"}}, map[string]int{pairs.ReasonGap: 1, pairs.ReasonDedup: 1}},
		{"max messages", func(o *pairs.Options) { o.MaxMessages = 6; o.MaxReuse = 5 },
			[][2]string{{"c1", "r1"}}, map[string]int{pairs.ReasonLength: 2}},
		{"max chars", func(o *pairs.Options) { o.MaxChars = 400; o.MaxReuse = 5 },
			[][2]string{{"c1", "r1"}}, map[string]int{pairs.ReasonLength: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(tc.opt)
			o.Reward = reward
			rows, st := build(t, o, dir)
			got := ids(rows)
			for i := range got {
				// r3 and r3-dup are the same pair; the seeded order picks one.
				got[i][1] = strings.TrimSuffix(got[i][1], "-dup")
			}
			assert.ElementsMatch(t, tc.want, got)
			assert.Equal(t, tc.dropped, st.Trajectory.Dropped)
			if o.MaxChars > 0 {
				for _, r := range rows {
					n := 0
					for _, m := range append(append([]json.RawMessage{}, r.Prompt...), r.Rejected...) {
						n += len(m)
					}
					assert.LessOrEqual(t, n, o.MaxChars)
				}
			}
		})
	}
}

func TestStepPairs(t *testing.T) {
	c := rec("c1", "s1", "ck", true, "a", "b")
	onset := rec("r1", "s1", "ck", true, "a", "!x", "b") // diverges at its drift: kept
	late := rec("r2", "s1", "ck", false, "a", "c", "!x") // diverges at "c", drifts later: dropped
	offAsst := rec("r3", "s1", "ck", false, "a", "!x")   // same call, another tool result: dropped
	offAsst.Messages[3].Content = "another result"
	dir := writeRun(t, t.TempDir(), []*trajectory.Record{c, onset, late, offAsst})

	for _, cont := range []string{pairs.ContinueRest, pairs.ContinueTurn} {
		t.Run(cont, func(t *testing.T) {
			rows, st := build(t, opts(func(o *pairs.Options) {
				o.TrajectoryPairs, o.StepPairs, o.StepContinuation, o.MaxReuse = false, true, cont, 5
			}), dir)
			require.Len(t, rows, 1)
			row := rows[0]
			assert.Equal(t, pairs.TypeStep, row.PairType)
			assert.Equal(t, "r1", row.RejectedTrajID)
			assert.Equal(t, 4, row.DivergenceStep)
			assert.Equal(t, dataset.Messages(c.Messages[:4]), row.Prompt, "the prompt is the shared prefix")
			if cont == pairs.ContinueRest {
				assert.Equal(t, dataset.Messages(c.Messages[4:]), row.Chosen)
				assert.Equal(t, dataset.Messages(onset.Messages[4:]), row.Rejected)
			} else {
				assert.Equal(t, dataset.Messages(c.Messages[4:5]), row.Chosen)
				assert.Equal(t, dataset.Messages(onset.Messages[4:5]), row.Rejected)
			}
			assert.Equal(t, map[string]int{pairs.ReasonNotOnset: 1, pairs.ReasonOffAssistant: 1}, st.Step.Dropped)
			assert.Equal(t, map[string]int{pairs.ReasonNotOnset: 1, pairs.ReasonOffAssistant: 1}, st.Step.UnusedRejected)
			assert.Nil(t, st.Trajectory)
		})
	}
}

func TestStepPairAtFirstTurnDuplicatesTrajectoryPair(t *testing.T) {
	c := rec("c1", "s1", "ck", true, "a")
	r := rec("r1", "s1", "ck", false, "!x")
	dir := writeRun(t, t.TempDir(), []*trajectory.Record{c, r})
	rows, st := build(t, opts(func(o *pairs.Options) { o.StepPairs = true }), dir)
	require.Len(t, rows, 1, "a step pair diverging at the first turn equals the trajectory pair")
	assert.Equal(t, pairs.TypeTrajectory, rows[0].PairType)
	assert.Equal(t, map[string]int{pairs.ReasonDedup: 1}, st.Step.Dropped)

	rows, _ = build(t, opts(func(o *pairs.Options) { o.StepPairs = true; o.StepContinuation = pairs.ContinueTurn }), dir)
	require.Len(t, rows, 2)
}

func TestOrderIndependence(t *testing.T) {
	var recs []*trajectory.Record
	for _, s := range []string{"s1", "s2", "s3"} {
		for i, script := range [][]string{{"a", "b"}, {"a", "c"}, {"a", "!x", "b"}, {"!y"}, {"a", "!z"}, {"b"}, {"a"}} {
			id := s + "-" + string(rune('a'+i))
			recs = append(recs, rec(id, s, "ck", script[len(script)-1] == "b", script...))
		}
	}
	a := writeRun(t, t.TempDir(), recs)
	rev := make([]*trajectory.Record, len(recs))
	for i, r := range recs {
		rev[len(recs)-1-i] = r
	}
	b := writeRun(t, t.TempDir(), rev[:7], rev[7:])
	o := opts(func(o *pairs.Options) { o.StepPairs = true; o.Seed = 9 })
	ra, sa := build(t, o, a)
	rb, sb := build(t, o, b)
	require.NotEmpty(t, ra)
	assert.Equal(t, ra, rb)
	assert.Equal(t, sa, sb)

}

func TestIndexErrors(t *testing.T) {
	good := func(t *testing.T) string {
		return writeRun(t, t.TempDir(), []*trajectory.Record{rec("c1", "s1", "ck", true, "a"), rec("r1", "s1", "ck", false, "!x")})
	}
	// Broken, torn and incomplete lines: rollout/store's index tests.
	t.Run("incomplete last line", func(t *testing.T) {
		dir := good(t)
		f := filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")
		b, _ := os.ReadFile(f)
		require.NoError(t, os.WriteFile(f, b[:len(b)-10], 0o644))
		_, err := dataset.OpenIndex(dir)
		require.Error(t, err)
		assert.Contains(t, err.Error(), f+":2: incomplete last line")
	})
	t.Run("run given twice", func(t *testing.T) {
		dir := good(t)
		ix, err := dataset.OpenIndex(dir, dir)
		require.NoError(t, err)
		defer ix.Close()
		assert.Equal(t, 2, ix.Len())
		assert.Equal(t, 2, ix.Duplicates, "copies of an episode are dropped")
		assert.Equal(t, []int{2, 0}, ix.Records)
		assert.Equal(t, []string{"s1"}, ix.Scenarios())
		f := filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")
		recs, err := ix.Load("s1")
		require.NoError(t, err)
		require.Len(t, recs, 2)
		assert.Less(t, recs[0].TrajID, recs[1].TrajID, "a scenario's records by traj_id")
		lines := map[string]string{recs[0].TrajID: "", recs[1].TrajID: ""}
		b, _ := os.ReadFile(f)
		for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			for id := range lines {
				if strings.Contains(l, `"traj_id":"`+id+`"`) {
					lines[id] = fmt.Sprintf("%s:%d", f, i+1)
				}
			}
		}
		for id, want := range lines {
			assert.Equal(t, want, ix.Where(id))
		}
		assert.Equal(t, "unknown", ix.Where("unknown"))
		recs, err = ix.Load("no-such-scenario")
		assert.NoError(t, err)
		assert.Empty(t, recs)
	})
	t.Run("blank lines", func(t *testing.T) {
		dir := good(t)
		f := filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")
		b, _ := os.ReadFile(f)
		require.NoError(t, os.WriteFile(f, append([]byte("\n"), b...), 0o644))
		rows, _ := build(t, opts(nil), dir)
		assert.Len(t, rows, 1)
	})
	t.Run("empty run", func(t *testing.T) {
		dir := writeRun(t, t.TempDir())
		rows, st := build(t, opts(nil), dir)
		assert.Empty(t, rows)
		assert.Zero(t, st.Trajectories)
	})
}

func TestBuildOptionErrors(t *testing.T) {
	dir := writeRun(t, t.TempDir(), []*trajectory.Record{rec("c1", "s1", "ck", true, "a")})
	ix, err := dataset.OpenIndex(dir)
	require.NoError(t, err)
	defer ix.Close()
	emit := func(*dataset.DPORow) error { return nil }
	_, err = pairs.Build(ix, opts(func(o *pairs.Options) { o.TrajectoryPairs = false }), emit)
	assert.Error(t, err)
	_, err = pairs.Build(ix, opts(func(o *pairs.Options) { o.StepPairs = true; o.StepContinuation = "all" }), emit)
	assert.Error(t, err)
}

// assistantOnly is the model-turns completion layout of messages.
func assistantOnly(ms []trajectory.Message) []trajectory.Message {
	var out []trajectory.Message
	for _, m := range ms {
		if m.Role == trajectory.RoleAssistant {
			out = append(out, m)
		}
	}
	return out
}
