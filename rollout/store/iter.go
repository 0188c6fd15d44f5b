package store

import (
	"bufio"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Iterator streams the records of one or more run folders, in file order.
//
// Lines are read in batches (about batchBytes of JSONL, or batchLines
// lines) by one goroutine, decoded by GOMAXPROCS workers, and handed out
// in reading order: a batch is released only after every batch before it,
// and a line's error only after every record before it, so that what
// Next, At, Pos and Err report is the same for any number of cores (and
// the same as reading one line at a time). At most 2 × GOMAXPROCS + 2
// batches are held at once, so memory does not grow with the files.
// Close stops the goroutines; an iterator must be closed or read to its
// end.
type Iterator struct {
	files []string
	dirOf []string // the run folder of each of files
	err   error

	lean    bool // SkipText
	scan    bool // Scan
	then    func(line []byte, r *trajectory.Record) error
	started bool
	order   chan *batch // batches in reading order
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup

	b        *batch // the batch being handed out
	i        int    // next line of b
	dir      string
	seen     map[idHash]idPos // traj_ids of the current folder, hashed
	dirFiles []string         // the current folder's files, for idPos
	name     string
	line     int
	rec      trajectory.Record
}

type pos struct {
	file string
	line int
}

const (
	batchBytes = 256 << 10
	batchLines = 512
)

// batch is a run of lines of one file, with their decoded records.
type batch struct {
	dir   string
	name  string
	buf   []byte   // holds the lines, one after another (from linePool)
	lines [][]byte // non-blank lines, each holding its newline
	nums  []int    // their line numbers
	recs  []trajectory.Record
	errs  []error
	// tail is the error met after the lines (the file would not open or
	// read, or its last line is incomplete), reported once they are.
	tail     error
	tailLine int
	done     chan struct{} // closed when recs and errs are filled
}

// Records iterates over the trajectories of run folders, in file order,
// checking each line against the definition of a valid record (see
// DecodeRecord): blank lines are skipped; a traj_id seen twice in one
// folder is an error (ErrDuplicate).
func Records(dirs ...string) *Iterator {
	it := &Iterator{}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, manifestName)); err != nil {
			it.err = fmt.Errorf("store: %s is not a run folder (no %s)", d, manifestName)
			return it
		}
		fs, err := filepath.Glob(filepath.Join(d, trajDir, "*.jsonl"))
		if err != nil {
			it.err = err
			return it
		}
		sort.Strings(fs)
		it.files = append(it.files, fs...)
		for range fs {
			it.dirOf = append(it.dirOf, d)
		}
	}
	return it
}

// SkipText makes the iterator decode records without the text of their
// messages (DecodeRecordLean): content and reasoning are left empty, and
// the tools, for readers that need labels, steps, tool calls and matches
// only (score, pareto); the same lines are accepted and refused. Call it
// before the first Next.
func (it *Iterator) SkipText() *Iterator {
	it.lean = true
	return it
}

// Scan makes the iterator decode only what scoring reads
// (DecodeRecordScan): identity, status, labels, drift matches, timings and
// the stored exposure, with no messages, tools or steps. A line without a
// stored exposure this build reads is decoded as SkipText decodes it
// instead, so that a reader can replay it. The same lines are accepted and
// refused either way. then, when not nil, runs on the decoding goroutines
// after each record is decoded, with its line (a replay runs there, in
// parallel); its error is the line's. Call it before the first Next.
func (it *Iterator) Scan(then func(line []byte, r *trajectory.Record) error) *Iterator {
	it.scan, it.then = true, then
	return it
}

// start launches the reader and the decoders.
func (it *Iterator) start() {
	it.started = true
	workers := runtime.GOMAXPROCS(0)
	it.order = make(chan *batch, workers+1)
	it.stop = make(chan struct{})
	work := make(chan *batch, workers+1)
	it.wg.Add(1 + workers)
	go func() {
		defer it.wg.Done()
		defer close(work)
		defer close(it.order)
		it.read(work)
	}()
	for range workers {
		go func() {
			defer it.wg.Done()
			for b := range work {
				b.recs = make([]trajectory.Record, len(b.lines))
				b.errs = make([]error, len(b.lines))
				decode := DecodeRecord
				switch {
				case it.scan:
					decode = decodeForScore
				case it.lean:
					decode = DecodeRecordLean
				}
				for i, l := range b.lines {
					b.errs[i] = decode(l, &b.recs[i])
					if b.errs[i] == nil && it.then != nil {
						b.errs[i] = it.then(l, &b.recs[i])
					}
				}
				close(b.done)
			}
		}()
	}
}

// read splits the files into batches and sends each to the decoders and,
// in order, to Next; it returns after a batch with a tail error, at the
// end, or when the iterator is closed.
func (it *Iterator) read(work chan<- *batch) {
	send := func(b *batch) bool {
		select {
		case it.order <- b:
		case <-it.stop:
			return false
		}
		select {
		case work <- b:
			return true
		case <-it.stop:
			return false
		}
	}
	for fi, name := range it.files {
		nb := func() *batch { return &batch{dir: it.dirOf[fi], name: name, done: make(chan struct{})} }
		f, err := os.Open(name)
		if err != nil {
			b := nb()
			b.tail = fmt.Errorf("store: %w", err)
			send(b)
			return
		}
		br := bufio.NewReaderSize(f, 1<<20)
		b, size := nb(), 0
		for line := 1; ; line++ {
			l, err := readLine(br, b)
			if len(l) == 0 && err != nil {
				if err != io.EOF {
					b.tail, b.tailLine = fmt.Errorf("store: %s:%d: %w", name, line, err), line
				}
				break
			}
			if l[len(l)-1] != '\n' {
				b.tail, b.tailLine = fmt.Errorf("store: %s:%d: incomplete last line (a run still writing, or killed: rerun it to repair)%s", name, line, repairHint(name)), line
				break
			}
			if blank(l) {
				continue
			}
			b.lines, b.nums = append(b.lines, l), append(b.nums, line)
			if size += len(l); size >= batchBytes || len(b.lines) >= batchLines {
				if !send(b) {
					f.Close()
					return
				}
				b, size = nb(), 0
			}
		}
		f.Close()
		if len(b.lines) > 0 || b.tail != nil {
			if !send(b) || b.tail != nil {
				return
			}
		}
	}
}

// Next advances to the next record.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if !it.started {
		it.start()
	}
	for {
		if it.b == nil {
			b, ok := <-it.order
			if !ok {
				return false
			}
			<-b.done
			if b.dir != it.dir || it.seen == nil {
				it.dir, it.seen, it.dirFiles = b.dir, map[idHash]idPos{}, nil
			}
			if len(it.dirFiles) == 0 || it.dirFiles[len(it.dirFiles)-1] != b.name {
				it.dirFiles = append(it.dirFiles, b.name)
			}
			it.b, it.i, it.name = b, 0, b.name
		}
		b := it.b
		if it.i == len(b.lines) {
			it.b = nil
			b.release()
			if b.tail != nil {
				if b.tailLine > 0 {
					it.line = b.tailLine
				}
				it.err = b.tail
				it.Close()
				return false
			}
			continue
		}
		i := it.i
		it.i++
		it.line = b.nums[i]
		if err := b.errs[i]; err != nil {
			it.err = fmt.Errorf("store: %s:%d: not a valid record: %w%s", it.name, it.line, err, repairHint(it.name))
			it.Close()
			return false
		}
		it.rec = b.recs[i]
		b.recs[i] = trajectory.Record{} // handed out: the batch no longer holds it
		b.lines[i] = nil
		h := hashID(it.rec.TrajID)
		if first, dup := it.seen[h]; dup {
			it.err = duplicateError(it.name, it.line, it.rec.TrajID, it.dirFiles[first.file], int(first.line), it.dir)
			it.Close()
			return false
		}
		it.seen[h] = idPos{int32(len(it.dirFiles) - 1), int32(it.line)}
		return true
	}
}

// idHash is a traj_id as the duplicate check keeps it: 128 bits of two
// seeded hashes, so that a run of a million records costs tens of MiB
// rather than every id's text (two ids colliding is a chance of about
// 10⁻²⁶ at that size).
type idHash [2]uint64

// idPos is where an id was first read: an index into the folder's files,
// and a line.
type idPos struct{ file, line int32 }

var idSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashID(id string) idHash {
	return idHash{maphash.String(idSeeds[0], id), maphash.String(idSeeds[1], id)}
}

// At returns the current record; it is overwritten by the next call to Next.
func (it *Iterator) At() *trajectory.Record { return &it.rec }

// Pos names the file and line the current record was read from, for
// messages such as "FILE:LINE: ...".
func (it *Iterator) Pos() (file string, line int) { return it.name, it.line }

// Err returns the first error met.
func (it *Iterator) Err() error { return it.err }

// Close stops reading and releases the open file, if any.
func (it *Iterator) Close() {
	if !it.started {
		return
	}
	it.stopped.Do(func() {
		close(it.stop) // the reader stops at its next send, the decoders after their batch
		it.wg.Wait()
	})
}

// linePool recycles the buffers batches read their lines into: decoded
// records copy what they keep (strings and raw values alike), so a batch's
// buffer is free again once every record of it is handed out, and reading
// a run allocates a few buffers rather than every line anew.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, batchBytes+64<<10); return &b }}

// readLine reads one line, newline included, into b's buffer (a line that
// does not fit gets its own allocation). Like bufio.Reader.ReadBytes it
// returns the bytes read before an error.
func readLine(br *bufio.Reader, b *batch) ([]byte, error) {
	if b.buf == nil {
		b.buf = (*linePool.Get().(*[]byte))[:0]
	}
	frag, err := br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		if len(frag) > cap(b.buf)-len(b.buf) {
			return append([]byte(nil), frag...), err
		}
		start := len(b.buf)
		b.buf = append(b.buf, frag...)
		return b.buf[start:len(b.buf):len(b.buf)], err
	}
	l := append([]byte(nil), frag...) // longer than the reader's buffer
	for err == bufio.ErrBufferFull {
		frag, err = br.ReadSlice('\n')
		l = append(l, frag...)
	}
	return l, err
}

// release gives the batch's buffer back to linePool; its lines must no
// longer be read.
func (b *batch) release() {
	if b.buf != nil {
		buf := b.buf[:0]
		b.buf, b.lines = nil, nil
		linePool.Put(&buf)
	}
}
