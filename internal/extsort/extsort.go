// Package extsort sorts fixed-size values in bounded memory: up to a
// bound they are sorted in memory; past it, in sorted runs written to an
// unnamed temporary file and merged into another, read back a buffer at
// a time. What a caller holds is then the bound's values while adding and
// a buffer per cursor while reading, whatever the number of values.
package extsort

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// Codec writes a value as Size bytes and reads it back.
type Codec[T any] struct {
	Size int
	Put  func(b []byte, v *T)
	Get  func(b []byte, v *T)
}

// Sorter collects values and sorts them by cmp, which must be a total
// order (no two values compare equal), so that the order never depends on
// where runs were cut.
type Sorter[T any] struct {
	codec Codec[T]
	cmp   func(a, b *T) int
	limit int
	what  string // what the values are, for errors

	held   []T
	runs   *os.File
	w      *bufio.Writer
	bounds []int64 // run i is bytes [bounds[i], bounds[i+1]) of runs
	n      int
}

// New returns a Sorter that holds at most limit values in memory. what
// names the values in errors ("rewards: a scenario's trajectories").
func New[T any](codec Codec[T], cmp func(a, b *T) int, limit int, what string) *Sorter[T] {
	return &Sorter[T]{codec: codec, cmp: cmp, limit: max(1, limit), what: what}
}

// Len is the number of values added.
func (s *Sorter[T]) Len() int { return s.n }

// Add adds a value.
func (s *Sorter[T]) Add(v T) error {
	s.held = append(s.held, v)
	s.n++
	if len(s.held) >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *Sorter[T]) fileError(err error) error {
	return fmt.Errorf("%s: the scratch file in %s (more than %d values are kept there, %d bytes each; set TMPDIR to a folder with room): %w",
		s.what, os.TempDir(), s.limit, s.codec.Size, err)
}

func (s *Sorter[T]) tempFile() (*os.File, error) {
	f, err := tempgate.Unnamed("antidrift-sort-*")
	if err != nil {
		return nil, s.fileError(err)
	}
	return f, nil
}

// spill writes the values held as a sorted run.
func (s *Sorter[T]) spill() error {
	if s.runs == nil {
		f, err := s.tempFile()
		if err != nil {
			return err
		}
		s.runs, s.w, s.bounds = f, bufio.NewWriterSize(f, 256<<10), []int64{0}
	}
	slices.SortFunc(s.held, func(a, b T) int { return s.cmp(&a, &b) })
	buf := make([]byte, s.codec.Size)
	for i := range s.held {
		s.codec.Put(buf, &s.held[i])
		if _, err := s.w.Write(buf); err != nil {
			return s.fileError(err)
		}
	}
	s.bounds = append(s.bounds, s.bounds[len(s.bounds)-1]+int64(len(s.held)*s.codec.Size))
	clear(s.held)
	s.held = s.held[:0]
	return nil
}

// Discard drops the values added, removing the runs' file: for a Sorter
// whose values are no longer wanted (an error ended their adding).
func (s *Sorter[T]) Discard() {
	if s.runs != nil {
		s.runs.Close()
	}
	s.held, s.runs = nil, nil
}

// Sorted returns the values in order. The Sorter is not used after.
func (s *Sorter[T]) Sorted() (*List[T], error) {
	if s.runs == nil {
		slices.SortFunc(s.held, func(a, b T) int { return s.cmp(&a, &b) })
		l := &List[T]{codec: s.codec, mem: s.held, n: len(s.held)}
		s.held = nil
		return l, nil
	}
	defer s.runs.Close()
	if len(s.held) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	s.held = nil
	if err := s.w.Flush(); err != nil {
		return nil, s.fileError(err)
	}
	out, err := s.tempFile()
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(out, 256<<10)
	h := &runHeap[T]{cmp: s.cmp}
	for i := 0; i+1 < len(s.bounds); i++ {
		c := &runCursor[T]{codec: s.codec, r: bufio.NewReaderSize(io.NewSectionReader(s.runs, s.bounds[i], s.bounds[i+1]-s.bounds[i]), 64<<10), buf: make([]byte, s.codec.Size)}
		ok, err := c.next()
		if err != nil {
			out.Close()
			return nil, s.fileError(err)
		}
		if ok {
			h.cs = append(h.cs, c)
		}
	}
	heap.Init(h)
	buf := make([]byte, s.codec.Size)
	for len(h.cs) > 0 {
		c := h.cs[0]
		s.codec.Put(buf, &c.v)
		if _, err := w.Write(buf); err != nil {
			out.Close()
			return nil, s.fileError(err)
		}
		ok, err := c.next()
		if err != nil {
			out.Close()
			return nil, s.fileError(err)
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return nil, s.fileError(err)
	}
	return &List[T]{codec: s.codec, f: out, n: s.n}, nil
}

type runCursor[T any] struct {
	codec Codec[T]
	r     *bufio.Reader
	v     T
	buf   []byte
}

func (c *runCursor[T]) next() (bool, error) {
	if _, err := io.ReadFull(c.r, c.buf); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	c.codec.Get(c.buf, &c.v)
	return true, nil
}

type runHeap[T any] struct {
	cs  []*runCursor[T]
	cmp func(a, b *T) int
}

func (h *runHeap[T]) Len() int           { return len(h.cs) }
func (h *runHeap[T]) Less(i, j int) bool { return h.cmp(&h.cs[i].v, &h.cs[j].v) < 0 }
func (h *runHeap[T]) Swap(i, j int)      { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *runHeap[T]) Push(x any)         { h.cs = append(h.cs, x.(*runCursor[T])) }
func (h *runHeap[T]) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// List is sorted values, in memory or in a temporary file. It is safe
// for concurrent reading.
type List[T any] struct {
	codec Codec[T]
	mem   []T
	f     *os.File
	n     int
}

// Len is the number of values.
func (l *List[T]) Len() int { return l.n }

// Spilled reports whether the values are in a file.
func (l *List[T]) Spilled() bool { return l.f != nil }

// Close removes the list's file, if it has one.
func (l *List[T]) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// Cursor reads the values of positions [from, to) in order.
func (l *List[T]) Cursor(from, to int) *Cursor[T] {
	return &Cursor[T]{l: l, at: from, to: to}
}

// cursorValues is how many values a cursor reads from a file at once.
const cursorValues = 2048

// Cursor reads a range of a List in order.
type Cursor[T any] struct {
	l      *List[T]
	at, to int
	vals   []T // values read ahead from a file; vals[i:] not yet returned
	i      int
	raw    []byte
}

// Next returns the next value, or nil after the last. The value is valid
// until the next call. The list's file is its own, written whole before
// it is read: failing to read it back is a broken machine, not bad input,
// and panics.
func (c *Cursor[T]) Next() *T {
	if c.at >= c.to {
		return nil
	}
	if c.l.f == nil {
		v := &c.l.mem[c.at]
		c.at++
		return v
	}
	if c.i == len(c.vals) {
		n := min(cursorValues, c.to-c.at)
		size := c.l.codec.Size
		if c.raw == nil {
			// sized for the range: a list read a few values at a time
			// (a scenario of singleton groups) allocates that much
			c.raw = make([]byte, n*size)
			c.vals = make([]T, n)
		}
		raw := c.raw[:n*size]
		if _, err := c.l.f.ReadAt(raw, int64(c.at)*int64(size)); err != nil {
			panic(fmt.Sprintf("extsort: reading back a sorted list: %v", err))
		}
		c.vals, c.i = c.vals[:n], 0
		for i := range n {
			c.l.codec.Get(raw[i*size:], &c.vals[i])
		}
	}
	v := &c.vals[c.i]
	c.i++
	c.at++
	return v
}
