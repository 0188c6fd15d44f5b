package pairs

import (
	"github.com/antidrift/antidrift/internal/racetest"

	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// copiesRun writes a run where each scenario repeats a few episodes under
// many traj_ids (as a simulated policy does), with tool-call ids that
// differ per copy, two checkpoints, a native and a text-view framework,
// and now and then arguments that never parsed as JSON: pools where
// thousands of candidates meet the same few couples.
func copiesRun(t *testing.T, scenarios, perScenario int) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(dir, store.Manifest{Version: "test", Run: "run-t", Plan: store.Plan{ScenarioSource: "test"}}))
	rng := rand.New(rand.NewPCG(3, 4))
	scripts := [][]string{{"a", "b"}, {"a", "!x", "b"}, {"!x"}, {"a", "c", "!x"}, {"a"}, {"a", "!y"}, {"b", "!x", "!y"}}
	var buf bytes.Buffer
	for s := range scenarios {
		sid := fmt.Sprintf("s%d", s)
		for i := range perScenario {
			id := fmt.Sprintf("t%03d-%05d", s, i)
			script := scripts[rng.IntN(len(scripts))]
			r := &trajectory.Record{
				TrajID: id, Run: "run-t", Checkpoint: []string{"A", "B"}[rng.IntN(2)], Policy: "test",
				Framework: []string{"normal", textFramework}[rng.IntN(2)], ScenarioID: sid, Domain: "productivity",
				Messages: []trajectory.Message{{Role: "system", Content: "sys " + sid}, {Role: "user", Content: "task " + sid}},
				Tools:    []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}`)},
				Status:   trajectory.StatusCompleted, Success: rng.IntN(3) > 0,
			}
			for j, c := range script {
				name := c
				drifts := c[0] == '!'
				if drifts {
					name = c[1:]
				}
				turn := len(r.Messages)
				cid := fmt.Sprintf("call_%s_%d%s", id, j, strings.Repeat("z", 40*rng.IntN(3))) // sizes differ by ids
				args, parsed := `{"x":1}`, json.RawMessage(`{"x":1}`)
				if rng.IntN(40) == 0 {
					args, parsed = `{"x":`, json.RawMessage(`{"_raw":"{\"x\":"}`)
				}
				if rng.IntN(100) == 0 {
					args, parsed = `{"x":1e999}`, json.RawMessage(`{"x":1e999}`) // does not unmarshal: keys not exact
				}
				r.Messages = append(r.Messages,
					trajectory.Message{Role: "assistant", ToolCalls: []trajectory.ToolCall{{ID: cid, Type: "function",
						Function: trajectory.FunctionCall{Name: name, Arguments: args, Parsed: parsed}}}},
					trajectory.Message{Role: "tool", Content: "ok " + name, ToolCallID: cid, Name: name})
				if drifts && rng.IntN(4) == 0 {
					r.Drift = true // labelled drifting elsewhere: no onset at this turn
					r.Matches = append(r.Matches, drift.Match{Call: j, Turn: turn - 1, Tool: name, Drift: scenario.DriftData})
				} else if drifts {
					r.Drift = true
					r.DriftSteps = append(r.DriftSteps, j)
					r.Matches = append(r.Matches, drift.Match{Call: j, Turn: turn, Tool: name, Drift: scenario.DriftData,
						Kind: scenario.KindPurposeLimitation, Provisions: []string{"GDPR-5-1-b"}, Violation: 0, Annotated: true})
				}
			}
			r.Messages = append(r.Messages, trajectory.Message{Role: "assistant", Content: "done"})
			if r.DriftSteps == nil {
				r.DriftSteps = []int{}
			}
			b, err := json.Marshal(r)
			require.NoError(t, err)
			buf.Write(b)
			buf.WriteByte('\n')
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"), buf.Bytes(), 0o644))
	return dir
}

// textFramework's records render through a text view that writes the
// calls, their ids included, into the content: sizes differ per copy.
const textFramework = "text-test"

func init() {
	dataset.RegisterTextView(textFramework, func(ms []trajectory.Message) []trajectory.Message {
		out := make([]trajectory.Message, len(ms))
		for i, m := range ms {
			for _, c := range m.ToolCalls {
				m.Content += "Action: " + c.Function.Name + " " + c.ID + " " + c.Function.Arguments + "\n"
			}
			m.ToolCalls = nil
			out[i] = m
		}
		return out
	})
}

func buildWith(t *testing.T, ix *dataset.Index, opt Options, noMemo bool) ([]byte, *builder) {
	t.Helper()
	var out bytes.Buffer
	b, err := newBuilder(ix, opt, func(r *dataset.DPORow) error {
		j, err := json.Marshal(r)
		out.Write(j)
		out.WriteByte('\n')
		return err
	})
	require.NoError(t, err)
	b.noMemo = noMemo
	st, err := b.build(ix)
	require.NoError(t, err)
	j, err := json.Marshal(st)
	require.NoError(t, err)
	out.Write(j)
	return out.Bytes(), b
}

// The memo (a failed couple of sigs fails again) and the sweeps (a visit
// whose candidates all fail, counted per sig) change no row and no
// statistic: every option that a candidate reads, against computing every
// candidate one by one.
func TestMemoChangesNothing(t *testing.T) {
	racetest.SingleThreaded(t) // selection runs on one goroutine (the decoding's are raced by store's tests)
	ix, err := dataset.OpenIndex(copiesRun(t, 3, 1200))
	require.NoError(t, err)
	defer ix.Close()
	gap := 0.5
	reward := func(r *trajectory.Record) (float64, error) { // not a function of the messages
		h := fnv.New32a()
		h.Write([]byte(r.TrajID))
		return float64(h.Sum32() % 3), nil
	}
	for i, mod := range []func(*Options){
		func(o *Options) {},
		func(o *Options) { o.StepPairs = true },
		func(o *Options) { o.TrajectoryPairs, o.StepPairs, o.StepContinuation = false, true, ContinueTurn },
		func(o *Options) { o.StepPairs, o.CrossCheckpoint = true, true },
		func(o *Options) { o.StepPairs, o.MaxChars = true, 1000 },
		func(o *Options) { o.StepPairs, o.MaxChars, o.StepContinuation = true, 700, ContinueTurn },
		func(o *Options) { o.StepPairs, o.MaxMessages, o.MinGap, o.Reward = true, 7, &gap, reward },
		func(o *Options) { o.MaxPerScenario, o.MaxReuse, o.Reward = 0, 0, reward },
		func(o *Options) {
			o.StepPairs, o.MaxPerScenario, o.MaxReuse, o.Render.Completion = true, 40, 3, dataset.CompletionModelTurns
		},
	} {
		opt := DefaultOptions()
		mod(&opt)
		memo, mb := buildWith(t, ix, opt, false)
		direct, _ := buildWith(t, ix, opt, true)
		if !bytes.Equal(direct, memo) {
			d, m := bytes.Split(direct, []byte("\n")), bytes.Split(memo, []byte("\n"))
			for j := range min(len(d), len(m)) {
				if !bytes.Equal(d[j], m[j]) {
					t.Fatalf("options %d: row %d differs with the memo:\n%.600s\nwithout:\n%.600s", i, j, m[j], d[j])
				}
			}
			t.Fatalf("options %d: %d rows with the memo, %d without", i, len(m)-1, len(d)-1)
		}
		require.Contains(t, string(memo), `"pair_id"`, "options %d: no pair: the case tests nothing", i)
		require.Positive(t, mb.sweeps, "options %d: no visit swept", i)
		if opt.MaxChars > 0 {
			require.Contains(t, string(memo), `"too_long":`, "options %d: MaxChars drops nothing", i)
		}
	}
}

// Pairing holds at most cacheRecords records, and reads a record again
// only for the pairs it emits and the checks keys cannot decide (text-view
// sizes, arguments that never parsed), once per item and part, never once
// per candidate: the pools here try thousands of candidates.
func TestRecordsHeldWithinCacheBound(t *testing.T) {
	const per = 600
	ix, err := dataset.OpenIndex(copiesRun(t, 2, per))
	require.NoError(t, err)
	defer ix.Close()
	opt := DefaultOptions()
	opt.StepPairs, opt.MaxChars, opt.MaxPerScenario, opt.MaxReuse = true, 1500, 0, 0
	out, b := buildWith(t, ix, opt, false)
	rows := bytes.Count(out, []byte(`"pair_id"`))
	tried := 0
	for _, n := range b.stats.Trajectory.Dropped {
		tried += n
	}
	for _, n := range b.stats.Step.Dropped {
		tried += n
	}
	t.Logf("%d rows, %d candidates dropped, %d records read again, %d held at most", rows, tried, b.cache.loads, b.cache.maxHeld)
	require.Greater(t, tried, 20*2*per, "the pools must try many candidates")
	require.LessOrEqual(t, b.cache.maxHeld, cacheRecords)
	// each item: its text-view parts (prompt, completion, per pair type
	// and divergence), and each side of a row
	require.LessOrEqual(t, b.cache.loads, 6*2*per+2*rows)
}
