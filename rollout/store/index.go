package store

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Index locates the trajectory records of run folders without keeping them
// in memory. OpenIndex reads every line of trajectories/*.jsonl once and
// keeps, per record, its identity (traj_id, run, checkpoint, framework,
// scenario_id, rollout, seed) and where its line is (file, line number,
// offset, length); the records themselves are read again, by position, when
// asked for.
//
// Memory: 40 bytes per record, 24 after Compact, up to spillEntries
// records (512 Ki); an index of more keeps its entries in a temporary
// file, sorted outside memory, and holds at most spillEntries of them
// (twice that while its buffer grows) while opening and sorting, and a
// 1.25 MiB cache of them afterwards, whatever the number of records
// (index_spill.go, BenchmarkIndexSpilled). The run, checkpoint,
// framework and scenario of a record are kept as one interned tuple (one
// copy of each distinct string and tuple); a traj_id is kept as 8 bytes
// when it has the form trajectory.TrajID gives it (16 lowercase hex digits)
// and as an interned string otherwise (in memory, spilled or not).
// Opening needs 5 more bytes per record while duplicates are dropped
// (unless spilled), and, while a large file is scanned on every core, the
// entries of one wave of its ranges (a range per core, at most 32 MiB of
// JSONL each) before they join the index. Compact drops what only Sort and
// Groups read (rollout, seed, the tuple): a reader that has ordered the
// index and taken its groups keeps 24 bytes a record while it writes.
//
// An Index is not safe for concurrent use, but for reading records once
// it is sorted and grouped: Load, LoadGroup, Each, EachAt and EachAtWith,
// Bytes, TrajID, Pos and Find may run at once.
type Index struct {
	// Dirs are the run folders, as given.
	Dirs []string
	// Manifests are their manifests, in the order of Dirs.
	Manifests []Manifest
	// Records counts the records indexed from each folder (duplicates
	// dropped).
	Records []int
	// Scanned counts the records read from each folder, duplicates included.
	Scanned []int
	// Duplicates counts copies of an episode already indexed (same traj_id:
	// a run given twice, or shards beside their merge), dropped; the first
	// copy, in the order of Dirs and then of file names and lines, is kept.
	Duplicates int

	files     []string
	fileDir   []int
	handles   []*os.File
	handlesMu sync.Mutex      // handles are opened on first read
	entries   []entry         // until Compact; while opening, those not yet spilled
	slots     []slot          // after Compact
	runs      *entryRuns      // while opening, the entries spilled (index_spill.go)
	disk      *entryFile      // a spilled index's entries, in place of entries and slots
	compact   bool            // Compact was called
	idents    interner[ident] // their maps only while opening
	strs      interner[string]
}

// slot is where a record's line is, and its traj_id: what reading the
// record back and naming it need.
type slot struct {
	// loc is the file's number (bits 40–62), the line's byte offset in it
	// (bits 0–39) and, in bit 63, whether id holds a strs index (a traj_id
	// not of the compact form) rather than the traj_id's 8 bytes.
	loc  uint64
	id   [8]byte
	n    int32 // line length, newline included
	line int32
}

const (
	offBits    = 40
	maxOff     = 1<<offBits - 1
	maxFiles   = 1 << (63 - offBits)
	idInterned = 1 << 63
)

func (s *slot) off() int64  { return int64(s.loc & maxOff) }
func (s *slot) file() int32 { return int32(s.loc &^ idInterned >> offBits) }

// idStr is the strs index of a traj_id kept as a string, or -1.
func (s *slot) idStr() int32 {
	if s.loc&idInterned == 0 {
		return -1
	}
	return int32(binary.LittleEndian.Uint32(s.id[:4]))
}

func (s *slot) setIDStr(v int32) {
	s.loc |= idInterned
	s.id = [8]byte{}
	binary.LittleEndian.PutUint32(s.id[:4], uint32(v))
}

// ident is a record's run, checkpoint, framework and scenario, as strs
// indexes: interned once per distinct tuple.
type ident struct{ run, checkpoint, framework, scenario int32 }

// entry is one record line as scanned and sorted: its slot, and what only
// Sort and Groups read.
type entry struct {
	slot
	seed    int64
	ident   int32 // ix.idents index
	rollout int32
}

// Key is the identity of an indexed record.
type Key struct {
	TrajID     string
	Run        string
	Checkpoint string
	Framework  string
	ScenarioID string
	Rollout    int
	Seed       int64
}

// Field names a part of Key, for Sort and Groups.
type Field int

// Fields.
const (
	ByTrajID Field = iota
	ByRun
	ByCheckpoint
	ByFramework
	ByScenario
	ByRollout
	BySeed
)

// Group is a run of consecutive positions [From, To) of the index, in its
// current order, that share a field's value.
type Group struct{ From, To int }

// OpenIndex reads the run folders' manifests and indexes their trajectories
// (trajectories/*.jsonl, files in name order; errors/ holds infrastructure
// failures, which are not trajectories). The index is in reading order
// until sorted. Blank lines are skipped. A folder without manifest.json, an
// unreadable file, a line that is not a record (not a JSON object, or no
// traj_id or scenario_id) or an incomplete last line (a run still writing,
// or killed) is an error naming the file and line. A record whose traj_id
// was already read is a copy of the same episode: it is dropped and counted
// in Duplicates.
//
// Only the identity fields, which records list first, are read while
// indexing; the rest of a line is checked when the record is loaded.
func OpenIndex(dirs ...string) (*Index, error) {
	ix := &Index{Dirs: dirs}
	for di, d := range dirs {
		m, err := ReadManifest(d)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s is not a run folder (no %s)", d, manifestName)
			}
			return nil, err
		}
		ix.Manifests = append(ix.Manifests, m)
		fs, err := filepath.Glob(filepath.Join(d, trajDir, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(fs)
		n := 0
		for _, f := range fs {
			k, err := ix.scan(f, di)
			if err != nil {
				ix.discard()
				return nil, err
			}
			n += k
		}
		ix.Scanned = append(ix.Scanned, n)
	}
	ix.strs.ids, ix.idents.ids = nil, nil
	ix.handles = make([]*os.File, len(ix.files))
	if err := ix.dedup(); err != nil {
		ix.discard()
		return nil, err
	}
	return ix, nil
}

// incomplete is the message for a line without its newline.
const incomplete = "incomplete last line (a run still writing, or killed: rerun it to repair)"

// scanChunk is the least share of a file one scanning goroutine takes (a
// variable for tests):
// smaller files are scanned by one.
var scanChunk int64 = 8 << 20

// scanWave is the most a scanning goroutine takes of a file at once (a
// variable for tests): a larger file is scanned in waves of one range per
// core, each joined to the index before the next. 32 MiB of JSONL is some
// 2,700 records of the benchmark run's, and 190,000 (7.5 MB of entries)
// of records that hold only their identity.
var scanWave int64 = 32 << 20

// scan indexes one trajectory file and returns the number of records read.
// A large file is cut at line starts into ranges (one per core, or more
// of at most scanWave bytes), scanned in parallel a wave of one per core
// at a time; the ranges' entries are joined in file order, with the same
// entries, line numbers and first error as scanning the file line by line.
func (ix *Index) scan(path string, dir int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if len(ix.files) >= maxFiles {
		return 0, fmt.Errorf("%s: too many trajectory files (more than %d)", path, maxFiles)
	}
	fileNo := int32(len(ix.files))
	ix.files = append(ix.files, path)
	ix.fileDir = append(ix.fileDir, dir)
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	workers := int64(runtime.GOMAXPROCS(0))
	bounds, err := lineBounds(f, st.Size(), int(max(min(workers, st.Size()/scanChunk), st.Size()/scanWave)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	ranges := len(bounds) - 1
	n, lines := 0, 0
	// A wave of ranges, one per core, is scanned and joined at a time:
	// what is held besides the index is a wave's entries.
	for from := 0; from < ranges; from += int(workers) {
		parts := make([]scanned, min(int(workers), ranges-from))
		var wg sync.WaitGroup
		for k := range parts {
			i := from + k
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The last range runs to the end of the file as it is read:
				// a file still growing is read as far as one reader would.
				size := bounds[i+1] - bounds[i]
				if i == ranges-1 {
					size = math.MaxInt64 - bounds[i]
				}
				parts[k] = scanRange(io.NewSectionReader(f, bounds[i], size), bounds[i])
			}()
		}
		wg.Wait()
		k, err := ix.join(parts, path, fileNo, &lines)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// join adds the entries of a file's scanned ranges, in order, to the
// index; lines counts the file's lines before them, and is advanced.
func (ix *Index) join(parts []scanned, path string, fileNo int32, lines *int) (int, error) {
	total := 0
	for _, p := range parts {
		total += p.entries.len()
	}
	// once, not by doubling (up to what spilling holds)
	ix.entries = slices.Grow(ix.entries, min(total, max(0, spillEntries-len(ix.entries))))
	n := 0
	for pi := range parts {
		p := &parts[pi]
		remap := make([]int32, len(p.strs.vals))
		for i, s := range p.strs.vals {
			remap[i] = ix.strs.id(s)
		}
		identRemap := make([]int32, len(p.idents.vals))
		for i, d := range p.idents.vals {
			identRemap[i] = ix.idents.id(ident{run: remap[d.run], checkpoint: remap[d.checkpoint],
				framework: remap[d.framework], scenario: remap[d.scenario]})
		}
		for bi, block := range p.entries {
			for _, e := range block {
				line := *lines + int(e.line)
				if line > math.MaxInt32 {
					return n, fmt.Errorf("%s:%d: line too long, or too many lines", path, line)
				}
				if e.loc&^idInterned > maxOff {
					return n, fmt.Errorf("%s:%d: offset past %d bytes: files that large are not indexed", path, line, int64(maxOff))
				}
				idStr := e.idStr()
				e.line, e.loc = int32(line), uint64(fileNo)<<offBits|e.loc&maxOff
				if idStr >= 0 {
					e.setIDStr(remap[idStr])
				}
				e.ident = identRemap[e.ident]
				if err := ix.add(e); err != nil {
					return n, err
				}
				n++
			}
			p.entries[bi] = nil // joined: the block's copy can go
		}
		if p.fail != nil {
			return n, p.fail(path, *lines+p.failLine)
		}
		*lines += p.lines
	}
	return n, nil
}

// lineBounds cuts a file of size bytes into at most n ranges that start
// at line starts: the offsets [0, …, size], without repeats.
func lineBounds(f io.ReaderAt, size int64, n int) ([]int64, error) {
	bounds := []int64{0}
	buf := make([]byte, 64<<10)
	for k := 1; k < n; k++ {
		at := max(size*int64(k)/int64(n), bounds[len(bounds)-1])
		// The next line starts after the first newline at or after at-1.
		next := size
		for pos := at - 1; pos < size; pos += int64(len(buf)) {
			m, err := f.ReadAt(buf, pos)
			if i := bytes.IndexByte(buf[:m], '\n'); i >= 0 {
				next = pos + int64(i) + 1
				break
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
		}
		if next >= size {
			break
		}
		if next > bounds[len(bounds)-1] {
			bounds = append(bounds, next)
		}
	}
	return append(bounds, size), nil
}

// scanned is what scanning a range of a file gives: its entries, with line
// numbers counted from the range's start and strings indexing strs, the
// lines it holds, and the first failure with its line (fail makes the
// error from the file's path and the line's number in the file).
type scanned struct {
	entries  entryBlocks
	strs     interner[string]
	idents   interner[ident]
	lines    int
	fail     func(path string, line int) error
	failLine int
}

// scanRange indexes the lines of r, which starts at offset base of its
// file.
func scanRange(r io.Reader, base int64) scanned {
	var out scanned
	failAt := func(line int, f func(path string, line int) error) scanned {
		out.fail, out.failLine = f, line
		return out
	}
	br := bufio.NewReaderSize(r, 1<<20)
	off := base
	var long []byte
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer
			long = append(long[:0], b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if len(b) == 0 && err == io.EOF {
			return out
		}
		if err != nil && err != io.EOF {
			return failAt(line, func(path string, line int) error { return fmt.Errorf("%s:%d: %w", path, line, err) })
		}
		if b[len(b)-1] != '\n' {
			return failAt(line, func(path string, line int) error {
				return fmt.Errorf("%s:%d: %s%s", path, line, incomplete, repairHint(path))
			})
		}
		out.lines = line
		start := off
		off += int64(len(b))
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if len(b) > math.MaxInt32 || line > math.MaxInt32 {
			return failAt(line, func(path string, line int) error {
				return fmt.Errorf("%s:%d: line too long, or too many lines", path, line)
			})
		}
		k, err := readKeys(b)
		if err == nil {
			var missing []string
			for _, f := range [][2]string{{"traj_id", k.TrajID}, {"scenario_id", k.ScenarioID}} {
				if f[1] == "" {
					missing = append(missing, f[0])
				}
			}
			if len(missing) > 0 {
				err = fmt.Errorf("missing %s", joinAnd(missing))
			}
		}
		if err == nil && k.Rollout < 0 {
			err = fmt.Errorf("rollout %d is negative", k.Rollout)
		}
		if err == nil && (k.Rollout < math.MinInt32 || k.Rollout > math.MaxInt32) {
			err = fmt.Errorf("rollout %d out of range", k.Rollout)
		}
		if err != nil {
			return failAt(line, func(path string, line int) error {
				return fmt.Errorf("%s:%d: not a trajectory record: %v%s", path, line, err, repairHint(path))
			})
		}
		// The offset alone until the range joins the index (scan checks
		// it fits and adds the file's number); the strings and the tuple
		// index the range's own tables until then.
		e := entry{slot: slot{loc: uint64(start), line: int32(line), n: int32(len(b))}, seed: k.Seed, rollout: int32(k.Rollout),
			ident: out.idents.id(ident{run: out.strs.id(k.Run), checkpoint: out.strs.id(k.Checkpoint),
				framework: out.strs.id(k.Framework), scenario: out.strs.id(k.ScenarioID)})}
		if !compactID(k.TrajID, &e.id) {
			e.setIDStr(out.strs.id(k.TrajID))
		}
		out.entries.add(e)
	}
}

// entryBlocks holds a range's entries in blocks of entryBlock: growing
// them copies nothing and leaves at most one block part-filled, where one
// slice grown by appending would hold up to twice its entries while it
// grows. The scan's peak is then the index plus one copy of its entries
// (a million records: 128 MB, not the 180 MB it was).
type entryBlocks [][]entry

const entryBlock = 8192 // 512 KiB of entries

// add appends e; the first block grows by appending up to entryBlock (a
// small file's range costs what its entries take), the others are made
// whole.
func (b *entryBlocks) add(e entry) {
	n := len(*b)
	switch {
	case n == 0:
		*b = append(*b, make([]entry, 0, 16))
		n++
	case len((*b)[n-1]) >= entryBlock:
		*b = append(*b, make([]entry, 0, entryBlock))
		n++
	}
	(*b)[n-1] = append((*b)[n-1], e)
}

func (b entryBlocks) len() int {
	if len(b) == 0 {
		return 0
	}
	return (len(b)-1)*entryBlock + len(b[len(b)-1])
}

// interner numbers distinct values in the order they are first given.
type interner[K comparable] struct {
	ids  map[K]int32
	vals []K // vals[id] is the value numbered id
}

func (in *interner[K]) id(k K) int32 {
	if v, ok := in.ids[k]; ok {
		return v
	}
	if in.ids == nil {
		in.ids = map[K]int32{}
	}
	v := int32(len(in.vals))
	in.ids[k] = v
	in.vals = append(in.vals, k)
	return v
}

// compactID decodes a traj_id of 16 lowercase hex digits into id.
func compactID(s string, id *[8]byte) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(id[:], []byte(s))
	return err == nil
}

type keyFields struct {
	TrajID     string `json:"traj_id"`
	Run        string `json:"run"`
	Checkpoint string `json:"checkpoint"`
	Framework  string `json:"framework"`
	ScenarioID string `json:"scenario_id"`
	Rollout    int    `json:"rollout"`
	Seed       int64  `json:"seed"`
}

// readKeys reads the identity fields of a record line. Records list them
// first, so the line is read only as far as they go.
func readKeys(b []byte) (keyFields, error) {
	if k, ok := readKeysFast(b); ok {
		return k, nil
	}
	return readKeysJSON(b)
}

// field points to the identity field a member's key names (*string, *int
// or *int64), or is nil for another key.
func (k *keyFields) field(key string) any {
	switch key {
	case "traj_id":
		return &k.TrajID
	case "run":
		return &k.Run
	case "checkpoint":
		return &k.Checkpoint
	case "framework":
		return &k.Framework
	case "scenario_id":
		return &k.ScenarioID
	case "rollout":
		return &k.Rollout
	case "seed":
		return &k.Seed
	}
	return nil
}

// readKeysFast reads the identity fields of a line as our writer lays them
// out: compact JSON whose first members have plain string keys and plain
// string or integer values. It gives up (ok false) on anything else, for
// readKeysJSON to decide; when it succeeds its fields are readKeysJSON's.
func readKeysFast(b []byte) (k keyFields, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		return k, false
	}
	i, found := 1, 0
	for found < 7 {
		if found > 0 || i > 1 {
			if i >= len(b) || b[i] != ',' {
				return k, false
			}
			i++
		}
		key, j, ok := plainString(b, i)
		if !ok || j >= len(b) || b[j] != ':' {
			return k, false
		}
		i = j + 1
		switch dst := k.field(string(key)).(type) {
		case *string:
			v, j, ok := plainString(b, i)
			if !ok {
				return k, false
			}
			*dst, i = string(v), j
		case *int:
			v, j, ok := plainInt(b, i)
			if !ok || int64(int(v)) != v {
				return k, false
			}
			*dst, i = int(v), j
		case *int64:
			v, j, ok := plainInt(b, i)
			if !ok {
				return k, false
			}
			*dst, i = v, j
		default: // another member: a plain string, or the slow path
			_, j, ok := plainString(b, i)
			if !ok {
				return k, false
			}
			i = j
			continue
		}
		found++
	}
	return k, true
}

// plainString reads a JSON string at b[i] that holds no escape, no control
// character and only valid UTF-8 (so that its bytes are its value), and
// returns it and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	v := b[i+1 : i+1+end]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return nil, 0, false
		}
	}
	if !utf8.Valid(v) {
		return nil, 0, false
	}
	return v, i + end + 2, true
}

// plainInt reads a JSON integer at b[i] (an optional minus, then 0 or
// digits without a leading zero, no fraction or exponent) that fits an
// int64, and returns it and the index after it.
func plainInt(b []byte, i int) (int64, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	d := j
	for j < len(b) && b[j]-'0' < 10 {
		j++
	}
	if j == d || j-d > 19 || (b[d] == '0' && j-d > 1) {
		return 0, 0, false // no digits, a leading zero, or past int64
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, 0, false
	}
	v, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	return v, j, err == nil
}

// readKeysJSON is readKeys through encoding/json's tokenizer, the
// reference for every line.
func readKeysJSON(b []byte) (keyFields, error) {
	var k keyFields
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return k, errors.New("not a JSON object")
	}
	const all = 7
	found := 0
	for found < all && dec.More() {
		t, err := dec.Token()
		if err != nil {
			return k, err
		}
		name, _ := t.(string)
		dst := k.field(name)
		if dst == nil {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return k, err
			}
			continue
		}
		if err := dec.Decode(dst); err != nil {
			return k, fmt.Errorf("%s: %w", t, err)
		}
		found++
	}
	return k, nil
}

// dedup drops every record whose traj_id an earlier one of another folder
// has, keeping the reading order, and counts the records kept per folder.
// Two copies in one folder are refused (ErrDuplicate).
func (ix *Index) dedup() error {
	if ix.runs != nil {
		return ix.dedupSpilled()
	}
	perm := make([]int32, len(ix.entries))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if c := ix.compareID(&ix.entries[a].slot, &ix.entries[b].slot); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	drop := make([]bool, len(ix.entries))
	for i := 1; i < len(perm); i++ {
		if ix.compareID(&ix.entries[perm[i-1]].slot, &ix.entries[perm[i]].slot) == 0 {
			a, b := &ix.entries[perm[i-1]].slot, &ix.entries[perm[i]].slot
			if da := ix.fileDir[a.file()]; da == ix.fileDir[b.file()] {
				return duplicateError(ix.files[b.file()], int(b.line), ix.trajID(b), ix.files[a.file()], int(a.line), ix.Dirs[da])
			}
			drop[perm[i]] = true
			ix.Duplicates++
		}
	}
	ix.Records = make([]int, len(ix.Dirs))
	kept := ix.entries[:0]
	for i, e := range ix.entries {
		if !drop[i] {
			kept = append(kept, e)
			ix.Records[ix.fileDir[e.file()]]++
		}
	}
	ix.entries = slices.Clip(kept)
	return nil
}

// compareID orders traj_ids as strings.
func (ix *Index) compareID(a, b *slot) int {
	as, bs := a.idStr(), b.idStr()
	switch {
	case as < 0 && bs < 0:
		return bytes.Compare(a.id[:], b.id[:])
	case as >= 0 && bs >= 0:
		if as == bs {
			return 0
		}
		return cmp.Compare(ix.strs.vals[as], ix.strs.vals[bs])
	}
	return cmp.Compare(ix.trajID(a), ix.trajID(b))
}

func (ix *Index) trajID(s *slot) string {
	if v := s.idStr(); v >= 0 {
		return ix.strs.vals[v]
	}
	return hex.EncodeToString(s.id[:])
}

// slot is the slot of the record at position i.
func (ix *Index) slot(i int) slot {
	switch {
	case ix.disk != nil:
		return ix.disk.at(i).slot
	case ix.compact:
		return ix.slots[i]
	}
	return ix.entries[i].slot
}

// entry is the entry at position i, before Compact.
func (ix *Index) entry(i int) entry {
	if ix.disk != nil {
		return ix.disk.at(i)
	}
	return ix.entries[i]
}

// Len is the number of records indexed.
func (ix *Index) Len() int {
	switch {
	case ix.disk != nil:
		return ix.disk.n
	case ix.compact:
		return len(ix.slots)
	}
	return len(ix.entries)
}

// Compact drops what only Sort and Groups read, keeping, per record, where
// its line is and its traj_id (24 bytes a record rather than 40): for a
// reader that has ordered the index and taken its groups, before it holds
// anything else. Sort and Groups may not be called after it; Key then reads
// the record's line for its identity.
func (ix *Index) Compact() {
	if ix.compact {
		return
	}
	ix.compact = true
	if ix.disk != nil {
		return // read from the file as before
	}
	ix.slots = make([]slot, len(ix.entries))
	for i := range ix.entries {
		ix.slots[i] = ix.entries[i].slot
	}
	ix.entries = nil
}

func (ix *Index) compacted(what string) {
	if ix.compact {
		panic("store: " + what + " on a compacted Index")
	}
}

// Key returns the identity of the record at position i. After Compact it
// reads the record's identity fields from its line; if that fails, only
// TrajID is set.
func (ix *Index) Key(i int) Key {
	if ix.compact {
		s := ix.slot(i)
		k := Key{TrajID: ix.trajID(&s)}
		b, err := ix.read(i, nil)
		if err != nil {
			return k
		}
		f, err := readKeys(b)
		if err != nil || f.TrajID != k.TrajID {
			return k
		}
		return Key{TrajID: f.TrajID, Run: f.Run, Checkpoint: f.Checkpoint, Framework: f.Framework,
			ScenarioID: f.ScenarioID, Rollout: f.Rollout, Seed: f.Seed}
	}
	e := ix.entry(i)
	d := ix.idents.vals[e.ident]
	return Key{TrajID: ix.trajID(&e.slot), Run: ix.strs.vals[d.run], Checkpoint: ix.strs.vals[d.checkpoint], Framework: ix.strs.vals[d.framework],
		ScenarioID: ix.strs.vals[d.scenario], Rollout: int(e.rollout), Seed: e.seed}
}

// TrajID is the traj_id of the record at position i, read from the index
// (compacted or not) without reading the record.
func (ix *Index) TrajID(i int) string {
	s := ix.slot(i)
	return ix.trajID(&s)
}

// Pos names the file and line of the record at position i.
func (ix *Index) Pos(i int) (file string, line int) {
	s := ix.slot(i)
	return ix.files[s.file()], int(s.line)
}

// Find returns the position of a traj_id, or -1.
func (ix *Index) Find(trajID string) int {
	var id [8]byte
	compact := compactID(trajID, &id)
	for i := range ix.Len() {
		s := ix.slot(i)
		if v := s.idStr(); compact && v < 0 && s.id == id || !compact && v >= 0 && ix.strs.vals[v] == trajID {
			return i
		}
	}
	return -1
}

// Sort orders the index by the fields given, strings by value, then by
// traj_id; traj_ids are unique, so the order is total and never depends on
// the order records were written in. It fails only when a spilled index
// cannot write or read its temporary files.
func (ix *Index) Sort(fields ...Field) error {
	ix.compacted("Sort")
	for _, f := range fields {
		if f < ByTrajID || f > BySeed {
			panic(fmt.Sprintf("store: Sort: unknown field %d", f))
		}
	}
	// rank[s] is the position of strs[s] among the sorted strings.
	order := make([]int32, len(ix.strs.vals))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(ix.strs.vals[a], ix.strs.vals[b]) })
	rank := make([]int32, len(order))
	for r, s := range order {
		rank[s] = int32(r)
	}
	cmpEntries := func(a, b *entry) int {
		da, db := &ix.idents.vals[a.ident], &ix.idents.vals[b.ident]
		for _, f := range fields {
			var c int
			switch f {
			case ByTrajID:
				c = ix.compareID(&a.slot, &b.slot)
			case ByRun:
				c = cmp.Compare(rank[da.run], rank[db.run])
			case ByCheckpoint:
				c = cmp.Compare(rank[da.checkpoint], rank[db.checkpoint])
			case ByFramework:
				c = cmp.Compare(rank[da.framework], rank[db.framework])
			case ByScenario:
				c = cmp.Compare(rank[da.scenario], rank[db.scenario])
			case ByRollout:
				c = cmp.Compare(a.rollout, b.rollout)
			case BySeed:
				c = cmp.Compare(a.seed, b.seed)
			}
			if c != 0 {
				return c
			}
		}
		return ix.compareID(&a.slot, &b.slot)
	}
	if ix.disk != nil {
		return ix.sortSpilled(cmpEntries)
	}
	slices.SortFunc(ix.entries, func(a, b entry) int { return cmpEntries(&a, &b) })
	return nil
}

// Groups splits the index, in its current order, into runs of consecutive
// records with the same value of f (after Sort(f, ...), one group per
// value).
func (ix *Index) Groups(f Field) []Group {
	ix.compacted("Groups")
	same := func(a, b *entry) bool {
		da, db := &ix.idents.vals[a.ident], &ix.idents.vals[b.ident]
		switch f {
		case ByTrajID:
			return ix.compareID(&a.slot, &b.slot) == 0
		case ByRun:
			return da.run == db.run
		case ByCheckpoint:
			return da.checkpoint == db.checkpoint
		case ByFramework:
			return da.framework == db.framework
		case ByScenario:
			return da.scenario == db.scenario
		case ByRollout:
			return a.rollout == b.rollout
		case BySeed:
			return a.seed == b.seed
		}
		panic(fmt.Sprintf("store: Groups: unknown field %d", f))
	}
	var gs []Group
	n := ix.Len()
	for i := 0; i < n; {
		first := ix.entry(i)
		j := i + 1
		for ; j < n; j++ {
			if e := ix.entry(j); !same(&first, &e) {
				break
			}
		}
		gs = append(gs, Group{From: i, To: j})
		i = j
	}
	return gs
}

// Load reads the record at position i.
func (ix *Index) Load(i int) (*trajectory.Record, error) {
	rec := &trajectory.Record{}
	return rec, ix.load(i, rec, nil)
}

// LoadGroup reads the records of a group, in index order.
func (ix *Index) LoadGroup(g Group) ([]*trajectory.Record, error) {
	out := make([]*trajectory.Record, 0, g.To-g.From)
	err := ix.eachAt(g.To-g.From, func(k int) int { return g.From + k }, DecodeRecord, func(_ int, rec *trajectory.Record) error {
		r := *rec
		out = append(out, &r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each reads the records in index order: the record passed to fn is
// overwritten by the next. It stops at fn's first error.
func (ix *Index) Each(fn func(i int, rec *trajectory.Record) error) error {
	return ix.eachAt(ix.Len(), func(k int) int { return k }, DecodeRecord, fn)
}

// load decodes the record at position i into rec, reading through *buf
// when given.
func (ix *Index) load(i int, rec *trajectory.Record, buf *[]byte) error {
	b, err := ix.read(i, buf)
	if err != nil {
		return err
	}
	return ix.decodeWith(i, b, rec, DecodeRecord)
}

// read reads the line of the record at position i, through *buf when
// given.
func (ix *Index) read(i int, buf *[]byte) ([]byte, error) {
	e := ix.slot(i)
	name := ix.files[e.file()]
	f, err := ix.handle(e.file())
	if err != nil {
		return nil, err
	}
	var b []byte
	if buf != nil {
		b = *buf
	}
	if cap(b) < int(e.n) {
		b = make([]byte, e.n)
	}
	b = b[:e.n]
	if buf != nil {
		*buf = b
	}
	if _, err := f.ReadAt(b, e.off()); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, e.line, err)
	}
	return b, nil
}

// handle is the open file of trajectory file number n.
func (ix *Index) handle(n int32) (*os.File, error) {
	ix.handlesMu.Lock()
	defer ix.handlesMu.Unlock()
	if f := ix.handles[n]; f != nil {
		return f, nil
	}
	f, err := os.Open(ix.files[n])
	if err != nil {
		return nil, err
	}
	ix.handles[n] = f
	return f, nil
}

// decodeWith decodes the line b of the record at position i into rec with
// decode; it is safe for concurrent use.
func (ix *Index) decodeWith(i int, b []byte, rec *trajectory.Record, decode func([]byte, *trajectory.Record) error) error {
	e := ix.slot(i)
	name := ix.files[e.file()]
	if err := decode(b, rec); err != nil {
		return fmt.Errorf("%s:%d: not a valid record: %w%s", name, e.line, err, repairHint(name))
	}
	if rec.TrajID != ix.trajID(&e) {
		return fmt.Errorf("%s:%d: changed while being read (a run still writing?)", name, e.line)
	}
	return nil
}

// Close releases the files opened to load records. The index stays usable:
// files are opened again when needed.
func (ix *Index) Close() error {
	ix.handlesMu.Lock()
	defer ix.handlesMu.Unlock()
	var first error
	for i, f := range ix.handles {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
		ix.handles[i] = nil
	}
	return first
}
