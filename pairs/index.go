package pairs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Index locates every trajectory of one or more run folders without
// keeping them in memory: a first pass reads each line once and keeps
// (traj_id, scenario, checkpoint, file, offset); Load then reads the records
// of one scenario at a time. Memory is about 100 bytes per trajectory for
// the index plus the records of one scenario (all its checkpoints and runs).
//
// Everything the index returns is ordered by scenario id, then traj_id, so
// that what is built from it never depends on the order in which a run's
// concurrent episodes happened to be written.
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

	files     []string
	entries   []entry
	scenarios []string
	ranges    map[string][2]int
	handles   map[int32]*os.File
	intern    map[string]string
}

type entry struct {
	trajID     string
	scenarioID string
	file       int32
	line       int32
	offset     int64
	length     int64
}

// header is the part of a record the first pass decodes.
type header struct {
	TrajID     string `json:"traj_id"`
	ScenarioID string `json:"scenario_id"`
}

// OpenIndex reads the run folders' manifests and indexes their trajectories
// (trajectories/*.jsonl; errors/ holds infrastructure failures, which are
// not trajectories). A folder without manifest.json, an unreadable file, a
// line that is not a record or an incomplete last line is an error naming
// the file and line. Blank lines are skipped; a traj_id already indexed is
// a copy of the same episode and is dropped (counted in Duplicates), the
// first copy in the order of dirs kept.
func OpenIndex(dirs ...string) (*Index, error) {
	ix := &Index{Dirs: dirs, ranges: map[string][2]int{}, handles: map[int32]*os.File{}, intern: map[string]string{}}
	seen := map[string]bool{}
	for _, d := range dirs {
		m, err := store.ReadManifest(d)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s is not a run folder (no manifest.json)", d)
			}
			return nil, err
		}
		ix.Manifests = append(ix.Manifests, m)
		ix.Records = append(ix.Records, 0)
		fs, err := filepath.Glob(filepath.Join(d, "trajectories", "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(fs)
		for _, f := range fs {
			fi := int32(len(ix.files))
			ix.files = append(ix.files, f)
			if err := ix.scan(fi, len(ix.Records)-1, seen); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(ix.entries, func(i, j int) bool {
		a, b := &ix.entries[i], &ix.entries[j]
		if a.scenarioID != b.scenarioID {
			return a.scenarioID < b.scenarioID
		}
		return a.trajID < b.trajID
	})
	for i := 0; i < len(ix.entries); {
		j := i
		for j < len(ix.entries) && ix.entries[j].scenarioID == ix.entries[i].scenarioID {
			j++
		}
		ix.scenarios = append(ix.scenarios, ix.entries[i].scenarioID)
		ix.ranges[ix.entries[i].scenarioID] = [2]int{i, j}
		i = j
	}
	return ix, nil
}

func (ix *Index) scan(fi int32, dir int, seen map[string]bool) error {
	name := ix.files[fi]
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var offset int64
	for line := int32(1); ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", name, err)
		}
		if b[len(b)-1] != '\n' {
			return fmt.Errorf("%s:%d: incomplete last line (a run still writing, or killed: rerun it to repair)", name, line)
		}
		start := offset
		offset += int64(len(b))
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var h header
		if err := json.Unmarshal(b, &h); err != nil {
			return fmt.Errorf("%s:%d: not a trajectory record: %v", name, line, err)
		}
		if h.TrajID == "" || h.ScenarioID == "" {
			return fmt.Errorf("%s:%d: not a trajectory record: traj_id or scenario_id missing", name, line)
		}
		if seen[h.TrajID] {
			ix.Duplicates++
			continue
		}
		seen[h.TrajID] = true
		if s, ok := ix.intern[h.ScenarioID]; ok {
			h.ScenarioID = s // one string per scenario, not per record
		} else {
			ix.intern[h.ScenarioID] = h.ScenarioID
		}
		ix.Records[dir]++
		ix.entries = append(ix.entries, entry{trajID: h.TrajID, scenarioID: h.ScenarioID, file: fi, line: line, offset: start, length: int64(len(b))})
	}
}

// Len is the number of trajectories indexed.
func (ix *Index) Len() int { return len(ix.entries) }

// Scenarios returns the scenario ids present, sorted.
func (ix *Index) Scenarios() []string { return ix.scenarios }

// Load reads the records of one scenario, ordered by traj_id.
func (ix *Index) Load(scenarioID string) ([]*trajectory.Record, error) {
	rg, ok := ix.ranges[scenarioID]
	if !ok {
		return nil, nil
	}
	out := make([]*trajectory.Record, 0, rg[1]-rg[0])
	var buf []byte
	for _, e := range ix.entries[rg[0]:rg[1]] {
		f, err := ix.handle(e.file)
		if err != nil {
			return nil, err
		}
		if int64(cap(buf)) < e.length {
			buf = make([]byte, e.length)
		}
		buf = buf[:e.length]
		if _, err := f.ReadAt(buf, e.offset); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", ix.files[e.file], e.line, err)
		}
		rec := &trajectory.Record{}
		if err := json.Unmarshal(bytes.TrimSpace(buf), rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", ix.files[e.file], e.line, err)
		}
		if rec.TrajID != e.trajID {
			return nil, fmt.Errorf("%s:%d: changed while being read (a run still writing?)", ix.files[e.file], e.line)
		}
		out = append(out, rec)
	}
	return out, nil
}

// Where names the file and line of a trajectory, for messages.
func (ix *Index) Where(trajID string) string {
	for _, e := range ix.entries {
		if e.trajID == trajID {
			return fmt.Sprintf("%s:%d", ix.files[e.file], e.line)
		}
	}
	return trajID
}

func (ix *Index) handle(fi int32) (*os.File, error) {
	if f := ix.handles[fi]; f != nil {
		return f, nil
	}
	f, err := os.Open(ix.files[fi])
	if err != nil {
		return nil, err
	}
	ix.handles[fi] = f
	return f, nil
}

// Close releases the open files.
func (ix *Index) Close() error {
	var first error
	for k, f := range ix.handles {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
		delete(ix.handles, k)
	}
	return first
}

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
