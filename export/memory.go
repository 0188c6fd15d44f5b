package export

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// DefaultMemoryBudget is the memory an export may take beyond what is in
// use when its record index is built: the rows in flight (a few MB), the
// row groups being buffered (one per Parquet file: three in the
// split-file layout, each bounded by Options.RowGroupRows and
// RowGroupBytes) with their dictionaries, one zstd encoder (16 MiB of
// history), and what the garbage collector lets accumulate between
// collections. The Go runtime's soft memory limit is set to it (LimitMemory):
// with the default GOGC of 100 the heap of a 43,000-trajectory export
// grew to twice its live 80–110 MiB, so a peak RSS past 256 MiB; under the
// limit the collector runs a little earlier and the peak stays near
// 210 MiB, at no measurable cost in CPU. The index itself (64 bytes a
// record) is outside the budget, so a larger run never makes the collector
// run harder to fit.
const DefaultMemoryBudget = 144 << 20

// LimitMemory sets the Go runtime's soft memory limit to the memory the
// runtime holds now, after a collection, plus budget, unless a limit is set already (GOMEMLIMIT,
// or an earlier call), and returns the function that restores the limit
// before it. The limit is soft: live memory above it makes the garbage
// collector run more often, never an allocation fail.
func LimitMemory(budget int64) (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	if prev != math.MaxInt64 || budget <= 0 {
		return func() {}
	}
	// What is live now (the index, for an export), not the garbage its
	// building left: a collection of a heap this small takes milliseconds.
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	inUse := int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	debug.SetMemoryLimit(inUse + budget)
	return func() { debug.SetMemoryLimit(prev) }
}
