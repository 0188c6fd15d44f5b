package dataset

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Batches of MapOrdered: records per batch, and batches in flight per
// core. Memory in flight is about mapBatch × (mapAhead × GOMAXPROCS + 2)
// records and their results (a few MB for chat records), whatever the
// size of the run.
const (
	mapBatch = 32
	mapAhead = 2
)

// errStopped ends each's walk once consume has failed.
var errStopped = errors.New("dataset: stopped")

// MapOrdered turns the records that each passes into results with build,
// on GOMAXPROCS goroutines, and hands the results to consume one at a time
// in each's order, on one goroutine, while later records are still read and
// built: row building and rendering use every core, and the table written
// is the same for any number of cores. It returns the first error in
// record order — build's or consume's for a record, or each's for a record
// that did not load — as reading, building and consuming one record at a
// time would.
//
// each is a walk such as Records.Each: the records it passes are copied
// (the struct, not what it points to), so a walk may reuse a Record's
// struct but not memory the record points to (store.Index.EachAt decodes
// every record into a zeroed Record; TestMapOrderedKeepsRecords checks
// that copies stay intact). build must be safe for concurrent use.
func MapOrdered[T any](each func(fn func(rec *trajectory.Record) error) error,
	build func(rec *trajectory.Record) (T, error), consume func(T) error) error {
	type batch struct {
		recs []trajectory.Record
		out  []T
		errs []error
		done chan struct{}
	}
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *batch, workers*mapAhead)
	ordered := make(chan *batch, workers*mapAhead)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				for i := range b.recs {
					b.out[i], b.errs[i] = build(&b.recs[i])
				}
				b.recs = nil // the records may go before the batch is consumed
				close(b.done)
			}
		}()
	}
	var stopped atomic.Bool
	consumed := make(chan error, 1)
	go func() {
		var first error
		for b := range ordered {
			<-b.done
			if first != nil {
				continue // drain, so that the walk is never blocked
			}
			for i := range b.out {
				err := b.errs[i]
				if err == nil {
					err = consume(b.out[i])
				}
				if err != nil {
					first = err
					stopped.Store(true)
					break
				}
			}
		}
		consumed <- first
	}()
	cur := &batch{}
	send := func() {
		if len(cur.recs) == 0 {
			return
		}
		cur.out, cur.errs, cur.done = make([]T, len(cur.recs)), make([]error, len(cur.recs)), make(chan struct{})
		ordered <- cur // in order first: the consumer waits on done
		work <- cur
		cur = &batch{}
	}
	walkErr := each(func(rec *trajectory.Record) error {
		if stopped.Load() {
			return errStopped
		}
		if cur.recs == nil {
			cur.recs = make([]trajectory.Record, 0, mapBatch)
		}
		cur.recs = append(cur.recs, *rec)
		if len(cur.recs) == mapBatch {
			send()
		}
		return nil
	})
	send()
	close(work)
	close(ordered)
	wg.Wait()
	// consume's error is for a record each passed, so before any error
	// of each's
	if err := <-consumed; err != nil {
		return err
	}
	if errors.Is(walkErr, errStopped) {
		return nil // unreachable: stopped only after consume failed
	}
	return walkErr
}
