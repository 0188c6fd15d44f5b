package rewards

// How Table reads: the next scenario's first pass ahead of the one being
// written, and a streamed group's records in batches on every core.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// scenarioAhead runs the first pass of the scenarios of an index in order,
// one ahead of the one whose rows are being emitted: as when Table held
// every scenario, memory holds two scenarios within holdBytes at most. A
// larger scenario's second pass reads the index while the next scenario's
// first pass reads it too (store.Index reads concurrently): the first
// pass decodes on every core while the second's rows are written on one.
type scenarioAhead struct {
	surveyed chan surveyed
	done     chan struct{}
}

type surveyed struct {
	t   *scenarioTable
	err error
}

func surveyAhead(ix *dataset.Index, table func(sid string) *scenarioTable) *scenarioAhead {
	a := &scenarioAhead{surveyed: make(chan surveyed), done: make(chan struct{})}
	go func() {
		defer close(a.surveyed)
		for _, sid := range ix.Scenarios() {
			t := table(sid)
			err := t.survey()
			select {
			case a.surveyed <- surveyed{t, err}:
			case <-a.done:
				t.close()
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return a
}

// next returns the next scenario, its first pass done.
func (a *scenarioAhead) next() (*scenarioTable, error) {
	s, ok := <-a.surveyed
	if !ok {
		return nil, errors.New("rewards: no more scenarios") // unreachable: one per scenario id
	}
	return s.t, s.err
}

// stop ends the first passes and waits for them, so that the index's
// files are no longer read when Table returns.
func (a *scenarioAhead) stop() {
	close(a.done)
	for s := range a.surveyed {
		s.t.close()
	}
}

// render is the second pass over the trajectories of seq: scored and
// rendered on every core a batch at a time, fn called with each one's
// rows (group, split and advantage left to fill) in the order of seq. The
// next batch is read and rendered while fn writes this one's rows; the
// index is no longer read when render returns.
func (t *scenarioTable) render(seq memberSeq, fn func(k int, rows []*dataset.RewardRow) error) error {
	out := make(chan renderedBatch, 1)
	done := make(chan struct{})
	go func() {
		defer close(out)
		next := seq.iter()
		sent := false // the error that ended the reading is sent, or fn's
		err := t.inBatches(seq.n, func() (int, int32, bool) {
			m := next()
			if m == nil {
				return 0, 0, false
			}
			return int(m.rank), m.rows, true
		}, store.DecodeRecord, func(recs []trajectory.Record, at []int, rows []int32) error {
			b := t.renderBatch(recs, at, rows)
			select {
			case out <- b:
			case <-done:
				sent = true
				return errors.New("rewards: rendering stopped")
			}
			sent = b.err != nil
			return b.err
		})
		if err != nil && !sent {
			select {
			case out <- renderedBatch{err: err}:
			case <-done:
			}
		}
	}()
	var err error
	for b := range out {
		for i, k := range b.at {
			if err = fn(k, b.rows[i]); err != nil {
				break
			}
		}
		if err == nil {
			err = b.err
		}
		if err != nil {
			break
		}
	}
	close(done)
	for range out {
	}
	return err
}

// renderedBatch holds the rows of the records of ranks at, up to the
// first that failed (err).
type renderedBatch struct {
	at   []int
	rows [][]*dataset.RewardRow
	err  error
}

// renderBatch renders the records of ranks at, which the first pass found
// to give want rows each.
func (t *scenarioTable) renderBatch(recs []trajectory.Record, at []int, want []int32) renderedBatch {
	b := renderedBatch{at: slices.Clone(at), rows: make([][]*dataset.RewardRow, len(recs))}
	errs := make([]error, len(recs))
	parallelFor(len(recs), func(i int) { b.rows[i], errs[i] = t.rowsOf(&recs[i]) })
	for i := range at {
		if errs[i] == nil && len(b.rows[i]) != int(want[i]) {
			errs[i] = errors.New("changed while being read (a run still writing?)")
		}
		if errs[i] != nil {
			b.at, b.rows = b.at[:i], b.rows[:i]
			b.err = fmt.Errorf("%s: %w", t.ix.Where(recs[i].TrajID), errs[i])
			break
		}
	}
	return b
}

// rankChunk is how many ranks inBatches gives the index at once.
const rankChunk = 4096

// inBatches reads the records of the count ranks next gives (with the
// rows each is expected to give, passed on to fn), in that order (decoded
// by decode on every core, dataset.Index.EachAtWith, rankChunk ranks at a
// time) and calls fn with them batchPerCore per core at a time, so that
// fn can work on a batch on every core. The records are overwritten after
// fn.
func (t *scenarioTable) inBatches(count int, next func() (rank int, rows int32, ok bool), decode func([]byte, *trajectory.Record) error, fn func(recs []trajectory.Record, at []int, rows []int32) error) error {
	size := min(count, batchPerCore*runtime.GOMAXPROCS(0))
	recs := make([]trajectory.Record, 0, size)
	at := make([]int, 0, size)
	rows := make([]int32, 0, size)
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		if holdHook != nil {
			holdHook(len(recs))
		}
		err := fn(recs, at, rows)
		clear(recs) // what fn kept of a record is its own
		recs, at, rows = recs[:0], at[:0], rows[:0]
		return err
	}
	ks := make([]int, 0, min(count, rankChunk))
	want := make([]int32, 0, cap(ks))
	for {
		ks, want = ks[:0], want[:0]
		for len(ks) < rankChunk {
			k, n, ok := next()
			if !ok {
				break
			}
			ks, want = append(ks, k), append(want, n)
		}
		if len(ks) == 0 {
			return flush()
		}
		j := 0
		err := t.ix.EachAtWith(t.sid, ks, decode, func(k int, r *trajectory.Record) error {
			// a shallow copy of the record's header: its contents are never reused
			// by the reader (as store.Index.LoadGroup relies on)
			recs, at, rows = append(recs, *r), append(at, k), append(rows, want[j])
			j++
			if len(recs) == size {
				return flush()
			}
			return nil
		})
		if err != nil {
			// the records before the one that failed, as reading one at a
			// time would have given them
			if ferr := flush(); ferr != nil {
				return ferr
			}
			return err
		}
	}
}

// parallelFor calls fn(0..n-1) on GOMAXPROCS goroutines.
func parallelFor(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
