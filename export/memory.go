package export

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// DefaultMemoryBudget is the memory an export may take beyond what is in
// use when its record index is built: the rows in flight (a few MB), the
// row groups being buffered (one per Parquet file: three in the
// split-file layout, each bounded by Options.RowGroupRows and
// RowGroupBytes) with their dictionaries, the footer entries of the files
// open (bounded by Options.ShardRowGroups), one zstd encoder (16 MiB of
// history), and what the garbage collector lets accumulate between
// collections. The Go runtime's soft memory limit is set to it (LimitMemory):
// with the default GOGC of 100 the heap of a 43,000-trajectory export
// grew to twice its live 80–110 MiB, so a peak RSS past 256 MiB; under the
// limit the collector runs a little earlier and the peak stays near
// 210 MiB, at no measurable cost in CPU. The index (24 bytes a record once
// sorted) and GrowthPerRecord come on top of the budget, up to
// MemoryCeiling: a run of a million trajectories peaks at 234–236 MiB of
// RSS.
const DefaultMemoryBudget = 144 << 20

// ExportMemoryBudget is the budget of the export command, under
// DefaultMemoryBudget. Peak RSS is the soft limit plus 57–61 MiB of the
// binary's own pages (code and tables mapped from the file, from start-up
// on), so the default limit put a 43,000-trajectory export at 201–214 MiB
// of RSS; 16 MiB less puts it at 190–196 MiB. The collector runs more
// often and returns more pages to the system: about 1 s more CPU (most
// of it system time) on that run, which the template sample's deferred
// rendering had saved.
const ExportMemoryBudget = DefaultMemoryBudget - 16<<20

// MemoryCeiling bounds the soft memory limit LimitMemory sets, whatever
// the budget: the Go runtime's memory (heap, stacks, its own structures;
// the process adds 55–60 MiB of code and tables mapped from the binary)
// stays near it, so that peak RSS stays under 256 MiB as the run grows: a
// million-trajectory export under it peaks at about 230 MiB. Only when
// what is in use comes near it (an index of some 5 × 10⁶ records) does
// MemoryFloor take over.
const MemoryCeiling = 184 << 20

// GrowthPerRecord is what GrowMemoryLimit adds to the limit per record a
// command writes (export, rewards, pairs): the footer entries of the files being written grow
// with the rows (about 30 bytes a trajectory row, up to the shards' row-group
// bound), and the collector needs room above a working set that grows with
// them. Without it a million-trajectory export held its working set (120–130
// MiB live) within 30–40 MiB of its limit: the collector ran 2,200 times and
// the runtime returned pages and faulted them in again without end, 133 s
// against 75 s with no limit; at the ceiling it takes about 95 s. A run of
// 43,000 gains 2.6 MiB.
const GrowthPerRecord = 64

// MemoryFloor is the least room above what is in use that LimitMemory
// leaves, so that a large index never makes the collector run without end.
const MemoryFloor = 32 << 20

// LimitMemory sets the Go runtime's soft memory limit to the memory the
// runtime holds now, after a collection, plus budget, at most
// MemoryCeiling and at least what it holds plus MemoryFloor (softLimit),
// unless a limit is set already (GOMEMLIMIT, or an earlier call), and
// returns the function that restores the limit before it. The limit is
// soft: live memory above it makes the garbage collector run more often,
// never an allocation fail.
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
	limit := softLimit(inUse, budget)
	debug.SetMemoryLimit(limit)
	w := &limitWatch{limit: limit}
	w.arm()
	activeWatch.Store(w)
	return func() {
		activeWatch.CompareAndSwap(w, nil)
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		debug.SetMemoryLimit(prev)
	}
}

// activeWatch is the watch of the limit LimitMemory set, until restored.
var activeWatch atomic.Pointer[limitWatch]

// GrowMemoryLimit raises the soft limit LimitMemory set by GrowthPerRecord
// for each of records, at most to MemoryCeiling (never lowering it), once
// a command knows the run's size: export after its index, rewards and
// pairs, which set their limit before building the index so that the
// building is under it, after theirs. Without a limit set by LimitMemory
// (GOMEMLIMIT) it does nothing.
func GrowMemoryLimit(records int) {
	w := activeWatch.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if limit := min(w.limit+GrowthPerRecord*int64(records), max(w.limit, MemoryCeiling)); limit > w.limit {
		w.limit = limit
		debug.SetMemoryLimit(limit)
	}
}

// limitWatch raises the soft limit when what stays live after a collection
// comes within MemoryFloor of it at sustainedPressure collections in a
// row: a command that holds one scenario's records (rewards, with
// thousands of rollouts a scenario) would otherwise make the collector run
// back to back, three times slower. Above that point the heap is let grow
// to twice what is live, as without a limit. One collection near the limit
// is not enough: an export of a million trajectories, live at 120–130 MiB
// under a 162 MiB limit, spikes to 151 MiB for one collection while a row
// group's pages and dictionary are written, and raising the limit then
// doubled it for the rest of the run (RSS 357 MB, not 230).
type limitWatch struct {
	mu      sync.Mutex
	limit   int64
	near    int // consecutive collections with live memory near the limit
	stopped bool
}

// sustainedPressure is how many collections in a row must end near the
// limit before it is raised.
const sustainedPressure = 8

// arm runs check after the next collection (a cleanup of an object that
// only the collection frees), and check arms it again.
func (w *limitWatch) arm() {
	runtime.AddCleanup(new([16]byte), func(w *limitWatch) { w.check() }, w)
}

func (w *limitWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	w.observe(int64(s[0].Value.Uint64()))
	w.arm()
}

// observe takes the live heap after a collection and raises the limit when
// it has been near it for sustainedPressure collections.
func (w *limitWatch) observe(live int64) {
	if live+MemoryFloor <= w.limit {
		w.near = 0
		return
	}
	if w.near++; w.near < sustainedPressure {
		return
	}
	w.near = 0
	w.limit = 2 * live
	debug.SetMemoryLimit(w.limit)
}

// softLimit is the limit LimitMemory sets for what is in use and a budget.
func softLimit(inUse, budget int64) int64 {
	return max(min(inUse+budget, MemoryCeiling), inUse+MemoryFloor)
}
