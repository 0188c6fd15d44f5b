package dataset

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sort"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Index is a store.Index of run folders ordered by scenario id, then
// traj_id, read one scenario at a time, so that what is built from it never
// depends on the order in which a run's concurrent episodes happened to be
// written. Memory is the store index (64 bytes per trajectory) plus the
// records of one scenario (all its checkpoints and runs).
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
	six.Sort(store.ByScenario)
	ix := &Index{Dirs: six.Dirs, Manifests: six.Manifests, Records: six.Records, Duplicates: six.Duplicates,
		ix: six, groups: map[string]store.Group{}}
	for _, g := range six.Groups(store.ByScenario) {
		sid := six.Key(g.From).ScenarioID
		ix.scenarios = append(ix.scenarios, sid)
		ix.groups[sid] = g
	}
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
// the order of dirs kept. Memory is the store index (64 bytes per record).
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
	six.Sort(store.ByCheckpoint, store.ByFramework, store.ByScenario, store.ByRollout, store.BySeed, store.ByRun)
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

// EachShuffled calls fn with every record in a seeded pseudo-random order:
// by SHA-256 of the seed and the traj_id, so the order depends on nothing
// but the seed and the records. KTO pairs each row with its neighbour for
// its KL estimate and trains in file order; a shuffled file mixes
// scenarios and labels in every batch. Records are read a window at a
// time (store.Index.EachAt); the record passed to fn is overwritten later.
func (r *Records) EachShuffled(seed int64, fn func(rec *trajectory.Record) error) error {
	type pos struct {
		key [32]byte
		i   int
	}
	order := make([]pos, r.ix.Len())
	for i := range order {
		order[i] = pos{sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", seed, r.ix.Key(i).TrajID))), i}
	}
	sort.Slice(order, func(a, b int) bool { return bytes.Compare(order[a].key[:], order[b].key[:]) < 0 })
	at := make([]int, len(order))
	for k, p := range order {
		at[k] = p.i
	}
	return r.ix.EachAt(at, func(_ int, rec *trajectory.Record) error { return fn(rec) })
}
