package dataset

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/internal/racetest"
)

// referenceBalanced is the balanced order as first written: every row's
// whole key and place held, each class sorted by key, then all rows
// stably sorted by place and key.
func referenceBalanced(rows []refRow) []refRow {
	type pos struct {
		at  float64
		row refRow
	}
	var byClass [2][]pos
	for _, r := range rows {
		c := 0
		if r.class {
			c = 1
		}
		byClass[c] = append(byClass[c], pos{row: r})
	}
	var order []pos
	for _, ps := range byClass {
		sort.Slice(ps, func(a, b int) bool { return bytes.Compare(ps[a].row.key[:], ps[b].row.key[:]) < 0 })
		for k := range ps {
			ps[k].at = (float64(k) + 0.5) / float64(len(ps))
		}
		order = append(order, ps...)
	}
	sort.SliceStable(order, func(a, b int) bool {
		if order[a].at != order[b].at {
			return order[a].at < order[b].at
		}
		return bytes.Compare(order[a].row.key[:], order[b].row.key[:]) < 0
	})
	out := make([]refRow, len(order))
	for k, p := range order {
		out[k] = p.row
	}
	return out
}

type refRow struct {
	i, turn int
	class   bool
	key     [32]byte
}

// TestBalancedOrderMatchesReference: the compact order (8 bytes of each
// key held, the classes merged) is the reference's, on rows whose classes
// are of equal sizes (every place ties across them), of sizes in simple
// ratios, and whose keys share their first eight bytes (the whole key
// decides), with turns from -1 (a record's one row without a turn).
func TestBalancedOrderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 300 {
		n := 1 + rng.IntN(200)
		var rows []refRow
		keys := map[[2]int][32]byte{}
		for i := range n {
			for turn := range 1 + rng.IntN(3) {
				turn-- // -1: a record's one row without a turn (export's raw and skipped records)
				var k [32]byte
				for j := range k {
					k[j] = byte(rng.IntN(256))
				}
				if c%3 == 0 {
					// the first eight bytes from a few values: prefixes tie
					copy(k[:8], []byte{0, 0, 0, 0, 0, 0, 0, byte(rng.IntN(4))})
				}
				var class bool
				switch c % 4 {
				case 1:
					class = (i+turn)%2 == 0 // classes of equal or near-equal sizes
				case 2:
					class = i%3 == 0
				default:
					class = rng.IntN(5) == 0
				}
				rows = append(rows, refRow{i: i, turn: turn, class: class, key: k})
				keys[[2]int{i, turn}] = k
			}
		}
		want := referenceBalanced(rows)
		for _, held := range []int{orderHeld, 5} { // in memory, and in runs of 5 in a file
			o := balancedOrder{key: func(i, turn int) [32]byte { return keys[[2]int{i, turn}] }}
			saved := orderHeld
			orderHeld = held
			for _, r := range rows {
				require.NoError(t, o.add(r.class, r.i, r.turn, r.key))
			}
			orderHeld = saved
			require.NoError(t, o.build())
			require.Equal(t, len(want), o.len())
			for k, w := range want {
				e := o.next()
				require.Equal(t, [3]any{w.i, w.turn, w.class}, [3]any{int(e.i), e.turn(), e.class()}, "case %d, row %d, held %d", c, k, held)
			}
			require.Nil(t, o.next())
			o.close()
		}
	}
}

// TestSeededKeysAreTheFormatted: the keys are SHA-256 of the text the
// order has always hashed (fmt's "%d\x00%s" and "%d\x00%s\x00%d"), so
// that a seed gives the same file as before.
func TestSeededKeysAreTheFormatted(t *testing.T) {
	for _, seed := range []int64{0, 1, -7, 1 << 40} {
		for _, id := range []string{"", "t-01", "ü\x00x"} {
			require.Equal(t, sha256Of(fmtSprintf("%d\x00%s", seed, id)), recordKey(seed, id))
			for _, turn := range []int{0, 3, 12} {
				require.Equal(t, sha256Of(fmtSprintf("%d\x00%s\x00%d", seed, id, turn)), unitKey(seed, id, turn))
			}
		}
	}
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }

var fmtSprintf = fmt.Sprintf

// TestBalancedOrderHoldsFewBytesPerRow: the KTO table's seeded order
// holds 16 bytes a row in memory (8 of its key, its record, its turn and
// class) up to orderHeld, and past it sorts them in runs in a temporary
// file, holding nothing a row more, so that an export of any number of
// records stays within its memory bound: the whole keys and places, 48
// bytes a row held twice while sorted, came to about 100 MB at a million
// records. Measured by the live heap once the order is built and its first
// row read, for two sizes (what is the same at both cancels out).
func TestBalancedOrderHoldsFewBytesPerRow(t *testing.T) {
	racetest.SingleThreaded(t) // heap figures: the race detector's shadow memory would count
	measure := func(n int) uint64 {
		keys := make([][32]byte, n)
		for i := range keys {
			keys[i] = recordKey(1, strconv.Itoa(i))
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		o := balancedOrder{key: func(i, _ int) [32]byte { return keys[i] }}
		for i := range n {
			require.NoError(t, o.add(i%3 == 0, i, 0, keys[i]))
		}
		require.NoError(t, o.build())
		require.NotNil(t, o.next())
		runtime.GC()
		runtime.ReadMemStats(&ms)
		defer o.close()
		require.Equal(t, n, o.len())
		return ms.HeapAlloc - before
	}
	perRow := func(small, large int) float64 {
		a, b := measure(small), measure(large)
		per := float64(int64(b)-int64(a)) / float64(large-small)
		t.Logf("held: %d bytes for %d rows, %d for %d: %.1f a row", a, small, b, large, per)
		return per
	}
	require.Less(t, perRow(100_000, 300_000), 25.0, "in memory: 16 bytes a row, and what the slice has spare")
	defer func(n int) { orderHeld = n }(orderHeld)
	orderHeld = 4096
	require.Less(t, perRow(100_000, 300_000), 1.0, "in a file: nothing a row")
}
