package export

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)

	restore := LimitMemory(100 << 20)
	lim := debug.SetMemoryLimit(-1)
	require.Greater(t, lim, int64(100<<20), "the budget on top of what is in use (softLimit: TestSoftLimit)")
	// a limit already set (GOMEMLIMIT, or an outer call) is kept
	inner := LimitMemory(1 << 20)
	require.Equal(t, lim, debug.SetMemoryLimit(-1))
	inner()
	require.Equal(t, lim, debug.SetMemoryLimit(-1))
	restore()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}

func TestSoftLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ inUse, budget, want int64 }{
		{10 * mib, 144 * mib, 154 * mib},              // a small index: the budget on top
		{40 * mib, 144 * mib, MemoryCeiling},          // a larger one: the ceiling holds
		{100 * mib, 144 * mib, MemoryCeiling},         // still the ceiling
		{160 * mib, 144 * mib, 160*mib + MemoryFloor}, // an index near the ceiling: room to work
		{10 * mib, 8 * mib, 10*mib + MemoryFloor},     // a tiny budget: the floor
	} {
		require.Equal(t, tc.want, softLimit(tc.inUse, tc.budget), "in use %d MiB, budget %d MiB", tc.inUse/mib, tc.budget/mib)
	}
}

// Live memory past the limit raises it, instead of making the collector
// run back to back.
func TestLimitMemoryRisesWithLiveHeap(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	restore := LimitMemory(8 << 20)
	defer restore()
	start := debug.SetMemoryLimit(-1)
	hold := make([][]byte, 0, 64)
	var total int64
	for range 64 { // past the limit: start is what is in use plus at most the floor, or the ceiling
		hold = append(hold, make([]byte, (start+64<<20)/64))
		total += int64(len(hold[len(hold)-1]))
	}
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) < total && time.Now().Before(deadline) {
		runtime.GC() // each collection's check raises the limit once what is live nears it
		time.Sleep(10 * time.Millisecond)
	}
	lim := debug.SetMemoryLimit(-1)
	require.Greater(t, lim, start, "the limit rose above what is live")
	require.GreaterOrEqual(t, lim, total, "at least what is held")
	runtime.KeepAlive(hold)
	restore()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "restored, and the watch stopped")
	runtime.GC()
	runtime.GC()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}

// One collection near the limit (a row group being written) leaves it;
// sustainedPressure in a row raise it to twice what is live.
func TestLimitWatchWaitsForSustainedPressure(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	const mib = 1 << 20
	w := &limitWatch{limit: 162 * mib}
	for range 3 * sustainedPressure {
		w.observe(151 * mib) // a spike…
		w.observe(127 * mib) // …then the working set again
	}
	require.Equal(t, int64(162*mib), w.limit, "spikes never raise the limit")
	for i := range sustainedPressure {
		require.Equal(t, int64(162*mib), w.limit, "collection %d near the limit", i)
		w.observe(150 * mib)
	}
	require.Equal(t, int64(300*mib), w.limit, "sustained pressure doubles what is live")
	require.Equal(t, int64(300*mib), debug.SetMemoryLimit(-1))
}

// GrowMemoryLimit raises the limit LimitMemory set by GrowthPerRecord a
// record, up to MemoryCeiling, never lowering it; it leaves a limit it did
// not set, and does nothing once the limit is restored. (The watch is made
// by hand: what LimitMemory starts from depends on what the test binary
// holds at the time.)
func TestGrowMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)
	const mib = 1 << 20
	w := &limitWatch{limit: 100 * mib}
	debug.SetMemoryLimit(w.limit)
	activeWatch.Store(w)
	GrowMemoryLimit(1000)
	require.Equal(t, int64(100*mib+1000*GrowthPerRecord), debug.SetMemoryLimit(-1))
	GrowMemoryLimit(1 << 30)
	require.Equal(t, int64(MemoryCeiling), debug.SetMemoryLimit(-1), "at most the ceiling")
	GrowMemoryLimit(0)
	require.Equal(t, int64(MemoryCeiling), debug.SetMemoryLimit(-1), "never lower")
	w.limit = 300 * mib // what was in use plus the floor, past the ceiling
	debug.SetMemoryLimit(w.limit)
	GrowMemoryLimit(1000)
	require.Equal(t, int64(300*mib), debug.SetMemoryLimit(-1), "a limit past the ceiling is kept")
	w.stopped, w.limit = true, 100*mib
	debug.SetMemoryLimit(w.limit)
	GrowMemoryLimit(1000)
	require.Equal(t, int64(100*mib), debug.SetMemoryLimit(-1), "a stopped watch is left")
	activeWatch.Store(nil)

	debug.SetMemoryLimit(math.MaxInt64)
	LimitMemory(64 << 20)()
	GrowMemoryLimit(1000)
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "no limit after restore")

	debug.SetMemoryLimit(100 * mib) // GOMEMLIMIT: LimitMemory leaves it, and so does GrowMemoryLimit
	restore := LimitMemory(64 << 20)
	GrowMemoryLimit(1 << 20)
	require.Equal(t, int64(100*mib), debug.SetMemoryLimit(-1))
	restore()
}
