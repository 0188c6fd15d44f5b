package export

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// SplitPrompt cuts a conversation for unpaired and RL tables: the prompt is
// every message up to and including the first user message, the completion
// is the rest. Without a user message the prompt is the leading system
// messages.
func SplitPrompt(ms []trajectory.Message) (prompt, completion []trajectory.Message) {
	cut := -1
	for i, m := range ms {
		if m.Role == trajectory.RoleUser {
			cut = i + 1
			break
		}
	}
	if cut < 0 {
		cut = 0
		for cut < len(ms) && ms[cut].Role == trajectory.RoleSystem {
			cut++
		}
	}
	return ms[:cut], ms[cut:]
}

// DriftLabels returns the distinct drift types, violation kinds and
// provisions of a trajectory's drift matches, each sorted.
func DriftLabels(ms []drift.Match) (types, kinds, provisions []string) {
	t, k, p := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, m := range ms {
		if m.Drift != "" {
			t[string(m.Drift)] = true
		}
		if m.Kind != "" {
			k[string(m.Kind)] = true
		}
		for _, v := range m.Provisions {
			p[v] = true
		}
	}
	return sortedKeys(t), sortedKeys(k), sortedKeys(p)
}

func tools(rec *trajectory.Record) []json.RawMessage {
	if rec.Tools == nil {
		return []json.RawMessage{}
	}
	return rec.Tools
}

// TrajectoryRowOf is the trajectories-table row of a record.
func TrajectoryRowOf(rec *trajectory.Record, split string) TrajectoryRow {
	types, kinds, provs := DriftLabels(rec.Matches)
	steps := make([]int64, len(rec.DriftSteps))
	for i, s := range rec.DriftSteps {
		steps[i] = int64(s)
	}
	return TrajectoryRow{
		TrajID: rec.TrajID, Run: rec.Run, Checkpoint: rec.Checkpoint, Policy: rec.Policy, Framework: rec.Framework,
		ScenarioID: rec.ScenarioID, Domain: rec.Domain, Split: split, Rollout: rec.Rollout, Seed: rec.Seed,
		Messages: Messages(rec.Messages), Tools: tools(rec),
		Status: string(rec.Status), Success: rec.Success, Drift: rec.Drift, Clean: rec.Clean(),
		DriftSteps: steps, DriftTypes: types, ViolationKinds: kinds, Provisions: provs,
		JudgeKind: rec.Judge.Kind, JudgeScore: rec.Judge.Score, JudgeReason: rec.Judge.Reason,
		PromptTokens: int64(rec.Usage.PromptTokens), CompletionTokens: int64(rec.Usage.CompletionTokens),
		ToolkitVersion: rec.Version, SchemaVersion: SchemaVersion,
	}
}

// KTORowOf is the KTO row of a record: prompt and completion as SplitPrompt
// cuts them, label = clean (success and no drift).
func KTORowOf(rec *trajectory.Record, split string, reward float64) KTORow {
	p, c := SplitPrompt(rec.Messages)
	return KTORow{
		Prompt: Messages(p), Completion: Messages(c), Label: rec.Clean(), Tools: tools(rec),
		TrajID: rec.TrajID, ScenarioID: rec.ScenarioID, Domain: rec.Domain, Split: split, Checkpoint: rec.Checkpoint,
		Success: rec.Success, Drift: rec.Drift, Reward: reward, SchemaVersion: SchemaVersion,
	}
}

// recordRef locates one record line; rank fields order the export.
type recordRef struct {
	checkpoint, framework, scenario, run int32 // ranks of interned strings
	rollout                              int32
	seed                                 int64
	id                                   [8]byte // traj_id when it is 16 hex digits
	idStr                                int32   // rank of traj_id otherwise (-1 when id is used)
	file                                 int32
	line                                 int32
	off                                  int64
	n                                    int32
}

// RecordIndex locates the records of run folders and orders them by
// checkpoint, framework, scenario, rollout, seed, run and traj_id, so that
// an export never depends on the order episodes finished in. It holds about
// 64 bytes per record, never the records.
type RecordIndex struct {
	files      []string
	refs       []recordRef
	Runs       []ManifestRun
	Duplicates int // copies of an episode already indexed (same traj_id), dropped
}

type interner struct {
	ids  map[string]int32
	strs []string
}

func (in *interner) id(s string) int32 {
	if v, ok := in.ids[s]; ok {
		return v
	}
	v := int32(len(in.strs))
	in.ids[s] = v
	in.strs = append(in.strs, s)
	return v
}

// ranks maps interned ids to their rank in sorted order.
func (in *interner) ranks() []int32 {
	order := make([]int32, len(in.strs))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool { return in.strs[order[a]] < in.strs[order[b]] })
	r := make([]int32, len(order))
	for rank, id := range order {
		r[id] = int32(rank)
	}
	return r
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

// readKeys reads the sort fields of a record line. Records list them
// first, so the line is read only as far as they go (the whole record is
// decoded, and checked, when it is exported).
func readKeys(b []byte) (keyFields, error) {
	var k keyFields
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return k, errors.New("a record must be a JSON object")
	}
	const all = 7
	found := 0
	for found < all && dec.More() {
		t, err := dec.Token()
		if err != nil {
			return k, err
		}
		var dst any
		switch t {
		case "traj_id":
			dst = &k.TrajID
		case "run":
			dst = &k.Run
		case "checkpoint":
			dst = &k.Checkpoint
		case "framework":
			dst = &k.Framework
		case "scenario_id":
			dst = &k.ScenarioID
		case "rollout":
			dst = &k.Rollout
		case "seed":
			dst = &k.Seed
		default:
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

// IndexRuns scans the trajectories of run folders (dir/manifest.json and
// dir/trajectories/*.jsonl, as rollout/store writes them).
func IndexRuns(dirs ...string) (*RecordIndex, error) {
	idx := &RecordIndex{}
	strs := &interner{ids: map[string]int32{}}
	ids := &interner{ids: map[string]int32{}}
	for _, d := range dirs {
		m, err := store.ReadManifest(d)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s is not a run folder (no manifest.json)", d)
			}
			return nil, err
		}
		run := ManifestRun{Path: d, Run: m.Run, Checkpoint: m.Plan.Checkpoint, Policy: m.Plan.Policy,
			Framework: m.Plan.Framework, Seed: m.Plan.Seed, ScenarioHash: m.Plan.ScenarioHash}
		fs, err := filepath.Glob(filepath.Join(d, "trajectories", "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(fs)
		for _, f := range fs {
			n, err := idx.scanFile(f, strs, ids)
			if err != nil {
				return nil, err
			}
			run.Records += n
		}
		idx.Runs = append(idx.Runs, run)
	}
	sr, ir := strs.ranks(), ids.ranks()
	for i := range idx.refs {
		r := &idx.refs[i]
		r.checkpoint, r.framework, r.scenario, r.run = sr[r.checkpoint], sr[r.framework], sr[r.scenario], sr[r.run]
		if r.idStr >= 0 {
			r.idStr = ir[r.idStr]
		}
	}
	sort.SliceStable(idx.refs, func(i, j int) bool { return less(&idx.refs[i], &idx.refs[j]) })
	// A traj_id hashes every sort field, so copies of one episode (a run
	// given twice, say) sit side by side: keep the first.
	out := idx.refs[:0]
	for i, r := range idx.refs {
		if i > 0 && !less(&idx.refs[i-1], &r) {
			idx.Duplicates++
			continue
		}
		out = append(out, r)
	}
	idx.refs = out
	return idx, nil
}

func less(a, b *recordRef) bool {
	switch {
	case a.checkpoint != b.checkpoint:
		return a.checkpoint < b.checkpoint
	case a.framework != b.framework:
		return a.framework < b.framework
	case a.scenario != b.scenario:
		return a.scenario < b.scenario
	case a.rollout != b.rollout:
		return a.rollout < b.rollout
	case a.seed != b.seed:
		return a.seed < b.seed
	case a.run != b.run:
		return a.run < b.run
	case a.idStr != b.idStr:
		return a.idStr < b.idStr
	}
	return string(a.id[:]) < string(b.id[:])
}

func (idx *RecordIndex) scanFile(path string, strs, ids *interner) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fileNo := int32(len(idx.files))
	idx.files = append(idx.files, path)
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var n int64
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: read the rest.
			buf := append([]byte(nil), b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				buf = append(buf, b...)
			}
			b = buf
		}
		if len(b) == 0 && err == io.EOF {
			return n, nil
		}
		if err != nil && err != io.EOF {
			return n, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if b[len(b)-1] != '\n' {
			return n, fmt.Errorf("%s:%d: incomplete last line (a run still writing, or killed: rerun it to repair)", path, line)
		}
		start := off
		off += int64(len(b))
		if len(b) == 1 {
			continue
		}
		k, err := readKeys(b)
		if err != nil {
			return n, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if k.TrajID == "" {
			return n, fmt.Errorf("%s:%d: record without traj_id", path, line)
		}
		ref := recordRef{
			checkpoint: strs.id(k.Checkpoint), framework: strs.id(k.Framework), scenario: strs.id(k.ScenarioID), run: strs.id(k.Run),
			rollout: int32(k.Rollout), seed: k.Seed, idStr: -1, file: fileNo, line: int32(line), off: start, n: int32(len(b)),
		}
		if len(k.TrajID) == 16 {
			if _, err := hex.Decode(ref.id[:], []byte(k.TrajID)); err != nil {
				ref.idStr = ids.id(k.TrajID)
			}
		} else {
			ref.idStr = ids.id(k.TrajID)
		}
		idx.refs = append(idx.refs, ref)
		n++
	}
}

// Len returns the number of records.
func (idx *RecordIndex) Len() int { return len(idx.refs) }

// Each decodes the records in order, one at a time; the record passed to fn
// is overwritten by the next.
func (idx *RecordIndex) Each(fn func(rec *trajectory.Record) error) error {
	files := make([]*os.File, len(idx.files))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	var buf []byte
	var rec trajectory.Record
	for _, r := range idx.refs {
		f := files[r.file]
		if f == nil {
			var err error
			if f, err = os.Open(idx.files[r.file]); err != nil {
				return err
			}
			files[r.file] = f
		}
		if cap(buf) < int(r.n) {
			buf = make([]byte, r.n)
		}
		buf = buf[:r.n]
		if _, err := f.ReadAt(buf, r.off); err != nil {
			return fmt.Errorf("%s: %w", idx.files[r.file], err)
		}
		rec = trajectory.Record{}
		if err := json.Unmarshal(buf, &rec); err != nil {
			return fmt.Errorf("%s:%d: %w", idx.files[r.file], r.line, err)
		}
		if err := fn(&rec); err != nil {
			return err
		}
	}
	return nil
}
