package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// summary is what the list view needs of one record, kept in memory for
// every record; the record itself is read again from its line on demand.
// Strings are interned, so a summary costs about 150 bytes.
type summary struct {
	TrajID     string
	Run        string
	Checkpoint string
	Policy     string
	Framework  string
	Scenario   string
	Domain     string
	Status     string
	Rollout    int
	Seed       int64
	Success    bool
	Drift      bool
	Calls      int
	Tokens     int
	Types      []string // distinct drift types of the counted matches, sorted
	Kinds      []string // distinct violation kinds of the counted matches, sorted
	Provisions []string // distinct provisions of the counted matches, sorted

	dir  int   // index of the run folder
	file int32 // index into runIndex.files
	off  int64
	n    int32
}

// summaryLine is the part of a record line decoded while indexing: the
// message bodies are skipped.
type summaryLine struct {
	TrajID     string `json:"traj_id"`
	Run        string `json:"run"`
	Checkpoint string `json:"checkpoint"`
	Policy     string `json:"policy"`
	Framework  string `json:"framework"`
	ScenarioID string `json:"scenario_id"`
	Domain     string `json:"domain"`
	Rollout    int    `json:"rollout"`
	Seed       int64  `json:"seed"`
	Status     string `json:"status"`
	Success    bool   `json:"success"`
	Drift      bool   `json:"drift"`
	Steps      []struct {
		Calls []struct{} `json:"calls"`
	} `json:"steps"`
	Matches []drift.Match    `json:"drift_matches"`
	Usage   trajectory.Usage `json:"usage"`
	// Timings.Start tells a labeling whether it judged this record (a
	// record rolled out again since has another).
	Timings struct {
		Start string `json:"start"`
	} `json:"timings"`

	skip bool // left out by the labeling shown (relabel.go)
}

// runDir is one run folder given on the command line.
type runDir struct {
	Path     string         `json:"path"`
	Manifest store.Manifest `json:"manifest"`
	Records  int            `json:"records"`
	Planned  int            `json:"planned"`
	// State is how far the run is written (live.go): indexing, live,
	// finished or stopped.
	State string `json:"state"`
	runLabel

	written    int       // record lines read, listed or not (a labeling may leave some out)
	lastGrowth time.Time // when a record of this run was last indexed
}

// recFile is one records file of a run folder and how far it is indexed:
// off is the end of its last complete line, so a line still being written
// is read once it is whole.
type recFile struct {
	path   string
	dir    int
	off    int64
	line   int
	seen   int64 // the file's size last counted in runIndex.total
	failed bool  // a bad line or a shrunk file: no longer followed
}

// runIndex holds the summaries of every record of the run folders. It is
// filled in the background (Indexed tells how far it got), so the first
// page is served before a large run is fully read; readers take mu.
type runIndex struct {
	dirs []*runDir
	// files grows while runs are followed (mu); readers take a snapshot
	// (filesNow): an index into it never changes meaning.
	files []*recFile
	known map[string]bool // file paths in files (growMu)
	// growMu keeps indexing passes (the first build, each refresh) one at a
	// time; only they touch recFile.off, line and failed.
	growMu sync.Mutex

	mu        sync.RWMutex
	recs      []summary
	byID      map[string]int
	dups      int
	err       error
	done      bool
	doneBytes atomic.Int64
	total     atomic.Int64

	intern map[string]string // only while indexing

	// relabel, when set, is the labeling shown instead of the records'
	// own labels (relabel.go).
	relabel func(*trajectory.Record) (bool, error)
}

// isRunFolder reports whether dir holds a run: a manifest with a plan and a
// trajectories folder.
func isRunFolder(dir string) (store.Manifest, bool) {
	m, err := store.ReadManifest(dir)
	if err != nil || m.Plan.Policy == "" {
		return m, false
	}
	if st, err := os.Stat(filepath.Join(dir, "trajectories")); err != nil || !st.IsDir() {
		return m, false
	}
	return m, true
}

func newRunIndex(dirs []string) (*runIndex, error) {
	ix := &runIndex{byID: map[string]int{}, intern: map[string]string{}, known: map[string]bool{}}
	for _, d := range dirs {
		m, ok := isRunFolder(d)
		if !ok {
			return nil, fmt.Errorf("%s: not a run folder", d)
		}
		planned := len(m.Plan.ScenarioIDs) * m.Plan.Rollouts
		ix.dirs = append(ix.dirs, &runDir{Path: d, Manifest: m, Planned: planned, State: stateIndexing})
		if _, err := ix.addFiles(len(ix.dirs) - 1); err != nil {
			return nil, err
		}
	}
	labelRuns(ix.dirs)
	return ix, nil
}

// addFiles adds the records files of run folder d not yet known (a run
// starts a shard's file when it starts writing it) and reports how many.
// Callers hold growMu, or own ix alone.
func (ix *runIndex) addFiles(d int) (int, error) {
	names, err := filepath.Glob(filepath.Join(ix.dirs[d].Path, "trajectories", "*.jsonl"))
	if err != nil {
		return 0, err
	}
	sort.Strings(names)
	n := 0
	for _, name := range names {
		if ix.known[name] {
			continue
		}
		st, err := os.Stat(name)
		if err != nil {
			return n, err
		}
		ix.known[name] = true
		ix.total.Add(st.Size())
		ix.mu.Lock()
		ix.files = append(ix.files, &recFile{path: name, dir: d, seen: st.Size()})
		ix.mu.Unlock()
		n++
	}
	return n, nil
}

// filesNow is the records files known now; entries are never removed or
// reordered, so positions taken from it stay valid.
func (ix *runIndex) filesNow() []*recFile {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.files
}

// build reads every file in order; lines are decoded in parallel and
// appended in file and line order, so the index order does not depend on
// the number of cores.
func (ix *runIndex) build() {
	ix.growMu.Lock()
	err := func() error {
		for fi := range ix.filesNow() {
			if err := ix.indexFile(fi); err != nil {
				return err
			}
		}
		return nil
	}()
	ix.growMu.Unlock()
	ix.mu.Lock()
	ix.err = err
	ix.done = true
	ix.mu.Unlock()
	ix.updateStates(time.Now())
}

type lineBatch struct {
	seq   int
	offs  []int64
	lens  []int64
	lines [][]byte
	nums  []int
	out   []summaryLine
	err   error
}

// indexFile indexes the complete lines of file fi past what is indexed
// already. The caller holds growMu.
func (ix *runIndex) indexFile(fi int) error {
	rf := ix.filesNow()[fi]
	name := rf.path
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(rf.off, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dir := rf.dir
	startLine := rf.line
	var endOff int64
	var endLine int

	workers := runtime.GOMAXPROCS(0)
	in := make(chan *lineBatch, workers*2)
	out := make(chan *lineBatch, workers*2)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range in {
				b.out = make([]summaryLine, len(b.lines))
				for i, l := range b.lines {
					if err := json.Unmarshal(l, &b.out[i]); err != nil {
						b.err = fmt.Errorf("%s:%d: not a trajectory record: %v", name, b.nums[i], err)
						break
					}
					if b.out[i].TrajID == "" {
						b.err = fmt.Errorf("%s:%d: not a trajectory record (no traj_id)", name, b.nums[i])
						break
					}
					if err := ix.relabelLine(&b.out[i]); err != nil {
						b.err = fmt.Errorf("%s:%d: %v", name, b.nums[i], err)
						break
					}
				}
				b.lines = nil
				out <- b
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(in)
		r := bufio.NewReaderSize(f, 1<<20)
		off := rf.off
		line, seq := startLine, 0
		b := &lineBatch{}
		for {
			l, err := r.ReadBytes('\n')
			if len(l) > 0 {
				if l[len(l)-1] != '\n' {
					// An incomplete last line: a run still writing (read
					// again once whole), or killed.
					break
				}
				line++
				n := int64(len(l))
				if t := bytes.TrimSpace(l); len(t) > 0 {
					b.offs = append(b.offs, off)
					b.lens = append(b.lens, n)
					b.lines = append(b.lines, l)
					b.nums = append(b.nums, line)
					if len(b.lines) == 256 {
						b.seq = seq
						seq++
						in <- b
						b = &lineBatch{}
					}
				}
				off += n
				ix.doneBytes.Add(n)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				readErr <- fmt.Errorf("%s: %w", name, err)
				return
			}
		}
		if len(b.lines) > 0 {
			b.seq = seq
			in <- b
		}
		endOff, endLine = off, line
		readErr <- nil
	}()
	go func() { wg.Wait(); close(out) }()

	// Ordered merge of the batches.
	pending := map[int]*lineBatch{}
	next := 0
	var firstErr error
	for b := range out {
		pending[b.seq] = b
		for {
			nb, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if firstErr == nil && nb.err != nil {
				firstErr = nb.err
			}
			if firstErr == nil {
				ix.add(dir, fi, nb)
			}
		}
	}
	if err := <-readErr; err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		rf.failed = true
		return firstErr
	}
	rf.off, rf.line = endOff, endLine
	return nil
}

func (ix *runIndex) str(s string) string {
	if v, ok := ix.intern[s]; ok {
		return v
	}
	ix.intern[s] = s
	return s
}

func (ix *runIndex) strs(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, ix.str(s))
	}
	sort.Strings(out)
	return out
}

func (ix *runIndex) add(dir, fi int, b *lineBatch) {
	sums := make([]summary, 0, len(b.out))
	for i := range b.out {
		l := &b.out[i]
		if l.skip {
			continue
		}
		calls := 0
		for _, st := range l.Steps {
			calls += len(st.Calls)
		}
		types, kinds, provs := map[string]bool{}, map[string]bool{}, map[string]bool{}
		// Filters by type, kind and provision read the counted matches, as
		// the metrics do: each drifting call once by type.
		for _, m := range drift.Counted(l.Matches) {
			if m.Drift != "" {
				types[string(m.Drift)] = true
			}
			if m.Kind != "" {
				kinds[string(m.Kind)] = true
			}
			for _, p := range m.Provisions {
				provs[p] = true
			}
		}
		sums = append(sums, summary{
			TrajID: l.TrajID, Run: ix.str(l.Run), Checkpoint: ix.str(l.Checkpoint), Policy: ix.str(l.Policy),
			Framework: ix.str(l.Framework), Scenario: ix.str(l.ScenarioID), Domain: ix.str(l.Domain),
			Status: ix.str(l.Status), Rollout: l.Rollout, Seed: l.Seed, Success: l.Success, Drift: l.Drift,
			Calls: calls, Tokens: l.Usage.TotalTokens,
			Types: ix.strs(types), Kinds: ix.strs(kinds), Provisions: ix.strs(provs),
			dir: dir, file: int32(fi), off: b.offs[i], n: int32(b.lens[i]),
		})
	}
	ix.mu.Lock()
	ix.dirs[dir].written += len(b.out)
	ix.dirs[dir].lastGrowth = time.Now()
	for _, s := range sums {
		if _, dup := ix.byID[s.TrajID]; dup {
			ix.dups++
			continue
		}
		ix.byID[s.TrajID] = len(ix.recs)
		ix.recs = append(ix.recs, s)
		ix.dirs[dir].Records++
	}
	ix.mu.Unlock()
}

// load reads the full record of summary i.
func (ix *runIndex) load(s *summary) (*trajectory.Record, error) {
	name := ix.filesNow()[s.file].path
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, s.n)
	if _, err := f.ReadAt(buf, s.off); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rec := &trajectory.Record{}
	if err := json.Unmarshal(buf, rec); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if rec.TrajID != s.TrajID {
		return nil, fmt.Errorf("%s: changed while being read (a run still writing?)", name)
	}
	if ix.relabel != nil {
		if _, err := ix.relabel(rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// progress says how much of the run folders is indexed, and how many runs
// are being written (live), have written their whole plan (finished) or
// stopped short of it.
type progress struct {
	Done       bool   `json:"done"`
	Bytes      int64  `json:"bytes"`
	TotalBytes int64  `json:"total_bytes"`
	Records    int    `json:"records"`
	Duplicates int    `json:"duplicates"`
	Error      string `json:"error,omitempty"`
	Live       int    `json:"live"`
	Finished   int    `json:"finished"`
	Stopped    int    `json:"stopped"`
}

func (ix *runIndex) progressLocked() progress {
	p := progress{Done: ix.done, Bytes: ix.doneBytes.Load(), TotalBytes: ix.total.Load(), Records: len(ix.recs), Duplicates: ix.dups}
	if ix.err != nil {
		p.Error = ix.err.Error()
	}
	for _, d := range ix.dirs {
		switch d.State {
		case stateLive:
			p.Live++
		case stateFinished:
			p.Finished++
		case stateStopped:
			p.Stopped++
		}
	}
	return p
}
