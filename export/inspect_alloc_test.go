package export

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A reader that trims an over-sized buffer gives memory back; a negative
// or over-cap request is refused.
func TestBoundedAllocatorShrinksAndRefuses(t *testing.T) {
	a := newBoundedAllocator(1 << 20)
	b := a.Allocate(4096)
	assert.Equal(t, 4096, a.live)
	b = a.Reallocate(1024, b)
	assert.Len(t, b, 1024)
	assert.Equal(t, 1024, a.live, "shrinking gives the difference back")
	b = a.Reallocate(8192, b)
	assert.Equal(t, 8192, a.live)
	a.Free(b)
	assert.Zero(t, a.live)
	assert.Panics(t, func() { a.Allocate(2 << 20) }, "over the cap")
	assert.Panics(t, func() { a.Reallocate(-1, nil) }, "a negative size")
}
