package sim

import (
	"math/rand/v2"
	"strconv"
	"sync"
)

// The per-turn hashes and random sources of the simulated policies,
// without allocating: each gives exactly what hash64 and
// rand.New(rand.NewPCG(...)) give for the same parts.

// FNV-1a, 64-bit (hash/fnv's New64a).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnvHash is hash64's running hash: each part is written as fmt.Fprint
// writes it, followed by a zero byte.
type fnvHash uint64

func newFNV() fnvHash { return fnvOffset64 }

func (h *fnvHash) write(b []byte) {
	x := uint64(*h)
	for _, c := range b {
		x ^= uint64(c)
		x *= fnvPrime64
	}
	*h = fnvHash(x)
}

func (h *fnvHash) end() { h.write([]byte{0}) }

func (h *fnvHash) str(s string) {
	x := uint64(*h)
	for i := 0; i < len(s); i++ {
		x ^= uint64(s[i])
		x *= fnvPrime64
	}
	*h = fnvHash(x)
	h.end()
}

func (h *fnvHash) int(v int64) {
	var buf [24]byte
	h.write(strconv.AppendInt(buf[:0], v, 10))
	h.end()
}

func (h *fnvHash) uint(v uint64) {
	var buf [24]byte
	h.write(strconv.AppendUint(buf[:0], v, 10))
	h.end()
}

// fmtBytes writes b as fmt.Fprint writes a []byte: "[12 0 255]".
func (h *fnvHash) fmtBytes(b []byte) {
	var buf [24]byte
	h.write([]byte{'['})
	for i, c := range b {
		if i > 0 {
			h.write([]byte{' '})
		}
		h.write(strconv.AppendUint(buf[:0], uint64(c), 10))
	}
	h.write([]byte{']'})
	h.end()
}

// hashFmtBytes is hash64(b).
func hashFmtBytes(b []byte) uint64 {
	h := newFNV()
	h.fmtBytes(b)
	return uint64(h)
}

// pcgRand is a rand.Rand over its own PCG, reseeded for each use.
type pcgRand struct {
	src rand.PCG
	*rand.Rand
}

var randPool = sync.Pool{New: func() any {
	r := &pcgRand{}
	r.Rand = rand.New(&r.src)
	return r
}}

// getRand is rand.New(rand.NewPCG(seed1, seed2)) from a pool; give it
// back with putRand.
func getRand(seed1, seed2 uint64) *pcgRand {
	r := randPool.Get().(*pcgRand)
	r.src.Seed(seed1, seed2)
	return r
}

func putRand(r *pcgRand) { randPool.Put(r) }
