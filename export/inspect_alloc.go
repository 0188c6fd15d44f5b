package export

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// boundedAllocator refuses (by panicking, which Inspect recovers into an
// error) any allocation that would take the reader's live memory past a
// cap: a corrupt length field must not make the reader ask for hundreds of
// gigabytes and kill the process.
type boundedAllocator struct {
	mu   sync.Mutex
	mem  memory.Allocator
	live int
	cap  int
}

// inspectMemoryCap bounds a reader's live memory: many times the file (the
// data may be compressed) and never less than 256 MiB or more than 4 GiB.
func inspectMemoryCap(fileSize int64) int {
	c := fileSize * 64
	return int(min(max(c, 256<<20), 4<<30))
}

func newBoundedAllocator(limit int) *boundedAllocator {
	return &boundedAllocator{mem: memory.NewGoAllocator(), cap: limit}
}

func (a *boundedAllocator) take(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n < 0 || a.live+n > a.cap {
		panic(fmt.Sprintf("a buffer of %d bytes is more than a file of this size can hold (corrupt length?)", n))
	}
	a.live += n
}

func (a *boundedAllocator) give(n int) {
	a.mu.Lock()
	a.live -= n
	a.mu.Unlock()
}

func (a *boundedAllocator) Allocate(size int) []byte {
	a.take(size)
	return a.mem.Allocate(size)
}

func (a *boundedAllocator) Reallocate(size int, b []byte) []byte {
	switch {
	case size < 0:
		a.take(size) // refused: a corrupt length
	case size >= len(b):
		a.take(size - len(b))
	default:
		// A shrinking buffer (the reader trims what it over-allocated)
		// gives memory back; it is not a negative request.
		a.give(len(b) - size)
	}
	return a.mem.Reallocate(size, b)
}

func (a *boundedAllocator) Free(b []byte) {
	a.give(len(b))
	a.mem.Free(b)
}
