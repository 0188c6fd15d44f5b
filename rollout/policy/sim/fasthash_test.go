package sim

import (
	"encoding/binary"
	"testing"
)

// The allocation-free hashes give exactly what hash64 gives.
func TestFastHashesMatchHash64(t *testing.T) {
	for _, seed := range []int64{0, 1, -1, 42, 1 << 62, -(1 << 63), 7340928347} {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(seed))
		if got, want := hashFmtBytes(b[:]), hash64(b[:]); got != want {
			t.Errorf("seed %d: hashFmtBytes %x, hash64 %x", seed, got, want)
		}
		for turn := 0; turn < 3; turn++ {
			h := newFNV()
			h.str("call")
			h.int(seed)
			h.int(int64(turn))
			h.int(0)
			if got, want := uint64(h), hash64("call", seed, turn, 0); got != want {
				t.Errorf("seed %d turn %d: %x, want %x", seed, turn, got, want)
			}
			for j := 0; j < 9; j++ {
				h := newFNV()
				h.uint(uint64(seed))
				h.int(int64(j))
				h.int(seed)
				if got, want := uint64(h), hash64(uint64(seed), j, seed); got != want {
					t.Errorf("seed %d j %d: %x, want %x", seed, j, got, want)
				}
			}
		}
	}
}
