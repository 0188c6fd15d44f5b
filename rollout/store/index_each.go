package store

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// eachWindow is how many records EachAt decodes ahead per core.
const eachWindow = 32

// EachAt reads the records at the given positions and calls fn with each,
// in the order given; the record passed to fn is overwritten later. It
// stops at the first error, in that order: a record that does not load,
// or fn's. Lines are read in windows of eachWindow × GOMAXPROCS records
// and decoded on GOMAXPROCS goroutines; what fn sees, and the error
// returned, are the same for any number of cores (as reading one record
// at a time).
func (ix *Index) EachAt(pos []int, fn func(i int, rec *trajectory.Record) error) error {
	return ix.eachAt(len(pos), func(k int) int { return pos[k] }, DecodeRecord, fn)
}

// EachAtWith is EachAt decoding each line with decode (DecodeRecordLean,
// DecodeRecordPrompt: what a reader needs of a record) rather than
// DecodeRecord; decode must accept and refuse what DecodeRecord does.
func (ix *Index) EachAtWith(pos []int, decode func(b []byte, r *trajectory.Record) error, fn func(i int, rec *trajectory.Record) error) error {
	return ix.eachAt(len(pos), func(k int) int { return pos[k] }, decode, fn)
}

// EachAtFunc is EachAtWith over the count positions at(0), …,
// at(count-1): walking a range, or a list of another type, needs no slice
// of its positions.
func (ix *Index) EachAtFunc(count int, at func(k int) int, decode func(b []byte, r *trajectory.Record) error, fn func(i int, rec *trajectory.Record) error) error {
	return ix.eachAt(count, at, decode, fn)
}

// eachAt is EachAtWith over the count positions at(0), …, at(count-1), so
// that walking a range needs no slice of its positions.
func (ix *Index) eachAt(count int, at func(k int) int, decode func([]byte, *trajectory.Record) error, fn func(i int, rec *trajectory.Record) error) error {
	workers := runtime.GOMAXPROCS(0)
	window := eachWindow * workers
	bufs := make([][]byte, min(window, count))
	recs := make([]trajectory.Record, len(bufs))
	errs := make([]error, len(bufs))
	ps := make([]int, len(bufs))
	for start := 0; start < count; start += window {
		ps = ps[:min(window, count-start)]
		for k := range ps {
			ps[k] = at(start + k)
		}
		// Read in order (the file handles are not shared); a read error
		// ends the window there.
		n := len(ps)
		var readErr error
		for k, i := range ps {
			b, err := ix.read(i, &bufs[k])
			if err != nil {
				n, readErr = k, err
				break
			}
			bufs[k] = b
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(workers, n) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1) - 1)
					if k >= n {
						return
					}
					recs[k] = trajectory.Record{}
					errs[k] = ix.decodeWith(ps[k], bufs[k], &recs[k], decode)
				}
			}()
		}
		wg.Wait()
		for k := range n {
			if errs[k] != nil {
				return errs[k]
			}
			if err := fn(ps[k], &recs[k]); err != nil {
				return err
			}
		}
		if readErr != nil {
			return readErr
		}
	}
	return nil
}

// Bytes is the number of bytes of the record lines at positions [From, To)
// of g, newlines included: what reading the group costs, for callers that
// decide between holding a group and streaming it.
func (ix *Index) Bytes(g Group) int64 {
	var n int64
	for i := g.From; i < g.To; i++ {
		n += int64(ix.slot(i).n)
	}
	return n
}
