package rewards

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TableOptions decide the split column of the rewards table; use the same
// ratios and seed as for pairs so that both tables agree.
type TableOptions struct {
	Ratios dataset.Ratios
	Seed   int64
	// Render chooses what rendered messages carry: the model's reasoning
	// is left out unless Render.Reasoning is set.
	Render dataset.RenderOptions
	// Keep, when set, decides whether a row goes in the table (e.g. a
	// length bound: export.Writer.Admit). Rows it refuses are left out
	// before the group's advantages are computed, so the advantages of
	// the rows kept are TRL's formula over the rows in the file.
	Keep func(*dataset.RewardRow) (bool, error)
	// Scenarios, when set, fill the boundary_tools column.
	Scenarios map[string]*scenario.Scenario
}

// GroupID names a GRPO group: the rollouts under one checkpoint whose
// first request was the same (FirstRequestHash), "SCENARIO@CHECKPOINT#HASH".
// The scenario is named for reading; the hash decides the group.
func GroupID(scenarioID, checkpoint, firstRequest string) string {
	return scenarioID + "@" + checkpoint + "#" + firstRequest
}

// Summary describes a rewards table.
type Summary struct {
	Rows           int `json:"rows"`
	Groups         int `json:"groups"`
	SingletonGroup int `json:"singleton_groups"` // groups of one, whose advantage is 0
	ZeroStdGroups  int `json:"zero_std_groups"`  // groups of equal rewards: no learning signal
	// NoCompletion counts trajectories left out because nothing follows
	// their prompt (no assistant turn): no row, no group member.
	NoCompletion int `json:"no_completion"`
	// SplitPrompts counts (scenario, checkpoint) pairs whose rollouts were
	// sent more than one first request (frameworks that prompt
	// differently, runs of one scenario id whose text differs): each first
	// request is its own GRPO group.
	SplitPrompts int                 `json:"split_prompt_groups"`
	Checkpoints  []CheckpointSummary `json:"checkpoints"`
	Splits       map[string]int      `json:"splits"`
	// RawArguments counts trajectories left out because a tool call's
	// arguments never parsed as an object (no {"_raw": …} in a training row).
	RawArguments int `json:"unparsed_arguments"`
	// Dropped counts rows TableOptions.Keep refused (e.g. over
	// --max-tokens); GroupsDropped the groups left with no row.
	Dropped       int `json:"dropped_rows"`
	GroupsDropped int `json:"dropped_groups"`
	byCheckpoint  map[string]*CheckpointSummary
}

// CheckpointSummary holds one checkpoint's figures.
type CheckpointSummary struct {
	Checkpoint   string  `json:"checkpoint"`
	Trajectories int     `json:"trajectories"`
	Groups       int     `json:"groups"`
	MeanReward   float64 `json:"mean_reward"`
	MinReward    float64 `json:"min_reward"`
	MaxReward    float64 `json:"max_reward"`
	Successes    int     `json:"successes"`
	Drifting     int     `json:"drifting"`
	Clean        int     `json:"clean"`
}

// Table scores every trajectory of the index and emits one row per
// trajectory (prompt and completion cut by dataset.SplitPrompt, as the KTO
// table does), or one per assistant turn (Render.Completion), with its
// group-relative advantage, ordered by scenario, checkpoint name, group
// and traj_id.
//
// Memory holds a window of records and rows, not a scenario's, whatever
// its rollouts. A scenario whose records come to at most holdBytes of
// JSONL is read once and its rows held, as Table always did; a larger one
// is read twice: the first pass keeps a 32-byte member per trajectory (its
// group, rank, reward, row count and flags: what the advantages and the
// Summary need), sorted by group, in memory up to spillMembers (16 MiB)
// and in sorted runs in a temporary file past that (internal/extsort), so
// that no scenario's size moves the memory bound; the second reads the
// records again in row order, a window at a time, and renders their rows.
// Groups small enough are rendered together and held while opt.Keep
// decides on their rows; a larger group with opt.Keep set is rendered
// twice (once for Keep, once to emit, its verdicts kept a bit a row),
// since its advantages need every Keep verdict before its first row goes
// out. The next scenario's first pass runs while one's rows are emitted.
// Scores and rows are computed on every core (cfg.Score and opt.Render's
// rendering are safe for concurrent use); opt.Keep and emit are called in
// row order on one goroutine, each group's rows offered to Keep before
// any is emitted, so the table and the first error returned are those of
// building one row at a time. Keep must not modify the row it is given.
func Table(ix *dataset.Index, cfg Config, opt TableOptions, emit func(*dataset.RewardRow) error) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sum := &Summary{Splits: map[string]int{}, byCheckpoint: map[string]*CheckpointSummary{}}
	ahead := surveyAhead(ix, func(sid string) *scenarioTable {
		return &scenarioTable{ix: ix, sid: sid, cfg: cfg, opt: opt, sum: sum, emit: emit}
	})
	defer ahead.stop()
	for range ix.Scenarios() {
		t, err := ahead.next()
		if err != nil {
			return nil, err
		}
		err = t.run()
		if err != nil {
			return nil, err
		}
	}
	for _, c := range sum.byCheckpoint {
		if c.Trajectories > 0 {
			c.MeanReward /= float64(c.Trajectories)
		}
		sum.Checkpoints = append(sum.Checkpoints, *c)
	}
	sort.Slice(sum.Checkpoints, func(i, j int) bool {
		return ix.LessCheckpoint(sum.Checkpoints[i].Checkpoint, sum.Checkpoints[j].Checkpoint)
	})
	return sum, nil
}

// add counts a group of kept trajectories, which each calls fn with in
// order.
func (s *Summary) add(ck string, each func(fn func(m *member))) {
	c := s.byCheckpoint[ck]
	s.Groups++
	n, same := 0, true
	var first float64
	each(func(m *member) {
		r := m.reward
		if n == 0 {
			first = r
			if c == nil {
				c = &CheckpointSummary{Checkpoint: ck, MinReward: r, MaxReward: r}
				s.byCheckpoint[ck] = c
			}
		}
		n++
		same = same && r == first
		c.Trajectories++
		c.MeanReward += r
		if r < c.MinReward {
			c.MinReward = r
		}
		if r > c.MaxReward {
			c.MaxReward = r
		}
		success, drift := m.has(memberSuccess), m.has(memberDrift)
		if success {
			c.Successes++
		}
		if drift {
			c.Drifting++
		}
		if success && !drift { // trajectory.Record.Clean
			c.Clean++
		}
	})
	c.Groups++
	switch {
	case n == 1:
		s.SingletonGroup++
	case same:
		s.ZeroStdGroups++
	}
}

// FirstRequestHash identifies a rollout's first request: its messages up
// to and including the first user message, rendered as the model was sent
// them (the framework's text view for a text protocol), and the tools
// visible at step 0 (dataset.FirstRequestTools), as the request sent them.
// Twelve hex digits of SHA-256 over exactly those bytes, each message and
// tool after a 0 byte and the tools after a 1 byte.
func FirstRequestHash(r *trajectory.Record) string {
	h := firstRequestSum(r)
	return hex.EncodeToString(h[:])
}

// firstRequestSum is FirstRequestHash's six bytes, what a table keeps per
// trajectory.
func firstRequestSum(r *trajectory.Record) [6]byte {
	prompt, _ := dataset.SplitPrompt(r.Messages)
	h := sha256.New()
	for _, m := range dataset.RenderWith(r, prompt, dataset.RenderOptions{}) {
		h.Write([]byte{0})
		h.Write(m)
	}
	h.Write([]byte{1})
	for _, t := range dataset.FirstRequestTools(r) {
		h.Write([]byte{0})
		h.Write(t)
	}
	var out [6]byte
	copy(out[:], h.Sum(nil))
	return out
}
