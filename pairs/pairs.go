package pairs

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Pair types, as written in the pair_type column.
const (
	TypeTrajectory = "trajectory"
	TypeStep       = "step"
)

// Step-pair continuations.
const (
	// ContinueRest: chosen and rejected are the whole rest of each trajectory
	// after the shared prefix.
	ContinueRest = "rest"
	// ContinueTurn: chosen and rejected are the next assistant turn only.
	ContinueTurn = "turn"
)

// Reasons a trajectory went unpaired or a candidate pair was dropped.
const (
	ReasonNoClean       = "no_clean_success"       // the pool has no clean success to pair a drifting trajectory with
	ReasonNoDrift       = "no_drifting_trajectory" // the pool has no drifting trajectory to pair a clean success with
	ReasonCap           = "cap_reached"            // the pool already gave K pairs
	ReasonReuse         = "reuse_exhausted"        // every possible partner was already used M times
	ReasonDedup         = "duplicate"              // the same (prompt, chosen, rejected), tool-call ids aside, was already emitted
	ReasonGap           = "below_min_gap"          // chosen_reward − rejected_reward < the minimum gap
	ReasonLength        = "too_long"               // prompt + chosen or prompt + rejected exceeds the maximum length
	ReasonPrompt        = "prompt_mismatch"        // the two trajectories do not start from the same prompt
	ReasonEmpty         = "empty_completion"       // a trajectory has no assistant turn
	ReasonSameCkpt      = "same_checkpoint"        // cross-checkpoint pairing: chosen and rejected share a checkpoint
	ReasonNotOnset      = "not_drift_onset"        // step pair: the rejected side does not drift at the divergence turn
	ReasonOffAssistant  = "diverges_off_assistant" // step pair: the first difference is not an assistant turn of both
	ReasonNotApplicable = "failed_without_drift"   // neither clean nor drifting: never chosen nor rejected
	ReasonRawArguments  = "unparsed_arguments"     // a tool call's arguments never parsed as an object: no {"_raw": …} reaches a training row
)

// Options configure pairing. Use DefaultOptions and change what you need.
type Options struct {
	MaxPerScenario int            // K: at most this many pairs per pool and pair type; <= 0: no limit
	MaxReuse       int            // M: each trajectory is used at most this many times per pair type; <= 0: no limit
	Ratios         dataset.Ratios // train/validation/test shares of scenarios
	Seed           int64          // selection order and split assignment
	// CrossCheckpoint pools all checkpoints of a scenario and pairs a chosen
	// of one checkpoint with a rejected of another (never the same). By
	// default a pool is one scenario under one checkpoint. Either way a pool
	// holds one framework.
	CrossCheckpoint bool
	// TrajectoryPairs and StepPairs select the pair types built.
	TrajectoryPairs bool
	StepPairs       bool
	// StepContinuation is ContinueRest (default) or ContinueTurn.
	StepContinuation string
	// Render chooses what rendered messages carry beyond the answer: the
	// model's reasoning is left out unless Render.Reasoning is set.
	Render dataset.RenderOptions
	// MinGap, when set, drops pairs whose chosen_reward − rejected_reward is
	// smaller.
	MinGap *float64
	// MaxMessages, when > 0, drops pairs where prompt + chosen or prompt +
	// rejected has more messages.
	MaxMessages int
	// MaxChars, when > 0, drops pairs where prompt + chosen or prompt +
	// rejected has more characters, counted as bytes of the messages'
	// exported JSON (what a trainer reads).
	MaxChars int
	// Reward scores a trajectory for the reward columns and MinGap; nil
	// gives 0 everywhere.
	Reward func(*trajectory.Record) (float64, error)
	// Relabel, when set, puts another labeling on each record before it
	// is classified and rewarded (labels.Overlay.Apply); a record it
	// returns false for is left out.
	Relabel func(*trajectory.Record) (bool, error)
	// Margin writes margin = reward_gap in every row.
	Margin bool
}

// DefaultOptions: K = 4, M = 2, 80/10/10 split, seed 1, trajectory pairs
// within each checkpoint, step continuations to the end.
func DefaultOptions() Options {
	return Options{MaxPerScenario: 4, MaxReuse: 2, Ratios: dataset.DefaultRatios, Seed: 1, TrajectoryPairs: true, StepContinuation: ContinueRest}
}

// classes of trajectories
const (
	classClean = iota
	classShortcut
	classDriftFailure
	classOther
)

// Why a candidate failed, as a small code: the pool loop counts and
// remembers codes, the statistics name them (reasonNames).
const (
	reasonNone int8 = iota
	reasonSameCkpt
	reasonEmpty
	reasonPrompt
	reasonOffAssistant
	reasonNotOnset
	reasonLength
	reasonGap
	reasonRawArguments
	reasonDedup
	nReasons
)

var reasonNames = [nReasons]string{"", ReasonSameCkpt, ReasonEmpty, ReasonPrompt, ReasonOffAssistant, ReasonNotOnset,
	ReasonLength, ReasonGap, ReasonRawArguments, ReasonDedup}

type builder struct {
	opt   Options
	stats *Stats
	seen  map[dedupKey]bool
	emit  func(*dataset.DPORow) error
	keys  keyer
	cache recordCache
	buf   []byte

	// per scenario (scan): interned message keys, sigs and names
	interned map[string]*msgs
	sigs     map[sigKey]int
	strs     map[string]string
	// memo[sig] is the reason a chosen of that sig failed with the
	// rejected of the current visit (and of the visits before it with the
	// same sig), valid while memoGen[sig] == gen. A failure never turns
	// into a pair (seen only grows), so that a pool where thousands of
	// copies of the same episodes meet computes each distinct couple once.
	memo    []int8
	memoGen []uint32
	gen     uint32
	noMemo  bool // tests: every candidate computed, one by one
	// per sig, within a pool (sigsOf): the chosen with uses left, one of
	// them, and the reasons of the last sweep
	sigLeft []int
	sigRep  []*item
	swept   []int8
	sweeps  int // visits decided by sweep (tests)
}

// Build pairs the trajectories of the index and emits the rows, scenario by
// scenario (sorted by id), pool by pool (checkpoints sorted), trajectory
// pairs before step pairs. The rows depend only on the set of records and
// the options, never on the order of records in the files or of the runs on
// the command line (the statistics list checkpoints in the runs' order).
//
// Memory does not grow with the records' size: each scenario is streamed
// once (dataset.Index.Each) into an item per trajectory (about 200 bytes:
// class, reward, seeded key, the message keys of its episode, shared by the
// copies of that episode) and pairing reads records again only to render
// the pairs it emits, at most cacheRecords at a time. What grows is the
// items of the largest scenario, with its rollouts. Time is one decoding
// pass plus the candidates; candidates between items that read alike (the
// same sig) are decided once per visit of a rejected trajectory, so that a
// pool where thousands of copies of an episode meet costs a few
// nanoseconds a candidate.
func Build(ix *dataset.Index, opt Options, emit func(*dataset.DPORow) error) (*Stats, error) {
	b, err := newBuilder(ix, opt, emit)
	if err != nil {
		return nil, err
	}
	return b.build(ix)
}

func newBuilder(ix *dataset.Index, opt Options, emit func(*dataset.DPORow) error) (*builder, error) {
	if opt.StepContinuation == "" {
		opt.StepContinuation = ContinueRest
	}
	if opt.StepContinuation != ContinueRest && opt.StepContinuation != ContinueTurn {
		return nil, fmt.Errorf("pairs: step continuation %q: want %q or %q", opt.StepContinuation, ContinueRest, ContinueTurn)
	}
	if !opt.TrajectoryPairs && !opt.StepPairs {
		return nil, fmt.Errorf("pairs: no pair type selected")
	}
	b := &builder{opt: opt, stats: newStats(opt), seen: map[dedupKey]bool{}, emit: emit,
		interned: map[string]*msgs{}, sigs: map[sigKey]int{}, strs: map[string]string{}}
	b.cache = recordCache{ix: ix, relabel: opt.Relabel}
	return b, nil
}

func (b *builder) build(ix *dataset.Index) (*Stats, error) {
	for _, sid := range ix.Scenarios() {
		if err := b.scenario(ix, sid); err != nil {
			return nil, err
		}
	}
	b.stats.finish(ix.LessCheckpoint)
	return b.stats, nil
}

// scenario pairs one scenario: a pass over its records keeps an item each
// (scan), then pools are paired from the items, reading again only the
// records of the pairs emitted (and of the few checks keys cannot decide),
// a bounded number at a time (recordCache).
func (b *builder) scenario(ix *dataset.Index, sid string) error {
	b.stats.Scenarios++
	b.cache.reset(sid)
	items, err := b.scan(ix, sid)
	if err != nil {
		return err
	}
	if n := len(b.sigs); n > len(b.memo) {
		b.memo, b.memoGen = make([]int8, n), make([]uint32, n)
		b.sigLeft, b.sigRep, b.swept = make([]int, n), make([]*item, n), make([]int8, n)
	}
	split := dataset.SplitOf(sid, b.opt.Ratios, b.opt.Seed)
	// A pool is one scenario under one checkpoint (or every checkpoint,
	// with CrossCheckpoint) and one framework: frameworks prompt differently.
	pools := map[[2]string][]*item{}
	var keys [][2]string
	for i := range items {
		it := &items[i]
		k := [2]string{it.ckpt, it.fw}
		if b.opt.CrossCheckpoint {
			k[0] = ""
		}
		if _, ok := pools[k]; !ok {
			keys = append(keys, k)
		}
		pools[k] = append(pools[k], it)
	}
	// by name: rows never depend on the order runs are given in
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		pool := pools[k]
		if b.opt.TrajectoryPairs {
			if err := b.pool(pool, TypeTrajectory, split); err != nil {
				return err
			}
		}
		if b.opt.StepPairs {
			if err := b.pool(pool, TypeStep, split); err != nil {
				return err
			}
		}
	}
	return nil
}

// keeps reports whether a completion keeps a message: every message with
// CompletionRest, the assistant turns otherwise.
func (b *builder) keeps(m *trajectory.Message) bool {
	return b.opt.Render.Completion != dataset.CompletionModelTurns || m.Role == trajectory.RoleAssistant
}

func (b *builder) contTag(typ string) string {
	if typ == TypeStep {
		return b.opt.StepContinuation
	}
	return ""
}

func promptEnd(ms []trajectory.Message) int {
	for i, m := range ms {
		if m.Role == trajectory.RoleAssistant {
			return i
		}
	}
	return len(ms)
}

func userOrTool(role uint8) bool { return role == roleUser || role == roleTool }

func size(ms []json.RawMessage) int {
	n := 0
	for _, m := range ms {
		n += len(m)
	}
	return n
}

func set(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
