package pairs

import (
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Stats say what was paired and why the rest was not.
//
// A pool is the set of trajectories that may pair with each other: one
// scenario under one checkpoint, or one scenario across checkpoints with
// cross-checkpoint pairing. Unused counts are trajectories (each counted
// once per pair type, with the last reason it failed, or why it was never
// tried); Dropped counts candidate (chosen, rejected) couples that were
// tried and rejected.
type Stats struct {
	Trajectories int               `json:"trajectories"`
	Scenarios    int               `json:"scenarios"`
	Checkpoints  []CheckpointStats `json:"checkpoints"`
	Trajectory   *TypeStats        `json:"trajectory_pairs,omitempty"`
	Step         *TypeStats        `json:"step_pairs,omitempty"`
	Options      StatsOptions      `json:"options"`
	// MaxTokens and DroppedOverMaxTokens are set by the writer's caller:
	// the --max-tokens bound and the pairs it dropped at export time (the
	// pair counts above are before that drop).
	MaxTokens            int64 `json:"max_tokens,omitempty"`
	DroppedOverMaxTokens int64 `json:"dropped_over_max_tokens,omitempty"`

	byCk map[string]*CheckpointStats
}

// StatsOptions record the options the statistics came from.
type StatsOptions struct {
	MaxPerScenario   int            `json:"max_per_scenario"`
	MaxReuse         int            `json:"max_reuse"`
	Split            dataset.Ratios `json:"split"`
	Seed             int64          `json:"seed"`
	CrossCheckpoint  bool           `json:"cross_checkpoint"`
	StepContinuation string         `json:"step_continuation,omitempty"`
	MinGap           *float64       `json:"min_gap,omitempty"`
	MaxMessages      int            `json:"max_messages,omitempty"`
	MaxChars         int            `json:"max_chars,omitempty"`
}

// CheckpointStats describe one checkpoint's trajectories and the pairs they
// went into (a pair counts under its rejected side's checkpoint).
type CheckpointStats struct {
	Checkpoint      string `json:"checkpoint"`
	Trajectories    int    `json:"trajectories"`
	Clean           int    `json:"clean"`
	Shortcuts       int    `json:"drifting_successes"`
	DriftFailures   int    `json:"drifting_failures"`
	FailedClean     int    `json:"failed_without_drift"`
	TrajectoryPairs int    `json:"trajectory_pairs"`
	StepPairs       int    `json:"step_pairs"`
}

// TypeStats describe one pair type.
type TypeStats struct {
	Pairs            int            `json:"pairs"`
	Splits           map[string]int `json:"splits"`
	ShortcutRejected int            `json:"rejected_drifting_successes"`
	FailureRejected  int            `json:"rejected_drifting_failures"`
	// ByCheckpoint counts pairs by "chosen checkpoint -> rejected
	// checkpoint" (one name when they are the same).
	ByCheckpoint   map[string]int `json:"by_checkpoint"`
	Pools          int            `json:"pools"`
	PoolsWithPairs int            `json:"pools_with_pairs"`
	PoolsNoClean   int            `json:"pools_without_clean_success"`
	PoolsNoDrift   int            `json:"pools_without_drifting"`
	PoolsNeither   int            `json:"pools_with_neither"`
	// PoolsNoValidPair have both sides but every candidate was dropped.
	PoolsNoValidPair int            `json:"pools_without_valid_pair"`
	ChosenUsed       int            `json:"chosen_trajectories_used"`
	RejectedUsed     int            `json:"rejected_trajectories_used"`
	UnusedChosen     map[string]int `json:"unused_clean_successes"`
	UnusedRejected   map[string]int `json:"unused_drifting"`
	Dropped          map[string]int `json:"dropped_candidates"`
	// FailedWithoutDrift trajectories are neither chosen nor rejected.
	FailedWithoutDrift int `json:"failed_without_drift"`

	ck *Stats
}

func newStats(o Options) *Stats {
	s := &Stats{byCk: map[string]*CheckpointStats{}, Options: StatsOptions{
		MaxPerScenario: o.MaxPerScenario, MaxReuse: o.MaxReuse, Split: o.Ratios, Seed: o.Seed,
		CrossCheckpoint: o.CrossCheckpoint, MinGap: o.MinGap, MaxMessages: o.MaxMessages, MaxChars: o.MaxChars,
	}}
	if o.TrajectoryPairs {
		s.Trajectory = newTypeStats(s)
	}
	if o.StepPairs {
		s.Step = newTypeStats(s)
		s.Options.StepContinuation = o.StepContinuation
	}
	return s
}

func newTypeStats(s *Stats) *TypeStats {
	return &TypeStats{Splits: map[string]int{}, ByCheckpoint: map[string]int{}, UnusedChosen: map[string]int{},
		UnusedRejected: map[string]int{}, Dropped: map[string]int{}, ck: s}
}

func (s *Stats) typ(t string) *TypeStats {
	if t == TypeStep {
		return s.Step
	}
	return s.Trajectory
}

func (s *Stats) checkpoint(name string) *CheckpointStats {
	c := s.byCk[name]
	if c == nil {
		c = &CheckpointStats{Checkpoint: name}
		s.byCk[name] = c
	}
	return c
}

func (s *Stats) trajectory(it *item) {
	s.Trajectories++
	c := s.checkpoint(it.ckpt)
	c.Trajectories++
	switch it.class {
	case classClean:
		c.Clean++
	case classShortcut:
		c.Shortcuts++
	case classDriftFailure:
		c.DriftFailures++
	default:
		c.FailedClean++
		for _, t := range []*TypeStats{s.Trajectory, s.Step} {
			if t != nil {
				t.FailedWithoutDrift++
			}
		}
	}
}

func (t *TypeStats) pair(row *dataset.DPORow, shortcut bool) {
	t.Pairs++
	t.Splits[row.Split]++
	if shortcut {
		t.ShortcutRejected++
	} else {
		t.FailureRejected++
	}
	key := row.ChosenCheckpoint
	if row.RejectedCheckpoint != row.ChosenCheckpoint {
		key += " -> " + row.RejectedCheckpoint
	}
	t.ByCheckpoint[key]++
	c := t.ck.checkpoint(row.RejectedCheckpoint)
	if row.PairType == TypeStep {
		c.StepPairs++
	} else {
		c.TrajectoryPairs++
	}
}

func (s *Stats) finish(less func(a, b string) bool) {
	s.Checkpoints = s.Checkpoints[:0]
	for _, c := range s.byCk {
		s.Checkpoints = append(s.Checkpoints, *c)
	}
	sort.Slice(s.Checkpoints, func(i, j int) bool { return less(s.Checkpoints[i].Checkpoint, s.Checkpoints[j].Checkpoint) })
}

// Pairs is the number of pairs of all types.
func (s *Stats) Pairs() int {
	n := 0
	for _, t := range []*TypeStats{s.Trajectory, s.Step} {
		if t != nil {
			n += t.Pairs
		}
	}
	return n
}

// Print writes the statistics as tables for people.
func (s *Stats) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	step := s.Step != nil
	fmt.Fprint(tw, "CHECKPOINT\tTRAJ\tCLEAN\tDRIFT+SUCCESS\tDRIFT+FAIL\tFAILED CLEAN\tTRAJ PAIRS")
	if step {
		fmt.Fprint(tw, "\tSTEP PAIRS")
	}
	fmt.Fprintln(tw)
	for _, c := range s.Checkpoints {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d", c.Checkpoint, c.Trajectories, c.Clean, c.Shortcuts, c.DriftFailures, c.FailedClean, c.TrajectoryPairs)
		if step {
			fmt.Fprintf(tw, "\t%d", c.StepPairs)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, x := range []struct {
		name string
		t    *TypeStats
	}{{"trajectory", s.Trajectory}, {"step", s.Step}} {
		t := x.t
		if t == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s pairs: %d (train %d, validation %d, test %d); rejected: %d drifting successes, %d drifting failures\n",
			x.name, t.Pairs, t.Splits["train"], t.Splits["validation"], t.Splits["test"], t.ShortcutRejected, t.FailureRejected)
		fmt.Fprintf(w, "  pools: %d, with pairs %d, without clean success %d, without drifting %d, with neither %d, without a valid pair %d\n",
			t.Pools, t.PoolsWithPairs, t.PoolsNoClean, t.PoolsNoDrift, t.PoolsNeither, t.PoolsNoValidPair)
		fmt.Fprintf(w, "  trajectories used: %d chosen, %d rejected; %d failed without drift (never paired)\n", t.ChosenUsed, t.RejectedUsed, t.FailedWithoutDrift)
		fmt.Fprintf(w, "  unused clean successes: %s\n", reasons(t.UnusedChosen))
		fmt.Fprintf(w, "  unused drifting:        %s\n", reasons(t.UnusedRejected))
		fmt.Fprintf(w, "  dropped candidates:     %s\n", reasons(t.Dropped))
	}
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
