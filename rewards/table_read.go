package rewards

// How Table reads: the next scenario's first pass ahead of the one being
// written, its records in batches on every core.

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// scenarioAhead runs the first pass of the scenarios of an index in order,
// one ahead of the one whose rows are being emitted: as when Table held
// every scenario, memory holds two scenarios within holdBytes at most (a
// larger one's rows are in a file), and the next scenario's records are
// decoded and rendered on every core while one's rows are written on one.
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
		s.t.spill.close()
	}
}

// inBatches reads the records of ranks ks in that order (decoded by
// decode on every core, dataset.Index.EachAtWith) and calls fn with them
// batchPerCore per core at a time, so that fn can work on a batch on every
// core. The records are overwritten after fn.
func (t *scenarioTable) inBatches(ks []int, decode func([]byte, *trajectory.Record) error, fn func(recs []trajectory.Record, at []int) error) error {
	size := min(len(ks), batchPerCore*runtime.GOMAXPROCS(0))
	recs := make([]trajectory.Record, 0, size)
	at := make([]int, 0, size)
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		if holdHook != nil {
			holdHook(len(recs))
		}
		err := fn(recs, at)
		clear(recs) // what fn kept of a record is its own
		recs, at = recs[:0], at[:0]
		return err
	}
	err := t.ix.EachAtWith(t.sid, ks, decode, func(k int, r *trajectory.Record) error {
		// a shallow copy of the record's header: its contents are never reused
		// by the reader (as store.Index.LoadGroup relies on)
		recs, at = append(recs, *r), append(at, k)
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
	return flush()
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
