package pairs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"sort"

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

// sigsOf lists the distinct sigs of the chosen and counts them (sigLeft).
func (b *builder) sigsOf(chosen []*item) []int {
	var sigs []int
	for _, c := range chosen {
		if b.sigLeft[c.sig] == 0 {
			sigs = append(sigs, c.sig)
			b.sigRep[c.sig] = c
		}
		b.sigLeft[c.sig]++
	}
	return sigs
}

func (b *builder) resetSigs(sigs []int) {
	for _, s := range sigs {
		b.sigLeft[s], b.sigRep[s] = 0, nil
	}
}

// sweepShare: a visit is swept when the chosen with uses left are at least
// this many times their sigs. A sweep that finds a pair wastes at most
// the sigs' candidates the visit would not have reached (their failures
// stay in the memo): a quarter of a visit at most.
const sweepShare = 4

// sweep decides the visit of r at once when every chosen with uses left
// fails with it: one candidate per sig (memo), the failures counted per
// sig, and the reasons kept for the chosen's last failure (builder.swept).
// It reports false, having changed nothing but the memo, when some sig
// would give a pair: then the visit goes candidate by candidate, in order.
// A pool of copies of a few episodes thus costs its sigs per visit, not
// its trajectories.
func (b *builder) sweep(r *item, typ string, sigs []int, dropped *[nReasons]int) (bool, error) {
	for _, s := range sigs {
		if b.sigLeft[s] == 0 || b.memoGen[s] == b.gen {
			continue
		}
		why, err := b.wouldFail(b.sigRep[s], r, typ)
		if err != nil || why == reasonNone {
			return false, err
		}
		b.memo[s], b.memoGen[s] = why, b.gen
	}
	for _, s := range sigs {
		if b.sigLeft[s] > 0 {
			dropped[b.memo[s]] += b.sigLeft[s]
			b.swept[s] = b.memo[s]
		}
	}
	b.sweeps++
	return true, nil
}

// sizesOf computes a record's message sizes (sizes.sizes, keptSizes): the
// bytes of each message's exported JSON (native frameworks: a message
// renders on its own).
func (b *builder) sizesOf(ms []trajectory.Message) *sizes {
	m := &sizes{sizes: make([]int, len(ms)+1), keptSizes: make([]int, len(ms)+1)}
	for i := range ms {
		m.sizes[i+1] = m.sizes[i] + len(dataset.MessageJSONWith(ms[i], b.opt.Render))
	}
	for i := len(ms) - 1; i >= 0; i-- {
		m.keptSizes[i] = m.keptSizes[i+1]
		if b.keeps(&ms[i]) {
			m.keptSizes[i] += m.sizes[i+1] - m.sizes[i]
		}
	}
	return m
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

func byKey(its []*item) {
	sort.Slice(its, func(i, j int) bool {
		a, b := its[i].key, its[j].key
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return its[i].k < its[j].k // by traj_id: ranks are in traj_id order
	})
}

// pool selects pairs of one type within one pool.
//
// Chosen are the clean successes; rejected the drifting trajectories,
// shortcuts (drifting successes) first, then drifting failures, each class
// in a seeded order. Selection goes in rounds: in each round every rejected
// trajectory (in order) is paired with the next chosen (round-robin) that
// has uses left, has not been tried with it and gives a valid pair; round r
// only takes rejected trajectories used r times, so that distinct
// trajectories are paired before any is reused. It stops at K pairs or when
// no trajectory has uses left.
func (b *builder) pool(pool []*item, typ, split string) error {
	ts := b.stats.typ(typ)
	var chosen, shortcuts, failures []*item
	for _, it := range pool {
		switch it.class {
		case classClean:
			chosen = append(chosen, it)
		case classShortcut:
			shortcuts = append(shortcuts, it)
		case classDriftFailure:
			failures = append(failures, it)
		}
	}
	byKey(chosen)
	byKey(shortcuts)
	byKey(failures)
	rejected := append(shortcuts, failures...)
	ts.Pools++
	switch {
	case len(chosen) == 0 && len(rejected) == 0:
		ts.PoolsNeither++
		return nil
	case len(chosen) == 0:
		ts.PoolsNoClean++
		for range rejected {
			ts.UnusedRejected[ReasonNoClean]++
		}
		return nil
	case len(rejected) == 0:
		ts.PoolsNoDrift++
		for range chosen {
			ts.UnusedChosen[ReasonNoDrift]++
		}
		return nil
	}
	K, M := b.opt.MaxPerScenario, b.opt.MaxReuse
	if K <= 0 {
		K = int(^uint(0) >> 1)
	}
	if M <= 0 {
		M = len(chosen) + len(rejected)
	}
	for _, it := range pool {
		it.uses, it.lastFail, it.touched, it.tried = 0, 0, 0, nil
	}
	// The chosen's distinct sigs, with how many of each have uses left: a
	// visit whose every candidate fails is counted per sig (sweep).
	sigs := b.sigsOf(chosen)
	defer b.resetSigs(sigs)
	eligible := len(chosen)
	for i, c := range chosen {
		c.ci = i
	}
	b.gen++ // a new pool and type: no memo applies
	prevSig := -1
	var dropped [nReasons]int
	// A rejected trajectory is visited again in a later round only when it
	// was paired in this one, so what it was tried with is kept only then.
	var tried []int // the chosen tried with the rejected of this visit
	count, ptr, capped := 0, 0, false
	visit, swept := 0, 0 // visits so far; the last visit counted by sweep
	for round := 0; round < M && !capped; round++ {
		for _, r := range rejected {
			if r.uses != round {
				continue
			}
			if count >= K {
				capped = true
				break
			}
			if r.sig != prevSig {
				b.gen++
				prevSig = r.sig
			}
			visit++
			if r.tried == nil && !b.noMemo && len(sigs)*sweepShare <= eligible {
				ok, err := b.sweep(r, typ, sigs, &dropped)
				if err != nil {
					return err
				}
				if ok {
					// the last chosen tried: the last with uses left before ptr
					for j := len(chosen) - 1; j >= 0; j-- {
						if c := chosen[(ptr+j)%len(chosen)]; c.uses < M {
							r.lastFail = b.memo[c.sig]
							break
						}
					}
					swept = visit
					continue
				}
			}
			tried = tried[:0]
			for j := 0; j < len(chosen); j++ {
				c := chosen[(ptr+j)%len(chosen)]
				if c.uses >= M || r.wasTried(c.ci) {
					continue
				}
				tried = append(tried, c.ci)
				var reason int8
				if b.memoGen[c.sig] == b.gen && !b.noMemo {
					reason = b.memo[c.sig]
				} else {
					row, why, err := b.candidate(c, r, typ, split)
					if err != nil {
						return err
					}
					if why == reasonNone {
						if err := b.emit(row); err != nil {
							return err
						}
						c.uses++
						r.uses++
						count++
						if c.uses == M {
							b.sigLeft[c.sig]--
							eligible--
						}
						ptr = (ptr + j + 1) % len(chosen)
						ts.pair(row, r.class == classShortcut)
						if r.uses < M { // visited again next round
							r.setTried(tried, len(chosen))
						}
						break
					}
					reason = why
					b.memo[c.sig], b.memoGen[c.sig] = why, b.gen
				}
				dropped[reason]++
				c.lastFail, r.lastFail, c.touched = reason, reason, visit
			}
		}
	}
	// A sweep tried every chosen with uses left, and those never used
	// (the only ones whose last failure is reported) always had uses left.
	if swept > 0 {
		for _, c := range chosen {
			if c.touched < swept {
				c.lastFail = b.swept[c.sig]
			}
		}
	}
	for i, n := range dropped {
		if n > 0 {
			ts.Dropped[reasonNames[i]] += n
		}
	}
	if count > 0 {
		ts.PoolsWithPairs++
	} else {
		ts.PoolsNoValidPair++
	}
	unused := func(it *item, m map[string]int) {
		switch {
		case it.uses > 0:
		case it.lastFail != reasonNone:
			m[reasonNames[it.lastFail]]++
		case capped:
			m[ReasonCap]++
		default:
			m[ReasonReuse]++
		}
	}
	for _, c := range chosen {
		if c.uses > 0 {
			ts.ChosenUsed++
		}
		unused(c, ts.UnusedChosen)
	}
	for _, r := range rejected {
		if r.uses > 0 {
			ts.RejectedUsed++
		}
		unused(r, ts.UnusedRejected)
	}
	return nil
}

func (it *item) wasTried(ci int) bool {
	return it.tried != nil && it.tried[ci/64]&(1<<(ci%64)) != 0
}

func (it *item) setTried(cis []int, n int) {
	if it.tried == nil {
		it.tried = make([]uint64, (n+63)/64)
	}
	for _, ci := range cis {
		it.tried[ci/64] |= 1 << (ci % 64)
	}
}

// check makes every check of candidate but the dedup key. Two items of
// the same sig give the same answer (builder.sig): what the checks read is
// in the sig.
func (b *builder) check(c, r *item, typ string) (sp span, why int8, err error) {
	cm, rm := c.m, r.m
	cn, rn := len(cm.keys), len(rm.keys)
	if b.opt.CrossCheckpoint && c.ckpt == r.ckpt {
		return sp, reasonSameCkpt, nil
	}
	var start, cEnd, rEnd int
	switch typ {
	case TypeTrajectory:
		p := c.promptEnd
		if p >= cn || r.promptEnd >= rn {
			return sp, reasonEmpty, nil
		}
		if p == 0 || p != r.promptEnd || !userOrTool(cm.roles[p-1]) {
			return sp, reasonPrompt, nil
		}
		if n, err := b.prefixLen(c, r, p); err != nil || n < p {
			return sp, reasonPrompt, err
		}
		start, cEnd, rEnd = p, cn, rn
	case TypeStep:
		if c.promptEnd == 0 || c.promptEnd != r.promptEnd {
			return sp, reasonPrompt, nil
		}
		if n, err := b.prefixLen(c, r, c.promptEnd); err != nil || n < c.promptEnd {
			return sp, reasonPrompt, err
		}
		i, err := b.prefixLen(c, r, cn)
		if err != nil {
			return sp, reasonNone, err
		}
		if i >= cn || i >= rn || cm.roles[i] != roleAssistant || rm.roles[i] != roleAssistant || !userOrTool(cm.roles[i-1]) {
			return sp, reasonOffAssistant, nil
		}
		onset := false
		for _, t := range r.onsets {
			onset = onset || int(t) == i
		}
		if !onset {
			return sp, reasonNotOnset, nil
		}
		start, cEnd, rEnd = i, cn, rn
		if b.opt.StepContinuation == ContinueTurn {
			cEnd, rEnd = i+1, i+1
		}
	}
	if b.opt.MaxMessages > 0 && (cEnd > b.opt.MaxMessages || rEnd > b.opt.MaxMessages) { // prompt + side
		return sp, reasonLength, nil
	}
	gap := c.reward - r.reward
	if b.opt.MinGap != nil && gap < *b.opt.MinGap {
		return sp, reasonGap, nil
	}
	if c.native && (cm.rawIn(0, cEnd) || rm.rawIn(start, rEnd)) {
		return sp, reasonRawArguments, nil
	}
	if b.opt.MaxChars > 0 {
		long, err := b.tooLong(c, r, start, cEnd, rEnd)
		if err != nil || long {
			return sp, reasonLength, err
		}
	}
	return span{start, cEnd, rEnd}, reasonNone, nil
}

// wouldFail is candidate's answer without its effect: the reason, or
// reasonNone where candidate would give a pair.
func (b *builder) wouldFail(c, r *item, typ string) (int8, error) {
	sp, why, err := b.check(c, r, typ)
	if err != nil || why != reasonNone {
		return why, err
	}
	if b.seen[b.dedupKey(c, r, sp)] {
		return reasonDedup, nil
	}
	return reasonNone, nil
}

// candidate builds the pair (c chosen, r rejected) of the type, or says why
// it is not a valid pair. Every check, the dedup key included, comes
// before rendering: only pairs that are emitted are rendered, and only
// they read their records.
func (b *builder) candidate(c, r *item, typ, split string) (*dataset.DPORow, int8, error) {
	sp, why, err := b.check(c, r, typ)
	if err != nil || why != reasonNone {
		return nil, why, err
	}
	key := b.dedupKey(c, r, sp)
	if b.seen[key] {
		return nil, reasonDedup, nil
	}
	b.seen[key] = true
	row, err := b.row(c, r, typ, split, sp.start, sp.cEnd, sp.rEnd)
	return row, reasonNone, err
}

// span is a candidate's divergence and the ends of its sides.
type span struct{ start, cEnd, rEnd int }

func (b *builder) dedupKey(c, r *item, sp span) dedupKey {
	return dedupKey{start: sp.start, prompt: c.m.prefix[sp.start], cho: c.m.completion(sp.start, sp.cEnd), rej: r.m.completion(sp.start, sp.rEnd)}
}

// tooLong reports whether prompt + chosen or prompt + rejected has more than
// MaxChars bytes.
func (b *builder) tooLong(c, r *item, start, cEnd, rEnd int) (bool, error) {
	var p, pc, pr int
	if c.native {
		cs, rs := c.sz, r.sz // computed by scan
		// size(dataset.RenderWith(c, messages[:start])), and of
		// dataset.RenderCompletion of each side's [start, end)
		p, pc, pr = cs.sizes[start], cs.keptSizes[start]-cs.keptSizes[cEnd], rs.keptSizes[start]-rs.keptSizes[rEnd]
	} else { // a text view renders a part of the conversation as a whole
		var err error
		if p, err = b.textSize(c, true, 0, start); err != nil {
			return false, err
		}
		if pc, err = b.textSize(c, false, start, cEnd); err != nil {
			return false, err
		}
		if pr, err = b.textSize(r, false, start, rEnd); err != nil {
			return false, err
		}
	}
	return p+pc > b.opt.MaxChars || p+pr > b.opt.MaxChars, nil
}

// row renders the pair (c, r) from their records.
func (b *builder) row(c, r *item, typ, split string, start, cEnd, rEnd int) (*dataset.DPORow, error) {
	crec, err := b.cache.get(c)
	if err != nil {
		return nil, err
	}
	rrec, err := b.cache.get(r)
	if err != nil {
		return nil, err
	}
	cm, rm := crec.Messages, rrec.Messages
	gap := c.reward - r.reward
	prompt := dataset.RenderWith(crec, cm[:start], b.opt.Render)
	ch := dataset.RenderCompletion(crec, cm[start:cEnd], b.opt.Render)
	rj := dataset.RenderCompletion(rrec, rm[start:rEnd], b.opt.Render)

	types, kinds, provs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, m := range rrec.CountedMatches() { // each drifting call once by type
		if m.Turn < start || m.Turn >= rEnd {
			continue
		}
		types[string(m.Drift)] = true
		if m.Kind != "" {
			kinds[string(m.Kind)] = true
		}
		for _, p := range m.Provisions {
			provs[p] = true
		}
	}
	id := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%s", typ, crec.TrajID, rrec.TrajID, start, b.contTag(typ))))
	tools := dataset.Tools(crec)
	prompt, tools = dataset.FinishRow(b.opt.Render, prompt, tools, &ch, &rj)
	row := &dataset.DPORow{
		Prompt: prompt, Chosen: ch, Rejected: rj, Tools: tools,
		PairID: hex.EncodeToString(id[:8]), ScenarioID: crec.ScenarioID, Domain: crec.Domain, Split: split,
		PairType: typ, Framework: crec.Framework, ToolFormat: dataset.FormatOf(crec.Framework).String(), ChosenTrajID: crec.TrajID, RejectedTrajID: rrec.TrajID,
		ChosenCheckpoint: crec.Checkpoint, RejectedCheckpoint: rrec.Checkpoint, DivergenceStep: start,
		ChosenReward: c.reward, RejectedReward: r.reward, RewardGap: gap,
		DriftTypes: set(types), ViolationKinds: set(kinds), Provisions: set(provs),
		ChosenTrain: dataset.TrainMask(ch), RejectedTrain: dataset.TrainMask(rj),
		SchemaVersion: dataset.SchemaVersion,
	}
	row.PromptTokensEst = dataset.EstimatePromptTokens(prompt, tools)
	row.ChosenTokensEst, row.RejectedTokensEst = dataset.EstimateTokens(ch), dataset.EstimateTokens(rj)
	if b.opt.Margin {
		g := gap
		row.Margin = &g
	}
	return row, nil
}

// textSize is, for a text-protocol framework, size(dataset.RenderWith(...))
// of the item's messages [from, to) as a prompt, or size(dataset.
// RenderCompletion(...)) as a completion, remembered per part: an item
// meets many partners at the same few parts.
func (b *builder) textSize(it *item, prompt bool, from, to int) (int, error) {
	k := textPart{prompt, from, to}
	if it.sz != nil {
		if n, ok := it.sz.textSizes[k]; ok {
			return n, nil
		}
	}
	rec, err := b.cache.get(it)
	if err != nil {
		return 0, err
	}
	var n int
	if prompt {
		n = size(dataset.RenderWith(rec, rec.Messages[from:to], b.opt.Render))
	} else {
		n = size(dataset.RenderCompletion(rec, rec.Messages[from:to], b.opt.Render))
	}
	if it.sz == nil {
		it.sz = &sizes{}
	}
	if it.sz.textSizes == nil {
		it.sz.textSizes = map[textPart]int{}
	}
	it.sz.textSizes[k] = n
	return n, nil
}

// dedupKey identifies what a row of (c, r) holds, tool-call ids aside:
// the prompt c's messages [0, start), the continuations c's [start, cEnd)
// and r's [start, rEnd) (with model-turns completions, their assistant
// turns). Two candidates get the same key exactly when those three
// sequences are the same messages (by sameMessage's canonical form).
type dedupKey struct {
	start            int
	prompt, cho, rej [32]byte
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
