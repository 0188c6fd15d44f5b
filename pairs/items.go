package pairs

import (
	"crypto/sha256"
	"fmt"
	"math"
	"strconv"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// item is what pairing keeps of a trajectory while its scenario is paired:
// no record, so that memory is about a hundred bytes a trajectory plus the
// message keys of its distinct episodes, whatever the records' size. A
// record is read again (builder.cache) only to render an emitted pair, or
// for the rare checks the keys cannot decide.
type item struct {
	k         int // rank in the scenario (dataset.Index.LoadAt), in traj_id order
	class     int
	native    bool // the framework's tools went in the request (dataset.ToolsNative)
	promptEnd int
	reward    float64
	key       [32]byte // seeded order: SHA-256 of the seed and traj_id
	ckpt, fw  string   // checkpoint and framework, interned
	m         *msgs    // message keys (clean and drifting items), shared
	onsets    []int32  // drifting items: the turns of their matches (step pairs' onset)
	sig       int      // items with the same sig fail a candidate alike (builder.sig)
	sz        *sizes   // for MaxChars: native frameworks' by scan, text views' parts on first use

	// selection state within one pool and pair type (reset by pool)
	uses     int
	lastFail int8     // the reason of the last candidate that failed, or reasonNone
	touched  int      // the visit that set lastFail (sweeps set it later, at once)
	ci       int      // index among the pool's chosen
	tried    []uint64 // rejected: the chosen (by ci) tried with it in earlier rounds
}

// scan streams a scenario's records (dataset.Index.Each) and keeps an item
// for each one pairing may use, classified and rewarded in traj_id order as
// Load's records were. Errors are those of loading the whole scenario
// first: a record that does not decode wins over a Relabel or Reward error
// earlier in the scenario.
func (b *builder) scan(ix *dataset.Index, sid string) ([]item, error) {
	b.keys.reset()
	clear(b.interned)
	clear(b.sigs)
	clear(b.strs)
	var failed error
	items := make([]item, 0, ix.Count(sid))
	err := ix.Each(sid, func(k int, r *trajectory.Record) error {
		if failed != nil || !r.Status.Scored() {
			return nil // trajectory.Status.Scored: not the policy's behaviour
		}
		if b.opt.Relabel != nil {
			keep, err := b.opt.Relabel(r)
			if err != nil {
				failed = fmt.Errorf("%s: %w", ix.Where(r.TrajID), err)
				return nil
			}
			if !keep {
				return nil
			}
		}
		it := item{k: k, promptEnd: promptEnd(r.Messages), native: dataset.FormatOf(r.Framework) == dataset.ToolsNative,
			ckpt: b.str(r.Checkpoint), fw: b.str(r.Framework)}
		switch {
		case r.Clean():
			it.class = classClean
		case r.Drift && r.Success:
			it.class = classShortcut
		case r.Drift:
			it.class = classDriftFailure
		default:
			it.class = classOther
		}
		if b.opt.Reward != nil {
			w, err := b.opt.Reward(r)
			if err != nil {
				failed = fmt.Errorf("%s: %w", ix.Where(r.TrajID), err)
				return nil
			}
			it.reward = w
		}
		// SHA-256 of "seed\x00traj_id", as fmt.Sprintf("%d\x00%s") wrote it
		b.buf = append(append(strconv.AppendInt(b.buf[:0], b.opt.Seed, 10), 0), r.TrajID...)
		it.key = sha256.Sum256(b.buf)
		if it.class != classOther { // only chosen and rejected meet candidates
			it.m = b.internMsgs(b.keys.messages(r.Messages, b.keeps))
			if it.class != classClean && len(r.Matches) > 0 {
				it.onsets = make([]int32, len(r.Matches))
				for i, m := range r.Matches {
					it.onsets[i] = int32(m.Turn)
				}
			}
			if b.opt.MaxChars > 0 && it.native {
				it.sz = b.sizesOf(r.Messages) // while the record is here
			}
			it.sig = b.sig(&it)
		}
		b.stats.trajectory(&it)
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, failed
}

// str interns a scenario's checkpoint and framework names: one copy each,
// not one per item (and none into a decoder's buffers).
func (b *builder) str(s string) string {
	if v, ok := b.strs[s]; ok {
		return v
	}
	v := string(append([]byte(nil), s...))
	b.strs[v] = v
	return v
}

// internMsgs returns the scenario's msgs with the same keys as m, or m: the
// rollouts of a scenario repeat the same episodes, tool-call ids aside.
// Keys that are not exact leave m alone (its messages compare by their
// records).
func (b *builder) internMsgs(m *msgs) *msgs {
	if !m.exact {
		return m
	}
	n := len(m.keys)
	k := make([]byte, 0, 32+4*len(m.raw)+n)
	k = append(k, m.prefix[n][:]...) // digests every message, role included, in order
	for _, r := range m.raw {
		k = strconv.AppendInt(k, int64(r), 10)
		k = append(k, ',')
	}
	for _, keep := range m.keep {
		k = strconv.AppendBool(k, keep)
	}
	if v, ok := b.interned[string(k)]; ok {
		return v
	}
	b.interned[string(k)] = m
	return m
}

// sigKey is everything candidate reads of an item but its identity: two
// items with the same sigKey give the same reason, or the same dedup key,
// with any partner. Items whose candidates read their record (keys that
// are not exact, MaxChars through a text view) get a sig of their own.
type sigKey struct {
	m      *msgs
	reward uint64
	ckpt   string
	onsets string
	sizes  string // MaxChars, native: the message sizes
	own    int
}

func (b *builder) sig(it *item) int {
	k := sigKey{m: it.m, ckpt: it.ckpt, onsets: fmt.Sprint(it.onsets), own: -1}
	k.reward = math.Float64bits(it.reward)
	if it.sz != nil {
		k.sizes = fmt.Sprint(it.sz.sizes, it.sz.keptSizes)
	}
	if !it.m.exact || (b.opt.MaxChars > 0 && !it.native) {
		k.own = it.k
	}
	if s, ok := b.sigs[k]; ok {
		return s
	}
	s := len(b.sigs)
	b.sigs[k] = s
	return s
}
