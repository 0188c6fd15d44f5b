package store_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// ixRec is a record with the given identity; its traj_id is what
// trajectory.TrajID gives unless id is set.
func ixRec(id, run, ckpt, fw, sid string, rollout int, seed int64) *trajectory.Record {
	if id == "" {
		id = trajectory.TrajID(run, ckpt, fw, sid, rollout, seed)
	}
	return &trajectory.Record{TrajID: id, Run: run, Checkpoint: ckpt, Framework: fw, ScenarioID: sid, Rollout: rollout, Seed: seed,
		Status: trajectory.StatusCompleted, Messages: []trajectory.Message{{Role: "user", Content: "task " + id}}}
}

func ixLine(t *testing.T, r *trajectory.Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return string(b) + "\n"
}

// ixRun writes a run folder whose trajectory files hold the given text
// (file name → content) and returns its path.
func ixRun(t *testing.T, run string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(dir, store.Manifest{Version: "test", Run: run, Plan: store.Plan{Checkpoint: run}}))
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", name), []byte(text), 0o644))
	}
	return dir
}

func keys(ix *store.Index) []store.Key {
	out := make([]store.Key, ix.Len())
	for i := range out {
		out[i] = ix.Key(i)
	}
	return out
}

func TestIndexReadsRunFolders(t *testing.T) {
	r1, r2, r3 := ixRec("", "a", "ck", "normal", "s2", 0, 5), ixRec("", "a", "ck", "normal", "s1", 1, 6), ixRec("not-hex", "a", "ck", "react", "s1", 0, 7)
	a := ixRun(t, "a", map[string]string{
		// files are read in name order
		"part-1-of-2.jsonl": ixLine(t, r3),
		"part-0-of-2.jsonl": ixLine(t, r1) + "\n  \r\n" + ixLine(t, r2), // blank lines are skipped
	})
	require.NoError(t, os.MkdirAll(filepath.Join(a, "errors"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a, "errors", "part-0-of-1.jsonl"), []byte(ixLine(t, ixRec("", "a", "ck", "normal", "s9", 0, 1))), 0o644))
	b := ixRun(t, "b", map[string]string{"part-0-of-1.jsonl": ixLine(t, ixRec("", "b", "ck2", "normal", "s1", 0, 1))})
	empty := ixRun(t, "e", nil)

	ix, err := store.OpenIndex(a, empty, b)
	require.NoError(t, err)
	defer ix.Close()
	assert.Equal(t, []string{a, empty, b}, ix.Dirs)
	assert.Equal(t, "b", ix.Manifests[2].Run)
	assert.Equal(t, []int{3, 0, 1}, ix.Records)
	assert.Equal(t, []int{3, 0, 1}, ix.Scanned)
	assert.Zero(t, ix.Duplicates)
	require.Equal(t, 4, ix.Len(), "errors/ holds no trajectories")

	// reading order until sorted
	got := keys(ix)
	assert.Equal(t, store.Key{TrajID: r1.TrajID, Run: "a", Checkpoint: "ck", Framework: "normal", ScenarioID: "s2", Rollout: 0, Seed: 5}, got[0])
	assert.Equal(t, []string{r1.TrajID, r2.TrajID, "not-hex"}, []string{got[0].TrajID, got[1].TrajID, got[2].TrajID})

	f0 := filepath.Join(a, "trajectories", "part-0-of-2.jsonl")
	for i, want := range []struct {
		file string
		line int
	}{{f0, 1}, {f0, 4}, {filepath.Join(a, "trajectories", "part-1-of-2.jsonl"), 1}, {filepath.Join(b, "trajectories", "part-0-of-1.jsonl"), 1}} {
		file, line := ix.Pos(i)
		assert.Equal(t, want.file, file, "record %d", i)
		assert.Equal(t, want.line, line, "record %d", i)
	}
	rec, err := ix.Load(1)
	require.NoError(t, err)
	assert.Equal(t, r2.Messages, rec.Messages)
	assert.Equal(t, 2, ix.Find("not-hex"))
	assert.Equal(t, 1, ix.Find(r2.TrajID))
	assert.Equal(t, -1, ix.Find("0123456789abcdef"))

	// Close releases the files; the index stays usable.
	require.NoError(t, ix.Close())
	rec, err = ix.Load(2)
	require.NoError(t, err)
	assert.Equal(t, "not-hex", rec.TrajID)
}

func TestIndexErrors(t *testing.T) {
	good := ixLine(t, ixRec("", "a", "ck", "normal", "s1", 0, 1))
	full := ixLine(t, ixRec("", "a", "ck", "normal", "s1", 1, 1))
	for _, tc := range []struct {
		name, text, want string
	}{
		{"broken line", good + "{not json\n", ":2: not a trajectory record"},
		{"not an object", good + "[1,2]\n", ":2: not a trajectory record: not a JSON object"},
		{"no traj_id", "{}\n", ":1: not a trajectory record: missing traj_id and scenario_id"},
		{"no scenario_id", `{"traj_id":"x","run":"a"}` + "\n", ":1: not a trajectory record: missing scenario_id"},
		{"negative rollout", `{"traj_id":"x","run":"a","scenario_id":"s","rollout":-1}` + "\n", ":1: not a trajectory record: rollout -1 is negative"},
		{"two copies in one folder", good + good, ":2: duplicate traj_id"},
		{"torn line in the middle", good + full[:30] + "\n" + good, ":2: not a trajectory record"},
		{"incomplete last line", good + full[:len(full)-10], ":2: incomplete last line (a run still writing, or killed: rerun it to repair)"},
		{"incomplete only line", full[:len(full)-1], ":1: incomplete last line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": tc.text})
			_, err := store.OpenIndex(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")+tc.want)
		})
	}
	t.Run("not a run folder", func(t *testing.T) {
		dir := t.TempDir()
		_, err := store.OpenIndex(dir)
		require.Error(t, err)
		assert.Equal(t, dir+" is not a run folder (no manifest.json)", err.Error())
	})
	t.Run("broken after the identity fields", func(t *testing.T) {
		// The index reads a line only as far as the identity fields; the
		// rest is checked when the record is loaded, still with file:line.
		bad := full[:strings.Index(full, `"messages"`)] + "oops\n"
		dir := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": good + bad})
		ix, err := store.OpenIndex(dir)
		require.NoError(t, err)
		defer ix.Close()
		_, err = ix.Load(1)
		f := filepath.Join(dir, "trajectories", "part-0-of-1.jsonl")
		require.Error(t, err)
		assert.Contains(t, err.Error(), f+":2:")
		err = ix.Each(func(int, *trajectory.Record) error { return nil })
		require.Error(t, err)
		assert.Contains(t, err.Error(), f+":2:")
		_, err = ix.LoadGroup(store.Group{From: 0, To: 2})
		require.Error(t, err)
		assert.Contains(t, err.Error(), f+":2:")
	})
	t.Run("changed while being read", func(t *testing.T) {
		dir := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": good})
		ix, err := store.OpenIndex(dir)
		require.NoError(t, err)
		defer ix.Close()
		other := ixLine(t, ixRec("", "a", "ck", "normal", "s1", 9, 1))
		require.Len(t, other, len(good))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"), []byte(other), 0o644))
		_, err = ix.Load(0)
		require.Error(t, err)
		assert.Contains(t, err.Error(), ":1: changed while being read")
	})
}

func TestIndexDropsDuplicates(t *testing.T) {
	first := ixRec("", "a", "ck", "normal", "s1", 0, 1)
	copy2 := *first
	copy2.Messages = []trajectory.Message{{Role: "user", Content: "a later copy"}}
	other := ixRec("", "a", "ck", "normal", "s1", 1, 1)
	named := ixRec("named", "a", "ck", "normal", "s2", 0, 1)
	a := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": ixLine(t, first) + ixLine(t, other) + ixLine(t, named)})

	t.Run("run given twice", func(t *testing.T) {
		ix, err := store.OpenIndex(a, a)
		require.NoError(t, err)
		defer ix.Close()
		assert.Equal(t, 3, ix.Len())
		assert.Equal(t, 3, ix.Duplicates)
		assert.Equal(t, []int{3, 0}, ix.Records, "the first copy, in the order of the folders, is kept")
		assert.Equal(t, []int{3, 3}, ix.Scanned)
	})
	t.Run("first copy kept", func(t *testing.T) {
		b := ixRun(t, "b", map[string]string{"part-0-of-1.jsonl": ixLine(t, &copy2) + ixLine(t, named)})
		for _, tc := range []struct {
			dirs []string
			want string
			recs []int
		}{
			{[]string{a, b}, "task " + first.TrajID, []int{3, 0}},
			{[]string{b, a}, "a later copy", []int{2, 1}},
		} {
			ix, err := store.OpenIndex(tc.dirs...)
			require.NoError(t, err)
			assert.Equal(t, 3, ix.Len())
			assert.Equal(t, 2, ix.Duplicates)
			assert.Equal(t, tc.recs, ix.Records)
			rec, err := ix.Load(ix.Find(first.TrajID))
			require.NoError(t, err)
			assert.Equal(t, tc.want, rec.Messages[0].Content)
			var order []string
			require.NoError(t, ix.Each(func(i int, r *trajectory.Record) error {
				assert.Equal(t, ix.Key(i).TrajID, r.TrajID)
				order = append(order, r.TrajID)
				return nil
			}))
			assert.Len(t, order, 3, "reading order, copies dropped")
			require.NoError(t, ix.Close())
		}
	})
}

// An index spilled to files sorts, groups, compacts and reads as one held
// in memory.
func TestIndexSortAndGroups(t *testing.T) {
	for _, spill := range []int{0, 1, 4, 1000} {
		t.Run(fmt.Sprintf("spill past %d", spill), func(t *testing.T) {
			if spill > 0 {
				defer store.SetSpillEntries(spill)()
			}
			testIndexSortAndGroups(t, spill > 0 && spill < 100)
		})
	}
}

func testIndexSortAndGroups(t *testing.T, spilled bool) {
	var recs []*trajectory.Record
	for _, run := range []string{"r2", "r1"} {
		for _, ck := range []string{"ck-b", "ck-a"} {
			for _, sid := range []string{"s3", "s1", "s2"} {
				for rollout := 2; rollout >= 0; rollout-- {
					recs = append(recs, ixRec("", run, ck, "normal", sid, rollout, int64(10-rollout)))
				}
			}
		}
	}
	// traj_ids that are not 16 hex digits sort as strings among the others
	recs = append(recs, ixRec("zz-last", "r1", "ck-a", "normal", "s1", 0, 10), ixRec("00", "r1", "ck-a", "normal", "s1", 0, 10),
		ixRec("0123456789ABCDEF", "r1", "ck-a", "normal", "s1", 0, 10))
	var text1, text2 strings.Builder
	for i, r := range recs {
		if i%2 == 0 {
			text1.WriteString(ixLine(t, r))
		} else {
			text2.WriteString(ixLine(t, r))
		}
	}
	dir := ixRun(t, "r", map[string]string{"part-0-of-2.jsonl": text1.String(), "part-1-of-2.jsonl": text2.String()})
	ix, err := store.OpenIndex(dir)
	require.NoError(t, err)
	defer ix.Close()
	require.Equal(t, len(recs), ix.Len())
	require.Equal(t, spilled, ix.Spilled())

	check := func(fields []store.Field, less func(a, b store.Key) bool) {
		t.Helper()
		require.NoError(t, ix.Sort(fields...))
		got := keys(ix)
		want := append([]store.Key(nil), got...)
		sort.Slice(want, func(i, j int) bool { return less(want[i], want[j]) })
		assert.Equal(t, want, got, "order %v", fields)
		// every record still loads where its key is
		require.NoError(t, ix.Each(func(i int, r *trajectory.Record) error {
			if r.TrajID != got[i].TrajID || r.ScenarioID != got[i].ScenarioID {
				return fmt.Errorf("position %d: %s, want %s", i, r.TrajID, got[i].TrajID)
			}
			return nil
		}))
	}
	byScenario := func(a, b store.Key) bool {
		if a.ScenarioID != b.ScenarioID {
			return a.ScenarioID < b.ScenarioID
		}
		return a.TrajID < b.TrajID
	}
	check([]store.Field{store.ByScenario}, byScenario)
	check(nil, func(a, b store.Key) bool { return a.TrajID < b.TrajID })
	check([]store.Field{store.ByCheckpoint, store.ByFramework, store.ByScenario, store.ByRollout, store.BySeed, store.ByRun},
		func(a, b store.Key) bool {
			switch {
			case a.Checkpoint != b.Checkpoint:
				return a.Checkpoint < b.Checkpoint
			case a.Framework != b.Framework:
				return a.Framework < b.Framework
			case a.ScenarioID != b.ScenarioID:
				return a.ScenarioID < b.ScenarioID
			case a.Rollout != b.Rollout:
				return a.Rollout < b.Rollout
			case a.Seed != b.Seed:
				return a.Seed < b.Seed
			case a.Run != b.Run:
				return a.Run < b.Run
			}
			return a.TrajID < b.TrajID
		})
	check([]store.Field{store.BySeed, store.ByRun, store.ByTrajID}, func(a, b store.Key) bool {
		if a.Seed != b.Seed {
			return a.Seed < b.Seed
		}
		if a.Run != b.Run {
			return a.Run < b.Run
		}
		return a.TrajID < b.TrajID
	})

	// groups of one scenario each, loaded in index order
	check([]store.Field{store.ByScenario}, byScenario)
	gs := ix.Groups(store.ByScenario)
	require.Len(t, gs, 3)
	assert.Equal(t, store.Group{From: 0, To: 15}, gs[0], "s1: 12 + the 3 named ids")
	for k, g := range gs {
		rs, err := ix.LoadGroup(g)
		require.NoError(t, err)
		require.Len(t, rs, g.To-g.From)
		for j, r := range rs {
			assert.Equal(t, fmt.Sprintf("s%d", k+1), r.ScenarioID)
			assert.Equal(t, ix.Key(g.From+j).TrajID, r.TrajID)
		}
	}
	assert.Len(t, ix.Groups(store.ByTrajID), len(recs))
	assert.Panics(t, func() { ix.Sort(store.Field(99)) })

	// Compact keeps the order, the positions, the ids and what loads; Key
	// reads the identity from the line; ordering again is refused.
	wantKeys := keys(ix)
	var wantPos []string
	for i := range ix.Len() {
		f, l := ix.Pos(i)
		wantPos = append(wantPos, fmt.Sprintf("%s:%d", f, l))
	}
	wantBytes := ix.Bytes(gs[1])
	ix.Compact()
	require.Equal(t, len(recs), ix.Len())
	assert.Equal(t, wantKeys, keys(ix))
	for i := range ix.Len() {
		f, l := ix.Pos(i)
		assert.Equal(t, wantPos[i], fmt.Sprintf("%s:%d", f, l))
		assert.Equal(t, i, ix.Find(wantKeys[i].TrajID))
		assert.Equal(t, wantKeys[i].TrajID, ix.TrajID(i))
	}
	assert.Equal(t, wantBytes, ix.Bytes(gs[1]))
	require.NoError(t, ix.Each(func(i int, r *trajectory.Record) error {
		if r.TrajID != wantKeys[i].TrajID {
			return fmt.Errorf("position %d: %s, want %s", i, r.TrajID, wantKeys[i].TrajID)
		}
		return nil
	}))
	assert.Panics(t, func() { ix.Sort(store.ByScenario) })
	assert.Panics(t, func() { ix.Groups(store.ByScenario) })
	ix.Compact() // twice is once
	assert.Equal(t, wantKeys, keys(ix))
}

func TestIndexLongLines(t *testing.T) {
	big := ixRec("", "a", "ck", "normal", "s1", 0, 1)
	big.Messages[0].Content = strings.Repeat("x", 3<<20) // longer than the reading buffer
	small := ixRec("", "a", "ck", "normal", "s1", 1, 1)
	dir := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": ixLine(t, big) + ixLine(t, small) + ixLine(t, big)[:100]})
	_, err := store.OpenIndex(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "part-0-of-1.jsonl:3: incomplete last line")

	dir = ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": ixLine(t, big) + ixLine(t, small) + ixLine(t, big)})
	_, err = store.OpenIndex(dir)
	assert.ErrorIs(t, err, store.ErrDuplicate)

	dir = ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": ixLine(t, big) + "\n" + ixLine(t, small)})
	ix, err := store.OpenIndex(dir)
	require.NoError(t, err)
	defer ix.Close()
	require.Equal(t, 2, ix.Len())
	assert.Equal(t, 0, ix.Duplicates)
	for i, want := range []*trajectory.Record{big, small} {
		r, err := ix.Load(i)
		require.NoError(t, err)
		assert.Equal(t, want.Messages, r.Messages)
		_, line := ix.Pos(i)
		assert.Equal(t, 2*i+1, line, "a blank line is skipped, and counted")
	}
}

func TestIteratorPos(t *testing.T) {
	r1, r2, r3 := ixRec("", "a", "ck", "normal", "s1", 0, 1), ixRec("", "a", "ck", "normal", "s1", 1, 1), ixRec("", "a", "ck", "normal", "s1", 2, 1)
	a := ixRun(t, "a", map[string]string{"part-0-of-2.jsonl": ixLine(t, r1), "part-1-of-2.jsonl": ixLine(t, r2) + " \n" + ixLine(t, r3)})
	it := store.Records(a)
	defer it.Close()
	var got []string
	for it.Next() {
		f, line := it.Pos()
		got = append(got, fmt.Sprintf("%s:%d", filepath.Base(f), line))
	}
	require.NoError(t, it.Err())
	assert.Equal(t, []string{"part-0-of-2.jsonl:1", "part-1-of-2.jsonl:1", "part-1-of-2.jsonl:3"}, got)

	// A second copy in one folder is refused, naming both places.
	b := ixRun(t, "b", map[string]string{"part-0-of-2.jsonl": ixLine(t, r1), "part-1-of-2.jsonl": ixLine(t, r1)})
	it2 := store.Records(b)
	defer it2.Close()
	for it2.Next() {
	}
	require.ErrorIs(t, it2.Err(), store.ErrDuplicate)
	assert.Contains(t, it2.Err().Error(), "part-1-of-2.jsonl:1: duplicate traj_id")
	assert.Contains(t, it2.Err().Error(), "part-0-of-2.jsonl:1)")
	assert.Contains(t, it2.Err().Error(), "antidrift repair "+b)
}

// The iterator reads lines longer than its reading buffer, and lines that
// do not fit a batch's pooled buffer, whole.
func TestRecordsLongLines(t *testing.T) {
	big := ixRec("", "a", "ck", "normal", "s1", 0, 1)
	big.Messages[0].Content = strings.Repeat("x", 3<<20) // longer than the reading buffer
	mid := ixRec("", "a", "ck", "normal", "s1", 1, 1)
	mid.Messages[0].Content = strings.Repeat("y", 200<<10) // fits the reader, not what is left of a batch buffer
	mid2 := ixRec("", "a", "ck", "normal", "s1", 3, 1)
	mid2.Messages[0].Content = strings.Repeat("z", 200<<10)
	small := ixRec("", "a", "ck", "normal", "s1", 2, 1)
	dir := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": ixLine(t, small) + ixLine(t, mid) + ixLine(t, mid2) + ixLine(t, big) + "\n" + ixLine(t, mid)[:100]})
	it := store.Records(dir)
	defer it.Close()
	var got []*trajectory.Record
	for it.Next() {
		r := *it.At()
		got = append(got, &r)
	}
	require.Error(t, it.Err())
	assert.Contains(t, it.Err().Error(), "part-0-of-1.jsonl:6: incomplete last line")
	require.Len(t, got, 4)
	for i, want := range []*trajectory.Record{small, mid, mid2, big} {
		assert.Equal(t, want.Messages, got[i].Messages)
	}
}

// indexed is everything OpenIndex reports of a folder.
type indexed struct {
	keys    []store.Key
	pos     []string
	scanned []int
	dups    int
	err     string
}

func openIndexed(t *testing.T, dirs ...string) indexed {
	t.Helper()
	var out indexed
	ix, err := store.OpenIndex(dirs...)
	if err != nil {
		out.err = err.Error()
		return out
	}
	defer ix.Close()
	out.keys, out.scanned, out.dups = keys(ix), ix.Scanned, ix.Duplicates
	for i := range ix.Len() {
		f, l := ix.Pos(i)
		out.pos = append(out.pos, fmt.Sprintf("%s:%d", f, l))
	}
	return out
}

// A file scanned in many ranges on many cores is indexed exactly as one
// scan of it line by line: the same keys, positions, counts and first
// error, wherever the ranges' bounds fall (blank lines, long lines,
// damaged lines, a torn tail).
func TestIndexScanInRanges(t *testing.T) {
	var text strings.Builder
	var lines []string
	for i := range 400 {
		r := ixRec("", "a", "ck", "normal", fmt.Sprintf("s%d", i%7), i, int64(i))
		if i%97 == 5 {
			r.Messages[0].Content = strings.Repeat("long ", 300<<10) // past the reading buffer
		}
		l := ixLine(t, r)
		if i%13 == 0 {
			l += "\n   \n" // blank lines
		}
		lines = append(lines, l)
		text.WriteString(l)
	}
	all := text.String()
	good := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": all})
	bad := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": strings.Join(lines[:250], "") + "{\"traj_id\": 7}\n" + strings.Join(lines[250:], "")})
	torn := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": all + lines[3][:40]})
	dup := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": all + lines[17]})
	for _, dir := range []string{good, bad, torn, dup} {
		var want indexed
		withProcs(1, func() { want = openIndexed(t, dir) })
		for _, chunk := range []int64{1 << 10, 37 << 10, 1 << 20} {
			for _, procs := range []int{2, 4, 16} {
				restore := store.SetScanChunk(chunk)
				var got indexed
				withProcs(procs, func() { got = openIndexed(t, dir) })
				restore()
				require.Equal(t, want, got, "chunk %d, GOMAXPROCS %d", chunk, procs)
			}
		}
		// in waves of ranges, and with the entries spilled to files
		for _, wave := range []int64{1 << 10, 64 << 10} {
			for _, spill := range []int{1, 7, 1000} {
				restore := store.SetScanChunk(1 << 10)
				restoreWave := store.SetScanWave(wave)
				restoreSpill := store.SetSpillEntries(spill)
				var got indexed
				withProcs(2, func() { got = openIndexed(t, dir) })
				restore()
				restoreWave()
				restoreSpill()
				require.Equal(t, want, got, "waves of %d bytes, spilling past %d entries", wave, spill)
			}
		}
		if dir == good {
			require.Len(t, want.keys, 400)
		} else {
			require.NotEmpty(t, want.err)
		}
	}
}

// Records are read from a sorted index on several goroutines at once, held
// in memory or spilled, each reader seeing what it would alone.
func TestIndexReadsConcurrently(t *testing.T) {
	var text strings.Builder
	for i := range 60 {
		text.WriteString(ixLine(t, ixRec("", "a", "ck", "normal", fmt.Sprintf("s%d", i%3), i, int64(i))))
	}
	dir := ixRun(t, "a", map[string]string{"part-0-of-2.jsonl": text.String()})
	for _, spill := range []int{0, 4} {
		t.Run(fmt.Sprintf("spill past %d", spill), func(t *testing.T) {
			if spill > 0 {
				defer store.SetSpillEntries(spill)()
			}
			ix, err := store.OpenIndex(dir)
			require.NoError(t, err)
			defer ix.Close()
			require.Equal(t, spill > 0, ix.Spilled())
			require.NoError(t, ix.Sort(store.ByScenario))
			ix.Compact()
			want := make([]string, ix.Len())
			for i := range want {
				want[i] = ix.TrajID(i)
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for g := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pos := make([]int, ix.Len())
					for k := range pos {
						pos[k] = (k*7 + g) % len(pos) // each reader its own order
					}
					errs[g] = ix.EachAt(pos, func(i int, r *trajectory.Record) error {
						if r.TrajID != want[i] {
							return fmt.Errorf("position %d: %s, want %s", i, r.TrajID, want[i])
						}
						return nil
					})
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
		})
	}
}

// An index that cannot make its scratch file says where it tried and how
// to move it, and leaves nothing open.
func TestIndexSpillErrorNamesTMPDIR(t *testing.T) {
	var text strings.Builder
	for i := range 10 {
		text.WriteString(ixLine(t, ixRec("", "a", "ck", "normal", "s1", i, int64(i))))
	}
	dir := ixRun(t, "a", map[string]string{"part-0-of-1.jsonl": text.String()})
	defer store.SetSpillEntries(3)()
	missing := filepath.Join(t.TempDir(), "no-such-folder")
	t.Setenv("TMPDIR", missing)
	_, err := store.OpenIndex(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.Contains(t, err.Error(), "set TMPDIR to a folder with room")
}
