package dataset

import (
	"fmt"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Index is a store.Index of run folders ordered by scenario id, then
// traj_id, read one scenario at a time, so that what is built from it never
// depends on the order in which a run's concurrent episodes happened to be
// written. Memory is the store index (40 bytes per trajectory while it
// is opened and sorted, 24 after; past 512 Ki trajectories it is kept in
// a temporary file, and its memory stops growing: store.Index) plus what
// the reader holds of a scenario: Load holds all its records, Each and
// EachAt a window of them.
type Index struct {
	// Dirs are the run folders, as given.
	Dirs []string
	// Manifests are their manifests, in the order of Dirs.
	Manifests []store.Manifest
	// Records counts the trajectories indexed from each folder.
	Records []int
	// Duplicates counts copies of an episode already indexed (same
	// traj_id, e.g. a run given twice, or shards beside their merge), dropped.
	Duplicates int

	ix        *store.Index
	scenarios []string
	groups    map[string]store.Group
}

// OpenIndex indexes the trajectories of run folders (see store.OpenIndex:
// errors name the file and line; duplicates are dropped, the first copy in
// the order of dirs kept).
func OpenIndex(dirs ...string) (*Index, error) {
	six, err := store.OpenIndex(dirs...)
	if err != nil {
		return nil, err
	}
	if err := six.Sort(store.ByScenario); err != nil {
		return nil, err
	}
	ix := &Index{Dirs: six.Dirs, Manifests: six.Manifests, Records: six.Records, Duplicates: six.Duplicates,
		ix: six, groups: map[string]store.Group{}}
	for _, g := range six.Groups(store.ByScenario) {
		sid := six.Key(g.From).ScenarioID
		ix.scenarios = append(ix.scenarios, sid)
		ix.groups[sid] = g
	}
	six.Compact() // ordered and grouped: only positions are read from here on
	return ix, nil
}

// Len is the number of trajectories indexed.
func (ix *Index) Len() int { return ix.ix.Len() }

// Scenarios returns the scenario ids present, sorted.
func (ix *Index) Scenarios() []string { return ix.scenarios }

// Load reads the records of one scenario, ordered by traj_id.
func (ix *Index) Load(scenarioID string) ([]*trajectory.Record, error) {
	g, ok := ix.groups[scenarioID]
	if !ok {
		return nil, nil
	}
	return ix.ix.LoadGroup(g)
}

// Count is the number of trajectories of one scenario.
func (ix *Index) Count(scenarioID string) int {
	g := ix.groups[scenarioID]
	return g.To - g.From
}

// Bytes is the size of one scenario's record lines: what Load would read
// and hold decoded. Callers that must stay within a memory bound stream
// a scenario (Each, EachAt) when it is large instead of loading it.
func (ix *Index) Bytes(scenarioID string) int64 {
	return ix.ix.Bytes(ix.groups[scenarioID])
}

// Key is the identity of a scenario's k-th trajectory (in traj_id order,
// as Load returns them), read from the index without loading the record.
func (ix *Index) Key(scenarioID string, k int) store.Key {
	return ix.ix.Key(ix.groups[scenarioID].From + k)
}

// Each streams the records of one scenario in traj_id order, calling fn
// with each one's rank k (its position in Load's slice). The record passed
// to fn is overwritten later: keep what is needed, not the pointer.
// Records are decoded ahead on every core; memory is a window of records,
// whatever the scenario's size. It stops at the first error.
func (ix *Index) Each(scenarioID string, fn func(k int, rec *trajectory.Record) error) error {
	return ix.EachRankWith(scenarioID, ix.Count(scenarioID), func(j int) int { return j }, store.DecodeRecord, fn)
}

// EachAt is Each over the trajectories of ranks ks, in the order given
// (ranks may repeat).
func (ix *Index) EachAt(scenarioID string, ks []int, fn func(k int, rec *trajectory.Record) error) error {
	return ix.EachAtWith(scenarioID, ks, store.DecodeRecord, fn)
}

// EachAtWith is EachAt decoding each line with decode (DecodePrompt:
// what the reader needs of a record), which must accept and refuse what
// store.DecodeRecord does.
func (ix *Index) EachAtWith(scenarioID string, ks []int, decode func([]byte, *trajectory.Record) error, fn func(k int, rec *trajectory.Record) error) error {
	return ix.EachRankWith(scenarioID, len(ks), func(j int) int { return ks[j] }, decode, fn)
}

// EachRankWith is EachAtWith over the count ranks rank(0), …,
// rank(count-1), so that a caller holding ranks in another form (a range,
// int32s) needs no []int of a scenario's size to walk them.
func (ix *Index) EachRankWith(scenarioID string, count int, rank func(j int) int, decode func([]byte, *trajectory.Record) error, fn func(k int, rec *trajectory.Record) error) error {
	g, ok := ix.groups[scenarioID]
	if !ok {
		if count > 0 {
			return fmt.Errorf("dataset: no scenario %q in the index", scenarioID)
		}
		return nil
	}
	for j := range count {
		if k := rank(j); k < 0 || k >= g.To-g.From {
			return fmt.Errorf("dataset: scenario %q has %d trajectories, no rank %d", scenarioID, g.To-g.From, k)
		}
	}
	return ix.ix.EachAtFunc(count, func(j int) int { return g.From + rank(j) }, decode, func(i int, rec *trajectory.Record) error { return fn(i-g.From, rec) })
}

// LoadAt reads a scenario's k-th trajectory (in traj_id order).
func (ix *Index) LoadAt(scenarioID string, k int) (*trajectory.Record, error) {
	g, ok := ix.groups[scenarioID]
	if !ok || k < 0 || k >= g.To-g.From {
		return nil, fmt.Errorf("dataset: scenario %q has no trajectory of rank %d", scenarioID, k)
	}
	return ix.ix.Load(g.From + k)
}

// WhereAt names the file and line of a scenario's k-th trajectory, for
// messages.
func (ix *Index) WhereAt(scenarioID string, k int) string {
	file, line := ix.ix.Pos(ix.groups[scenarioID].From + k)
	return fmt.Sprintf("%s:%d", file, line)
}

// Where names the file and line of a trajectory, for messages.
func (ix *Index) Where(trajID string) string {
	i := ix.ix.Find(trajID)
	if i < 0 {
		return trajID
	}
	file, line := ix.ix.Pos(i)
	return fmt.Sprintf("%s:%d", file, line)
}

// Close releases the open files.
func (ix *Index) Close() error { return ix.ix.Close() }

// LessCheckpoint orders checkpoint names as their runs were given (by the
// manifests' plan.checkpoint), then names no manifest lists, by name. Tables
// and statistics list checkpoints in this order.
func (ix *Index) LessCheckpoint(a, b string) bool {
	ra, rb := ix.rank(a), ix.rank(b)
	if ra != rb {
		return ra < rb
	}
	return a < b
}

func (ix *Index) rank(name string) int {
	for i, m := range ix.Manifests {
		if m.Plan.Checkpoint == name {
			return i
		}
	}
	return len(ix.Manifests)
}

// Records walks the trajectories of run folders in table order —
// checkpoint, framework, scenario, rollout, seed, run, traj_id — so that a
// table written from them never depends on the order in which episodes
// finished. Copies of an episode (same traj_id) are dropped, the first in
// the order of dirs kept. Memory is the store index (40 bytes per record
// while it is opened and sorted, 24 after, up to 512 Ki records; a larger
// index is kept in a temporary file).
type Records struct {
	// Dirs are the run folders, as given.
	Dirs []string
	// Manifests are their manifests, in the order of Dirs.
	Manifests []store.Manifest
	// Scanned counts the records read from each folder, copies included.
	Scanned []int
	// Duplicates counts the copies dropped.
	Duplicates int

	ix *store.Index
}

// OpenRecords indexes the trajectories of run folders (errors name the file
// and line).
func OpenRecords(dirs ...string) (*Records, error) {
	six, err := store.OpenIndex(dirs...)
	if err != nil {
		return nil, err
	}
	if err := six.Sort(store.ByCheckpoint, store.ByFramework, store.ByScenario, store.ByRollout, store.BySeed, store.ByRun); err != nil {
		return nil, err
	}
	six.Compact() // ordered: only positions are read from here on
	return &Records{Dirs: six.Dirs, Manifests: six.Manifests, Scanned: six.Scanned, Duplicates: six.Duplicates, ix: six}, nil
}

// Len is the number of trajectories indexed.
func (r *Records) Len() int { return r.ix.Len() }

// Each calls fn with every record in table order; it stops at fn's first error.
func (r *Records) Each(fn func(rec *trajectory.Record) error) error {
	return r.ix.Each(func(_ int, rec *trajectory.Record) error { return fn(rec) })
}

// Close releases the open files.
func (r *Records) Close() error { return r.ix.Close() }

// KTOUnits are the rows a record gives the per-turn KTO table: its kept
// assistant turns (Turns, TurnLabel) with their labels.
func KTOUnits(rec *trajectory.Record, pre PreOnset) []Unit {
	prompt, _ := SplitPrompt(rec.Messages)
	var out []Unit
	for k := len(prompt); k < len(rec.Messages); k++ {
		if rec.Messages[k].Role != trajectory.RoleAssistant {
			continue
		}
		if label, keep := TurnLabel(rec, k, pre); keep {
			out = append(out, Unit{Turn: k, Class: label})
		}
	}
	return out
}
