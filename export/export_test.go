package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// expected renders the rows of a table as plain Go values per column, the
// way the readers below render what they read.
func expected[R Row](rows []R, margin bool) [][]any {
	_, cols := tableOf[R](margin)
	out := make([][]any, len(rows))
	for i := range rows {
		r := &rows[i]
		vals := make([]any, len(cols))
		for j, c := range cols {
			switch c.kind {
			case kString, kDictString:
				vals[j] = c.str(r)
			case kBool:
				vals[j] = c.boolean(r)
			case kInt64:
				vals[j] = c.i64(r)
			case kFloat64:
				vals[j] = c.f64(r)
			case kOptFloat64:
				vals[j] = *c.optf(r)
			case kMessages:
				l := []any{}
				for _, m := range c.msgs(r) {
					l = append(l, string(m))
				}
				vals[j] = l
			case kStrings:
				l := []any{}
				for _, v := range c.strs(r) {
					l = append(l, v)
				}
				vals[j] = l
			case kInt64s:
				l := []any{}
				for _, v := range c.i64s(r) {
					l = append(l, v)
				}
				vals[j] = l
			case kFloat64s:
				l := []any{}
				for _, v := range c.f64s(r) {
					l = append(l, v)
				}
				vals[j] = l
			}
		}
		out[i] = vals
	}
	return out
}

// goValue renders element i of an Arrow array; JSON (extension or binary)
// becomes its text.
func goValue(t *testing.T, a arrow.Array, i int) any {
	require.True(t, a.IsValid(i), "null value in %s", a.DataType())
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return string(a.Value(i))
	case *array.Boolean:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *extensions.JSONArray:
		return a.ValueStr(i)
	case *array.List:
		start, end := a.ValueOffsets(i)
		l := []any{}
		for k := start; k < end; k++ {
			l = append(l, goValue(t, a.ListValues(), int(k)))
		}
		return l
	}
	t.Fatalf("unexpected array type %s", a.DataType())
	return nil
}

// tableValues reads every row of a table as plain Go values.
func tableValues(t *testing.T, tbl arrow.Table) [][]any {
	n := int(tbl.NumRows())
	out := make([][]any, n)
	for i := range out {
		out[i] = make([]any, tbl.NumCols())
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		row := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				out[row][c] = goValue(t, chunk, i)
				row++
			}
		}
		require.Equal(t, n, row)
	}
	return out
}

// pqarrowRead reads a Parquet file with arrow-go's pqarrow, a reader
// independent of parquet-go: the stored Arrow schema, the table, the file.
func pqarrowRead(t *testing.T, path string) (*arrow.Schema, arrow.Table, *file.Reader) {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	require.NoError(t, err, path)
	t.Cleanup(func() { rdr.Close() })
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 100}, memory.DefaultAllocator)
	require.NoError(t, err, path)
	tbl, err := fr.ReadTable(context.Background())
	require.NoError(t, err, path)
	t.Cleanup(tbl.Release)
	return fr.Manifest.OriginSchema, tbl, rdr
}

// checkParquet is the independent check of one Parquet file against the
// rows written: schema, JSON element type, encodings, row groups, values.
func checkParquet[R Row](t *testing.T, path string, rows []R, opts Options) {
	t.Helper()
	opts = opts.withDefaults()
	table, cols := tableOf[R](opts.Margin)
	origin, tbl, rdr := pqarrowRead(t, path)

	// The Arrow schema stored in the file, decoded by pqarrow, is the
	// table's, with message elements of the arrow.json extension type.
	require.NotNil(t, origin, "%s: no ARROW:schema in the file metadata", path)
	require.True(t, origin.Equal(arrowSchema(cols)), "stored schema:\n%s", origin)
	md := rdr.MetaData()
	require.Equal(t, len(cols), md.Schema.NumColumns())
	for i, c := range cols {
		f := origin.Field(i)
		require.Equal(t, c.name, f.Name)
		require.Equal(t, c.name, tbl.Schema().Field(i).Name, "column order")
		leaf := md.Schema.Column(i)
		if c.kind == kMessages {
			lt, ok := f.Type.(*arrow.ListType)
			require.True(t, ok, "%s is %s", c.name, f.Type)
			ext, ok := lt.Elem().(*extensions.JSONType)
			require.True(t, ok, "%s element is %s, want arrow.json", c.name, lt.Elem())
			require.Equal(t, "arrow.json", ext.ExtensionName())
			require.True(t, arrow.TypeEqual(arrow.BinaryTypes.String, ext.StorageType()))
			require.True(t, leaf.LogicalType().Equals(schema.JSONLogicalType{}), "%s: parquet logical type %s", c.name, leaf.LogicalType())
			require.Equal(t, parquet.Repetitions.Required, leaf.SchemaNode().RepetitionType(), "%s elements must be required (never null)", c.name)
		}
		if c.kind == kString || c.kind == kDictString {
			require.True(t, leaf.LogicalType().Equals(schema.StringLogicalType{}), "%s: %s", c.name, leaf.LogicalType())
		}
	}
	require.Equal(t, table, *md.KeyValueMetadata().FindValue(MetaTable))

	// Bounded row groups, zstd, no DELTA_LENGTH_BYTE_ARRAY.
	require.Equal(t, int64(len(rows)), md.NumRows)
	if len(rows) > 0 {
		require.Equal(t, (len(rows)+opts.RowGroupRows-1)/opts.RowGroupRows, md.NumRowGroups(), "row groups")
	}
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		require.LessOrEqual(t, rg.NumRows(), int64(opts.RowGroupRows))
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			require.NoError(t, err)
			require.Equal(t, "ZSTD", cc.Compression().String())
			for _, e := range cc.Encodings() {
				require.NotEqual(t, parquet.Encodings.DeltaLengthByteArray, e, "column %d", c)
				require.NotEqual(t, parquet.Encodings.DeltaByteArray, e, "column %d", c)
			}
		}
	}

	// Every column of every row round-trips.
	want := expected(rows, opts.Margin)
	got := tableValues(t, tbl)
	require.Equal(t, len(want), len(got))
	for i := range want {
		for j, c := range cols {
			require.Equal(t, want[i][j], got[i][j], "row %d column %s", i, c.name)
		}
	}

	// The JSON text read back is the arrow.json the stored schema names:
	// applied to what pqarrow read (as pyarrow does when it reads the file),
	// every element is a JSON object.
	for i, c := range cols {
		if c.kind != kMessages {
			continue
		}
		for _, chunk := range tbl.Column(i).Data().Chunks() {
			vals := chunk.(*array.List).ListValues()
			storage := stringStorage(t, vals)
			ja := array.NewExtensionArrayWithStorage(jsonType, storage).(*extensions.JSONArray)
			for k := 0; k < ja.Len(); k++ {
				obj, ok := ja.Value(k).(map[string]any)
				require.True(t, ok, "%s element %d is not an object", c.name, k)
				require.NotEmpty(t, obj)
			}
			storage.Release()
			ja.Release()
		}
	}
}

// stringStorage re-types pqarrow's binary JSON as utf8 (same layout).
func stringStorage(t *testing.T, a arrow.Array) arrow.Array {
	switch a.DataType().ID() {
	case arrow.STRING:
		a.Retain()
		return a
	case arrow.BINARY:
		d := array.NewData(arrow.BinaryTypes.String, a.Len(), a.Data().Buffers(), nil, a.NullN(), a.Data().Offset())
		defer d.Release()
		return array.MakeFromData(d)
	case arrow.EXTENSION:
		return stringStorage(t, a.(array.ExtensionArray).Storage())
	}
	t.Fatalf("unexpected JSON storage %s", a.DataType())
	return nil
}

// checkArrow reads an Arrow IPC file back: schema with the JSON extension,
// bounded batches, values.
func checkArrow[R Row](t *testing.T, path string, rows []R, opts Options) {
	t.Helper()
	opts = opts.withDefaults()
	_, cols := tableOf[R](opts.Margin)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	require.NoError(t, err)
	defer r.Close()
	require.True(t, r.Schema().Equal(arrowSchema(cols)), "arrow schema:\n%s", r.Schema())
	for i, c := range cols {
		if c.kind == kMessages {
			elem := r.Schema().Field(i).Type.(*arrow.ListType).Elem()
			_, ok := elem.(*extensions.JSONType)
			require.True(t, ok, "%s element is %s", c.name, elem)
		}
	}
	var recs []arrow.RecordBatch
	for k := 0; k < r.NumRecords(); k++ {
		rec, err := r.RecordBatch(k)
		require.NoError(t, err)
		require.LessOrEqual(t, rec.NumRows(), int64(opts.RowGroupRows))
		rec.Retain()
		recs = append(recs, rec)
	}
	tbl := array.NewTableFromRecords(r.Schema(), recs)
	defer tbl.Release()
	want := expected(rows, opts.Margin)
	got := tableValues(t, tbl)
	require.Equal(t, want, got)
	for _, rec := range recs {
		rec.Release()
	}
}

// checkJSONL reads the JSONL file: one object per row, columns in order,
// message columns arrays of objects.
func checkJSONL[R Row](t *testing.T, path string, rows []R, opts Options) {
	t.Helper()
	_, cols := tableOf[R](opts.Margin)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(rows) == 0 {
		require.Equal(t, "", string(b))
		return
	}
	require.Len(t, lines, len(rows))
	want := expected(rows, opts.Margin)
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var obj map[string]any
		require.NoError(t, dec.Decode(&obj), "line %d", i+1)
		require.Len(t, obj, len(cols))
		for j, c := range cols {
			v := obj[c.name]
			switch c.kind {
			case kMessages:
				arr, ok := v.([]any)
				require.True(t, ok, "line %d %s is %T", i+1, c.name, v)
				require.Len(t, arr, len(want[i][j].([]any)))
				for k, e := range arr {
					_, ok := e.(map[string]any)
					require.True(t, ok, "line %d %s[%d] is %T, want an object", i+1, c.name, k, e)
					var exp any
					require.NoError(t, json.Unmarshal([]byte(want[i][j].([]any)[k].(string)), &exp))
					var gotv any
					eb, _ := json.Marshal(e)
					require.NoError(t, json.Unmarshal(eb, &gotv))
					require.Equal(t, exp, gotv)
				}
			case kString, kDictString:
				require.Equal(t, want[i][j], v)
			case kBool:
				require.Equal(t, want[i][j], v)
			}
		}
	}
	// Column order is the table's.
	first := lines[0]
	last := -1
	for _, c := range cols {
		p := strings.Index(first, `"`+c.name+`":`)
		require.Greater(t, p, last, "column %s out of order", c.name)
		last = p
	}
}

func writeAll[R Row](t *testing.T, dir, name string, rows []R, opts Options) *Writer[R] {
	t.Helper()
	w, err := Create[R](dir, name, AllFormats, opts)
	require.NoError(t, err)
	for i := range rows {
		require.NoError(t, w.Write(&rows[i]))
	}
	require.NoError(t, w.Close())
	require.Equal(t, int64(len(rows)), w.Rows())
	return w
}

func checkAll[R Row](t *testing.T, dir, name string, rows []R, opts Options) {
	t.Helper()
	checkParquet(t, filepath.Join(dir, name+".parquet"), rows, opts)
	checkArrow(t, filepath.Join(dir, name+".arrow"), rows, opts)
	checkJSONL(t, filepath.Join(dir, name+".jsonl"), rows, opts)
}

func TestDPORoundTrip(t *testing.T) {
	for _, margin := range []bool{false, true} {
		dir := t.TempDir()
		rows := dpoRows(50)
		opts := Options{RowGroupRows: 7, Margin: margin}
		w := writeAll(t, dir, "dpo", rows, opts)
		checkAll(t, dir, "dpo", rows, opts)
		assert.Equal(t, map[string]int64{"train": 17, "validation": 17, "test": 16}, w.Splits())
		names := ColumnNames[dataset.DPORow](margin)
		assert.Equal(t, margin, names[len(names)-1] == "margin")
	}
}

func TestRewardRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rows := rewardRows(40)
	opts := Options{RowGroupRows: 16}
	writeAll(t, dir, "rewards", rows, opts)
	checkAll(t, dir, "rewards", rows, opts)
}

func TestEmptyTable(t *testing.T) {
	dir := t.TempDir()
	writeAll[dataset.KTORow](t, dir, "kto", nil, Options{})
	checkAll[dataset.KTORow](t, dir, "kto", nil, Options{})
}

// simRows exports an in-process simulated run and returns its rows.
func simRecords(t testing.TB) []trajectory.Record {
	t.Helper()
	dir := simRun(t, filepath.Join(t.TempDir(), "run"), "base", 3, 7, 4)
	idx, err := store.OpenIndex(dir)
	require.NoError(t, err)
	defer idx.Close()
	idx.Sort(store.ByCheckpoint, store.ByFramework, store.ByScenario, store.ByRollout, store.BySeed, store.ByRun)
	var recs []trajectory.Record
	require.NoError(t, idx.Each(func(_ int, r *trajectory.Record) error { recs = append(recs, *r); return nil }))
	require.NotEmpty(t, recs)
	return recs
}

func TestTrajectoryAndKTORoundTripFromSimRun(t *testing.T) {
	recs := simRecords(t)
	var traj []dataset.TrajectoryRow
	var kto []dataset.KTORow
	for i := range recs {
		traj = append(traj, dataset.TrajectoryRowOf(&recs[i], "train"))
		kto = append(kto, dataset.KTORowOf(&recs[i], "test", 0.5))
	}
	dir := t.TempDir()
	opts := Options{RowGroupRows: 25}
	writeAll(t, dir, "trajectories", traj, opts)
	checkAll(t, dir, "trajectories", traj, opts)
	writeAll(t, dir, "kto", kto, opts)
	checkAll(t, dir, "kto", kto, opts)

	// What trainers need of the messages, checked on what pqarrow reads.
	_, tbl, _ := pqarrowRead(t, filepath.Join(dir, "trajectories.parquet"))
	sawArgs := 0
	for _, v := range tableValues(t, tbl) {
		for _, m := range v[11].([]any) { // messages
			sawArgs += checkMessage(t, m.(string))
		}
	}
	assert.Greater(t, sawArgs, 0, "no tool call in the sim run")
	_, tbl, _ = pqarrowRead(t, filepath.Join(dir, "kto.parquet"))
	for _, v := range tableValues(t, tbl) {
		prompt := v[0].([]any)
		require.NotEmpty(t, prompt)
		var last map[string]any
		require.NoError(t, json.Unmarshal([]byte(prompt[len(prompt)-1].(string)), &last))
		assert.Equal(t, "user", last["role"], "the KTO prompt ends on the first user message")
	}
}

// checkMessage asserts a message holds no null anywhere, and that its tool
// calls' arguments are objects; it returns the number of tool calls.
func checkMessage(t *testing.T, s string) int {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	require.False(t, holdsNull(m), "message holds a null: %s", s)
	require.Contains(t, m, "role")
	_, ok := m["content"].(string)
	require.True(t, ok, "content missing or not a string: %s", s)
	calls, _ := m["tool_calls"].([]any)
	for _, c := range calls {
		fn := c.(map[string]any)["function"].(map[string]any)
		_, ok = fn["arguments"].(map[string]any)
		require.True(t, ok, "arguments are %T, want an object: %s", fn["arguments"], s)
	}
	return len(calls)
}

func holdsNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if holdsNull(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holdsNull(e) {
				return true
			}
		}
	}
	return false
}

func TestByteIdenticalFiles(t *testing.T) {
	recs := simRecords(t)
	write := func(dir string) {
		w, err := Create[dataset.TrajectoryRow](dir, "t", AllFormats, Options{RowGroupRows: 30, ToolkitVersion: "1.2.3"})
		require.NoError(t, err)
		for i := range recs {
			row := dataset.TrajectoryRowOf(&recs[i], "train")
			require.NoError(t, w.Write(&row))
		}
		require.NoError(t, w.Close())
	}
	a, b := t.TempDir(), t.TempDir()
	write(a)
	write(b)
	for _, f := range []string{"t.parquet", "t.arrow", "t.jsonl"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(x, y), "%s differs between two identical exports", f)
	}
	// created_by is fixed, never the build's.
	rdr, err := file.OpenParquetFile(filepath.Join(a, "t.parquet"), false)
	require.NoError(t, err)
	defer rdr.Close()
	assert.Equal(t, "antidrift version 1.2.3(build parquet-go v0.32.0)", rdr.MetaData().GetCreatedBy())
}

func TestRowGroupsBoundedByBytes(t *testing.T) {
	dir := t.TempDir()
	rows := dpoRows(200)
	opts := Options{RowGroupRows: 1000, RowGroupBytes: 4 << 10}
	writeAll(t, dir, "dpo", rows, opts)
	rdr, err := file.OpenParquetFile(filepath.Join(dir, "dpo.parquet"), false)
	require.NoError(t, err)
	defer rdr.Close()
	assert.Greater(t, rdr.NumRowGroups(), 3, "row groups are cut by bytes")
	f, err := os.Open(filepath.Join(dir, "dpo.arrow"))
	require.NoError(t, err)
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	require.NoError(t, err)
	defer r.Close()
	assert.Greater(t, r.NumRecords(), 3, "record batches are cut by bytes")
	_, tbl, _ := pqarrowRead(t, filepath.Join(dir, "dpo.parquet"))
	assert.Equal(t, int64(200), tbl.NumRows())
}

func TestWriteRejectsWhatFilesCannotHold(t *testing.T) {
	dir := t.TempDir()
	w, err := Create[dataset.KTORow](dir, "kto", AllFormats, Options{})
	require.NoError(t, err)
	good := dataset.KTORow{Prompt: []json.RawMessage{msg(`{"role":"user","content":"x"}`)}, Split: "train"}
	require.NoError(t, w.Write(&good))
	bad := dataset.KTORow{Prompt: []json.RawMessage{msg(`"a string"`)}}
	err = w.Write(&bad)
	require.ErrorContains(t, err, "kto row 2: column prompt, element 0: not a JSON object")
	require.Error(t, w.Close())
	// Nothing is left behind: no final file, no temporary file.
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents)

	w2, err := Create[dataset.DPORow](dir, "dpo", []string{FormatJSONL}, Options{Margin: true})
	require.NoError(t, err)
	require.ErrorContains(t, w2.Write(&dataset.DPORow{}), "margin")
	w2.Abort()
}

// With RenderedMessages the rendered message columns are taken as
// dataset renders them (always objects); a recorded tool schema that is
// not an object is refused still.
func TestRenderedMessagesStillChecksTools(t *testing.T) {
	w, err := Create[dataset.KTORow](t.TempDir(), "kto", []string{FormatJSONL}, Options{RenderedMessages: true})
	require.NoError(t, err)
	defer w.Abort()
	row := dataset.KTORow{Prompt: []json.RawMessage{msg(`{"role":"user","content":"x"}`)}, Tools: []json.RawMessage{msg(`[1]`)}, Split: "train"}
	require.ErrorContains(t, w.Write(&row), "kto row 1: column tools, element 0: not a JSON object")
}

func TestCloseRenamesOnlyAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	w, err := Create[dataset.RewardRow](dir, "rewards", AllFormats, Options{})
	require.NoError(t, err)
	rows := rewardRows(3)
	for i := range rows {
		require.NoError(t, w.Write(&rows[i]))
	}
	for _, f := range []string{"rewards.parquet", "rewards.arrow", "rewards.jsonl"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.True(t, os.IsNotExist(err), "%s exists before Close", f)
	}
	require.NoError(t, w.Close())
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"rewards.arrow", "rewards.jsonl", "rewards.parquet"}, names)
}

func TestParseFormats(t *testing.T) {
	f, err := ParseFormats("parquet, JSONL,parquet")
	require.NoError(t, err)
	assert.Equal(t, []string{"parquet", "jsonl"}, f)
	_, err = ParseFormats("csv")
	assert.ErrorContains(t, err, `unknown format "csv"`)
	_, err = ParseFormats("")
	assert.Error(t, err)
}

func TestSplitPrompt(t *testing.T) {
	ms := []trajectory.Message{{Role: "system"}, {Role: "user"}, {Role: "assistant"}, {Role: "tool"}, {Role: "user"}}
	p, c := dataset.SplitPrompt(ms)
	assert.Len(t, p, 2)
	assert.Len(t, c, 3)
	p, c = dataset.SplitPrompt([]trajectory.Message{{Role: "system"}, {Role: "assistant"}})
	assert.Len(t, p, 1)
	assert.Len(t, c, 1)
}

func TestJSONLIsOneLinePerRow(t *testing.T) {
	dir := t.TempDir()
	rows := []dataset.KTORow{{Prompt: []json.RawMessage{msg("{\n  \"role\": \"user\",\n  \"content\": \"a\\nb\"\n}")}, Split: "train"}}
	writeAll(t, dir, "k", rows, Options{})
	f, err := os.Open(filepath.Join(dir, "k.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		assert.Contains(t, sc.Text(), `"prompt":[{"role":"user","content":"a\nb"}]`)
	}
	assert.Equal(t, 1, n)
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	rows := dpoRows(5)
	writeAll(t, dir, "dpo", rows, Options{RowGroupRows: 2})
	for _, f := range []string{"dpo.parquet", "dpo.arrow", "dpo.jsonl"} {
		var out bytes.Buffer
		require.NoError(t, Inspect(&out, filepath.Join(dir, f), 2), f)
		s := out.String()
		assert.Contains(t, s, "rows: 5", f)
		assert.Contains(t, s, "row 2\n", f)
		assert.NotContains(t, s, "row 3\n", f)
		assert.Contains(t, s, "  prompt: [2]\n    [0] {\n          \"role\": \"system\",", f)
		assert.Contains(t, s, "\"arguments\": {", f)
		if f != "dpo.jsonl" {
			assert.Contains(t, s, "prompt: list<extension<arrow.json, storage utf8>> not null", f)
		}
		if f == "dpo.parquet" {
			assert.Contains(t, s, "row groups: 3")
			assert.Contains(t, s, "(JSON)")
			t.Log(s)
		}
	}
	var out bytes.Buffer
	err := Inspect(&out, filepath.Join(dir, "missing.parquet"), 1)
	assert.ErrorContains(t, err, filepath.Join(dir, "missing.parquet"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.parquet"), []byte("not parquet"), 0o644))
	err = Inspect(&out, filepath.Join(dir, "bad.parquet"), 1)
	assert.ErrorContains(t, err, "bad.parquet: not a readable Parquet file")
	err = Inspect(&out, filepath.Join(dir, "x.csv"), 1)
	assert.ErrorContains(t, err, "x.csv: unknown file type")
}

// TestCardArrowNote: the cards' note on the Arrow files says what the
// files are and what `datasets`' arrow builder does with them (its
// packaged_modules/arrow/arrow.py, datasets 5.0.1: open_stream, then
// open_file on ArrowInvalid or OSError). The files must then be the IPC
// file format, which a stream reader refuses (so the builder takes the
// fallback the note names); a card without Arrow files has no note.
func TestCardArrowNote(t *testing.T) {
	dir := t.TempDir()
	rows := dpoRows(12)
	w := writeAll(t, dir, "dpo", rows, Options{})
	arrowFile := filepath.Join(dir, "dpo.arrow")
	b, err := os.ReadFile(arrowFile)
	require.NoError(t, err)
	magic := []byte("ARROW1")
	assert.Equal(t, magic, b[:len(magic)], "IPC file format: magic first")
	assert.Equal(t, magic, b[len(b)-len(magic):], "IPC file format: magic last")
	f, err := os.Open(arrowFile)
	require.NoError(t, err)
	defer f.Close()
	if r, err := ipc.NewReader(f); err == nil {
		for r.Next() {
		}
		assert.Error(t, r.Err(), "a stream reader must refuse the file format")
		r.Release()
	}
	checkArrow(t, arrowFile, rows, Options{})

	for _, s := range []string{"IPC *file* format", "`pyarrow.ipc.open_file(...).read_all()`",
		"`src/datasets/packaged_modules/arrow/arrow.py` (datasets 5.0.1)", "with `pyarrow.ipc.open_stream`",
		"raises `ArrowInvalid` or `OSError`", "with `pyarrow.ipc.open_file`", "since datasets 3.0.0", "`OSError` since 3.3.0"} {
		assert.Contains(t, ArrowNote, s)
	}
	require.NoError(t, WriteCard(dir, Card{Title: "t", Tables: []CardTable{w.CardTable("dpo")}}))
	card, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(card), "\n"+ArrowNote+"\n")

	only := t.TempDir()
	w2, err := Create[dataset.DPORow](only, "dpo", []string{FormatParquet, FormatJSONL}, Options{})
	require.NoError(t, err)
	for i := range rows {
		require.NoError(t, w2.Write(&rows[i]))
	}
	require.NoError(t, w2.Close())
	require.NoError(t, WriteCard(only, Card{Title: "t", Tables: []CardTable{w2.CardTable("dpo")}}))
	card, err = os.ReadFile(filepath.Join(only, "README.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(card), "Arrow IPC files")
}
