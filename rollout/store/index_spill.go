package store

// An index of more records than spillEntries keeps its entries in a
// temporary file rather than in memory: while opening, the entries are
// written in sorted runs of spillEntries (by traj_id, for dropping copies
// of an episode); dedup merges the runs into one file and puts it back in
// reading order, Sort sorts that file the same way (runs, then a merge:
// the order is Sort's, with or without spilling), and the
// positions of the index are then read from the file, a block at a time,
// through a small cache. Memory is then spillEntries entries while opening
// and sorting (twice that for a moment while the buffer grows), and the
// cache afterwards, whatever the number of records (BenchmarkIndexSpilled);
// the strings interned (run, checkpoint, framework and scenario names,
// and traj_ids not of the compact form) stay in memory.

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// spillEntries is how many entries an index holds in memory before it
// writes them to a temporary file (a variable for tests): 512 Ki entries,
// 20 MiB. Held, a million trajectories' index took `rewards` to 244 MiB of
// RSS; spilled, 228 MiB, at no time measurable within the machine's noise
// (docs/benchmarks.md).
var spillEntries = 1 << 19

// entrySize is an entry's size in the index's files.
const entrySize = 40

func putEntry(b []byte, e *entry) {
	binary.LittleEndian.PutUint64(b[0:], e.loc)
	copy(b[8:16], e.id[:])
	binary.LittleEndian.PutUint32(b[16:], uint32(e.n))
	binary.LittleEndian.PutUint32(b[20:], uint32(e.line))
	binary.LittleEndian.PutUint64(b[24:], uint64(e.seed))
	binary.LittleEndian.PutUint32(b[32:], uint32(e.ident))
	binary.LittleEndian.PutUint32(b[36:], uint32(e.rollout))
}

func getEntry(b []byte) entry {
	var e entry
	e.loc = binary.LittleEndian.Uint64(b[0:])
	copy(e.id[:], b[8:16])
	e.n = int32(binary.LittleEndian.Uint32(b[16:]))
	e.line = int32(binary.LittleEndian.Uint32(b[20:]))
	e.seed = int64(binary.LittleEndian.Uint64(b[24:]))
	e.ident = int32(binary.LittleEndian.Uint32(b[32:]))
	e.rollout = int32(binary.LittleEndian.Uint32(b[36:]))
	return e
}

// spillError words a failure of the index's scratch files so that the
// user can act on it: where they are, and how large they grow.
func spillError(err error) error {
	return fmt.Errorf("store: the record index's scratch file in %s (an index of more than %d records is kept there, 40 bytes a record; set TMPDIR to a folder with room): %w",
		os.TempDir(), spillEntries, err)
}

// tempFile creates an unnamed temporary file (in $TMPDIR): removed at
// once, so that nothing is left behind however the process ends.
func tempFile() (*os.File, error) {
	f, err := tempgate.Unnamed("antidrift-index-*")
	if err != nil {
		return nil, spillError(err)
	}
	return f, nil
}

// entryRuns are sorted runs of entries written one after another to a
// temporary file.
type entryRuns struct {
	f      *os.File
	w      *bufio.Writer
	size   int64
	bounds []int64 // run i is [bounds[i], bounds[i+1])
}

// write sorts es with cmp and writes them as a run.
func (r *entryRuns) write(es []entry, cmp func(a, b *entry) int) error {
	if r.f == nil {
		f, err := tempFile()
		if err != nil {
			return err
		}
		r.f, r.w, r.bounds = f, bufio.NewWriterSize(f, 1<<20), []int64{0}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp(&a, &b) })
	var buf [entrySize]byte
	for i := range es {
		putEntry(buf[:], &es[i])
		if _, err := r.w.Write(buf[:]); err != nil {
			return spillError(err)
		}
	}
	r.size += int64(len(es)) * entrySize
	r.bounds = append(r.bounds, r.size)
	return nil
}

// merge calls fn with every entry of the runs in cmp's order (ties in run
// order), then closes the runs' file.
func (r *entryRuns) merge(cmp func(a, b *entry) int, fn func(e *entry) error) error {
	defer r.f.Close()
	if err := r.w.Flush(); err != nil {
		return spillError(err)
	}
	h := &runHeap{cmp: cmp}
	for i := 0; i+1 < len(r.bounds); i++ {
		c := &runCursor{run: i, r: bufio.NewReaderSize(io.NewSectionReader(r.f, r.bounds[i], r.bounds[i+1]-r.bounds[i]), 64<<10)}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			h.cs = append(h.cs, c)
		}
	}
	heap.Init(h)
	for len(h.cs) > 0 {
		c := h.cs[0]
		if err := fn(&c.e); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return nil
}

type runCursor struct {
	run int
	r   *bufio.Reader
	e   entry
	buf [entrySize]byte
}

func (c *runCursor) next() (bool, error) {
	if _, err := io.ReadFull(c.r, c.buf[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, spillError(err)
	}
	c.e = getEntry(c.buf[:])
	return true, nil
}

type runHeap struct {
	cs  []*runCursor
	cmp func(a, b *entry) int
}

func (h *runHeap) Len() int { return len(h.cs) }
func (h *runHeap) Less(i, j int) bool {
	if c := h.cmp(&h.cs[i].e, &h.cs[j].e); c != 0 {
		return c < 0
	}
	return h.cs[i].run < h.cs[j].run
}
func (h *runHeap) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *runHeap) Push(x any)    { h.cs = append(h.cs, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// entryFile is the entries of a spilled index, in index order, read by
// position through a cache of blocks. It is safe for concurrent use.
type entryFile struct {
	f *os.File
	n int

	mu     sync.Mutex
	blocks map[int][]entry
	fifo   []int // cached blocks, oldest first
}

const (
	fileBlock  = 128 // entries read at once: 5 KiB
	fileBlocks = 256 // blocks cached: 1.25 MiB
)

// entryWriter writes an entryFile.
type entryWriter struct {
	f   *os.File
	w   *bufio.Writer
	n   int
	buf [entrySize]byte
}

func newEntryWriter() (*entryWriter, error) {
	f, err := tempFile()
	if err != nil {
		return nil, err
	}
	return &entryWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (w *entryWriter) add(e *entry) error {
	putEntry(w.buf[:], e)
	if _, err := w.w.Write(w.buf[:]); err != nil {
		return spillError(err)
	}
	w.n++
	return nil
}

func (w *entryWriter) finish() (*entryFile, error) {
	if err := w.w.Flush(); err != nil {
		w.f.Close()
		return nil, spillError(err)
	}
	return &entryFile{f: w.f, n: w.n, blocks: map[int][]entry{}}, nil
}

// at is the entry at position i. The file is the index's own, written
// whole before it is read: failing to read it back is a broken machine,
// not bad input, and panics.
func (ef *entryFile) at(i int) entry {
	b := i / fileBlock
	ef.mu.Lock()
	defer ef.mu.Unlock()
	es, ok := ef.blocks[b]
	if !ok {
		from := b * fileBlock
		n := min(fileBlock, ef.n-from)
		raw := make([]byte, n*entrySize)
		if _, err := ef.f.ReadAt(raw, int64(from)*entrySize); err != nil {
			panic(fmt.Sprintf("store: reading the index's spill file back: %v", err))
		}
		es = make([]entry, n)
		for k := range es {
			es[k] = getEntry(raw[k*entrySize:])
		}
		if len(ef.fifo) >= fileBlocks {
			delete(ef.blocks, ef.fifo[0])
			ef.fifo = ef.fifo[1:]
		}
		ef.blocks[b] = es
		ef.fifo = append(ef.fifo, b)
	}
	return es[i-b*fileBlock]
}

// each calls fn with the entries in order, read sequentially.
func (ef *entryFile) each(fn func(i int, e *entry) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(ef.f, 0, int64(ef.n)*entrySize), 1<<20)
	var buf [entrySize]byte
	for i := range ef.n {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return spillError(err)
		}
		e := getEntry(buf[:])
		if err := fn(i, &e); err != nil {
			return err
		}
	}
	return nil
}

// add appends a scanned entry to the index, writing the entries held to a
// sorted run once they are spillEntries.
func (ix *Index) add(e entry) error {
	ix.entries = append(ix.entries, e)
	if len(ix.entries) < spillEntries {
		return nil
	}
	return ix.spill()
}

// spill writes the entries held as a run sorted by traj_id, then reading
// order.
func (ix *Index) spill() error {
	if ix.runs == nil {
		ix.runs = &entryRuns{}
	}
	if err := ix.runs.write(ix.entries, ix.compareRead); err != nil {
		return err
	}
	ix.entries = ix.entries[:0]
	return nil
}

// compareRead orders entries by traj_id, then in reading order (files in
// the order read, then offset).
func (ix *Index) compareRead(a, b *entry) int {
	if c := ix.compareID(&a.slot, &b.slot); c != 0 {
		return c
	}
	return cmp.Compare(a.loc&^idInterned, b.loc&^idInterned)
}

// discard closes the spill files of an index that failed to open.
func (ix *Index) discard() {
	if ix.runs != nil && ix.runs.f != nil {
		ix.runs.f.Close()
	}
	if ix.disk != nil {
		ix.disk.f.Close()
	}
	ix.runs, ix.disk = nil, nil
}

// dedupSpilled is dedup for a spilled index: the runs are merged in
// traj_id order, the first copy of an episode kept, and the kept entries
// put back in reading order, in a file.
func (ix *Index) dedupSpilled() error {
	if len(ix.entries) > 0 {
		if err := ix.spill(); err != nil {
			return err
		}
	}
	ix.entries = nil
	w, err := newEntryWriter()
	if err != nil {
		return err
	}
	ix.Records = make([]int, len(ix.Dirs))
	var prev entry
	first := true
	err = ix.runs.merge(ix.compareRead, func(e *entry) error {
		if !first && ix.compareID(&prev.slot, &e.slot) == 0 {
			a, b := &prev.slot, &e.slot
			if da := ix.fileDir[a.file()]; da == ix.fileDir[b.file()] {
				return duplicateError(ix.files[b.file()], int(b.line), ix.trajID(b), ix.files[a.file()], int(a.line), ix.Dirs[da])
			}
			ix.Duplicates++
			prev = *e
			return nil
		}
		first, prev = false, *e
		ix.Records[ix.fileDir[e.file()]]++
		return w.add(e)
	})
	ix.runs = nil
	if err != nil {
		w.f.Close()
		return err
	}
	if ix.disk, err = w.finish(); err != nil {
		return err
	}
	// in reading order again, as an index that is not spilled is until sorted
	return ix.sortSpilled(func(a, b *entry) int { return cmp.Compare(a.loc&^idInterned, b.loc&^idInterned) })
}

// sortSpilled is Sort for a spilled index: its file is read in runs of
// spillEntries, each sorted by cmp, and the runs merged into a new file.
func (ix *Index) sortSpilled(cmp func(a, b *entry) int) error {
	runs := &entryRuns{}
	if ix.disk.n == 0 {
		return nil
	}
	buf := make([]entry, 0, min(spillEntries, ix.disk.n))
	err := ix.disk.each(func(_ int, e *entry) error {
		buf = append(buf, *e)
		if len(buf) == spillEntries {
			if err := runs.write(buf, cmp); err != nil {
				return err
			}
			buf = buf[:0]
		}
		return nil
	})
	if err == nil && len(buf) > 0 {
		err = runs.write(buf, cmp)
	}
	buf = nil
	if err != nil {
		if runs.f != nil {
			runs.f.Close()
		}
		return err
	}
	w, err := newEntryWriter()
	if err != nil {
		runs.f.Close()
		return err
	}
	if err := runs.merge(cmp, w.add); err != nil {
		w.f.Close()
		return err
	}
	disk, err := w.finish()
	if err != nil {
		return err
	}
	ix.disk.f.Close()
	ix.disk = disk
	return nil
}
