package store

import (
	"testing"
	"unsafe"
)

// The index is documented at 64 bytes per record.
func TestIndexEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 64 {
		t.Fatalf("an index entry is %d bytes, documented as 64", n)
	}
}
