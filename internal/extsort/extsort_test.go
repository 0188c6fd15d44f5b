package extsort_test

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/extsort"
)

type pair struct{ key, val uint64 }

var codec = extsort.Codec[pair]{
	Size: 16,
	Put: func(b []byte, v *pair) {
		binary.LittleEndian.PutUint64(b, v.key)
		binary.LittleEndian.PutUint64(b[8:], v.val)
	},
	Get: func(b []byte, v *pair) {
		v.key, v.val = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	},
}

func cmp(a, b *pair) int {
	if a.key != b.key {
		if a.key < b.key {
			return -1
		}
		return 1
	}
	if a.val < b.val {
		return -1
	}
	if a.val > b.val {
		return 1
	}
	return 0
}

// TestSortedInMemoryAndSpilled: the list is the values in order, read
// whole or by any range, whether they stayed in memory or went through
// runs of every size (one value a run, a run and a remainder, one run),
// on either side of a cursor's buffer.
func TestSortedInMemoryAndSpilled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 2047, 2048, 2049, 5000} {
		vs := make([]pair, n)
		for i := range vs {
			vs[i] = pair{rng.Uint64N(50), uint64(i)}
		}
		want := slices.Clone(vs)
		slices.SortFunc(want, func(a, b pair) int { return cmp(&a, &b) })
		for _, limit := range []int{1, 3, 1000, n, n + 1} {
			s := extsort.New(codec, cmp, limit, "test")
			for _, v := range vs {
				require.NoError(t, s.Add(v))
			}
			require.Equal(t, n, s.Len())
			l, err := s.Sorted()
			require.NoError(t, err)
			require.Equal(t, n, l.Len())
			require.Equal(t, limit <= n && n > 0, l.Spilled(), "n %d, limit %d", n, limit)
			for _, r := range [][2]int{{0, n}, {n / 3, n / 3}, {n / 3, n - n/5}, {n - min(n, 1), n}} {
				var got []pair
				c := l.Cursor(r[0], r[1])
				for v := c.Next(); v != nil; v = c.Next() {
					got = append(got, *v)
				}
				require.Nil(t, c.Next())
				require.Equal(t, want[r[0]:r[1]], append([]pair{}, got...), "n %d, limit %d, range %v", n, limit, r)
			}
			require.NoError(t, l.Close())
		}
	}
}
