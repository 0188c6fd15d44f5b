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
	"strings"
	"sync"
	"sync/atomic"

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
}

// runIndex holds the summaries of every record of the run folders. It is
// filled in the background (Indexed tells how far it got), so the first
// page is served before a large run is fully read; readers take mu.
type runIndex struct {
	dirs  []*runDir
	files []string

	mu        sync.RWMutex
	recs      []summary
	byID      map[string]int
	dups      int
	err       error
	done      bool
	doneBytes atomic.Int64
	total     int64

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
	ix := &runIndex{byID: map[string]int{}, intern: map[string]string{}}
	for _, d := range dirs {
		m, ok := isRunFolder(d)
		if !ok {
			return nil, fmt.Errorf("%s: not a run folder", d)
		}
		planned := len(m.Plan.ScenarioIDs) * m.Plan.Rollouts
		ix.dirs = append(ix.dirs, &runDir{Path: d, Manifest: m, Planned: planned})
		names, err := filepath.Glob(filepath.Join(d, "trajectories", "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, n := range names {
			st, err := os.Stat(n)
			if err != nil {
				return nil, err
			}
			ix.total += st.Size()
			ix.files = append(ix.files, n)
		}
	}
	return ix, nil
}

// fileDir maps a file index to its run folder index.
func (ix *runIndex) fileDir(f int) int {
	d := filepath.Dir(filepath.Dir(ix.files[f]))
	for i, rd := range ix.dirs {
		if filepath.Clean(rd.Path) == filepath.Clean(d) {
			return i
		}
	}
	return 0
}

// build reads every file in order; lines are decoded in parallel and
// appended in file and line order, so the index order does not depend on
// the number of cores.
func (ix *runIndex) build() {
	err := func() error {
		for fi := range ix.files {
			if err := ix.indexFile(fi); err != nil {
				return err
			}
		}
		return nil
	}()
	ix.mu.Lock()
	ix.err = err
	ix.done = true
	ix.intern = nil
	ix.mu.Unlock()
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

func (ix *runIndex) indexFile(fi int) error {
	name := ix.files[fi]
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	dir := ix.fileDir(fi)

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
		var off int64
		line, seq := 0, 0
		b := &lineBatch{}
		for {
			l, err := r.ReadBytes('\n')
			if len(l) > 0 {
				line++
				n := int64(len(l))
				if l[len(l)-1] != '\n' {
					// An incomplete last line: a run still writing, or killed.
					break
				}
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
	return firstErr
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
	f, err := os.Open(ix.files[s.file])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, s.n)
	if _, err := f.ReadAt(buf, s.off); err != nil {
		return nil, fmt.Errorf("%s: %w", ix.files[s.file], err)
	}
	rec := &trajectory.Record{}
	if err := json.Unmarshal(buf, rec); err != nil {
		return nil, fmt.Errorf("%s: %w", ix.files[s.file], err)
	}
	if rec.TrajID != s.TrajID {
		return nil, fmt.Errorf("%s: changed while being read (a run still writing?)", ix.files[s.file])
	}
	if ix.relabel != nil {
		if _, err := ix.relabel(rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// progress says how much of the run folders is indexed.
type progress struct {
	Done       bool   `json:"done"`
	Bytes      int64  `json:"bytes"`
	TotalBytes int64  `json:"total_bytes"`
	Records    int    `json:"records"`
	Duplicates int    `json:"duplicates"`
	Error      string `json:"error,omitempty"`
}

func (ix *runIndex) progressLocked() progress {
	p := progress{Done: ix.done, Bytes: ix.doneBytes.Load(), TotalBytes: ix.total, Records: len(ix.recs), Duplicates: ix.dups}
	if ix.err != nil {
		p.Error = ix.err.Error()
	}
	return p
}

// lowerContains reports whether hay, lower-cased, contains needle (already
// lower-cased), reusing buf.
func lowerContains(hay []byte, needle []byte, buf *[]byte) bool {
	b := (*buf)[:0]
	for _, c := range hay {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	*buf = b
	return bytes.Contains(b, needle)
}

// jsonSafe reports whether s is written unescaped inside a JSON string by
// encoding/json, so that a raw-byte prefilter cannot miss it.
func jsonSafe(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 {
			return false
		}
	}
	return true
}

// messageText is the searchable text of a message: its content, reasoning
// and tool calls' names and arguments.
func messageText(m trajectory.Message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		b.WriteByte('\n')
		b.WriteString(c.Function.Name)
		b.WriteByte(' ')
		b.WriteString(c.Function.Arguments)
	}
	return b.String()
}
