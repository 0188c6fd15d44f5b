package store

import (
	"testing"
	"unsafe"
)

// The index is documented at 40 bytes per record, 24 after Compact.
func TestIndexEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 40 {
		t.Fatalf("an index entry is %d bytes, documented as 40", n)
	}
	if n := unsafe.Sizeof(slot{}); n != 24 {
		t.Fatalf("a compacted index entry is %d bytes, documented as 24", n)
	}
}

// entryBlocks keeps every entry in order, across blocks, and counts them.
func TestEntryBlocks(t *testing.T) {
	for _, n := range []int{0, 1, entryBlock - 1, entryBlock, entryBlock + 1, 3*entryBlock + 17} {
		var b entryBlocks
		for i := range n {
			b.add(entry{slot: slot{loc: uint64(i)}})
		}
		if b.len() != n {
			t.Fatalf("%d added, len %d", n, b.len())
		}
		i := 0
		for bi, block := range b {
			if bi < len(b)-1 && len(block) != entryBlock {
				t.Fatalf("%d added: block %d holds %d", n, bi, len(block))
			}
			for _, e := range block {
				if e.off() != int64(i) {
					t.Fatalf("%d added: entry %d is %d", n, i, e.off())
				}
				i++
			}
		}
	}
}
