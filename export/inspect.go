package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Inspect prints what a .parquet, .arrow or .jsonl file holds: its schema
// (for Parquet, the Parquet schema and the Arrow schema stored in the file
// metadata, with the arrow.json extension), row count, row groups or record
// batches, and the first rows with messages pretty-printed. Errors name the
// file. It reads with arrow-go, not with the writer's library.
//
// A malformed file is an error, never a crash: arrow-go's readers panic on
// some corrupt inputs (bad offsets, truncated buffers), and Inspect turns a
// panic into a one-line error naming the file.
func Inspect(w io.Writer, path string, rows int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			msg := strings.Join(strings.Fields(fmt.Sprint(p)), " ")
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			err = fmt.Errorf("%s: malformed file (the reader failed: %s)", path, msg)
		}
	}()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".arrow", ".ipc", ".feather", ".jsonl", ".ndjson":
		// a FIFO or a device would block or never end
		if st, serr := os.Stat(path); serr != nil {
			return serr
		} else if !st.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
		}
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet":
		err = inspectParquet(w, path, rows)
	case ".arrow", ".ipc", ".feather":
		err = inspectArrow(w, path, rows)
	case ".jsonl", ".ndjson":
		err = inspectJSONL(w, path, rows)
	default:
		return fmt.Errorf("%s: unknown file type %q: want .parquet, .arrow or .jsonl", path, filepath.Ext(path))
	}
	if err != nil && !strings.HasPrefix(err.Error(), path) {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return err
}

func inspectParquet(w io.Writer, path string, rows int) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	mem := newBoundedAllocator(inspectMemoryCap(st.Size()))
	rdr, err := file.OpenParquetFile(path, false, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return fmt.Errorf("not a readable Parquet file: %w", err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	fmt.Fprintf(w, "file: %s (Parquet, %d bytes)\ncreated by: %s\nrows: %d\nrow groups: %d\n", path, st.Size(), md.GetCreatedBy(), md.NumRows, md.NumRowGroups())
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		codec := ""
		if rg.NumColumns() > 0 {
			if cc, err := rg.ColumnChunk(0); err == nil {
				codec = cc.Compression().String()
			}
		}
		fmt.Fprintf(w, "  group %d: %d rows, %d bytes compressed, %d uncompressed, %s\n", g, rg.NumRows(), rg.TotalCompressedSize(), rg.TotalByteSize(), codec)
	}
	fmt.Fprintln(w, "\nParquet schema:")
	var sb bytes.Buffer
	schema.PrintSchema(md.Schema.Root(), &sb, 2)
	w.Write(indent(sb.String(), "  "))

	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: int64(max(rows, 1))}, mem)
	if err != nil {
		return err
	}
	origin := fr.Manifest.OriginSchema
	if origin != nil {
		fmt.Fprintln(w, "\nArrow schema (stored in the file metadata under ARROW:schema):")
		printArrowSchema(w, origin)
	} else {
		fmt.Fprintln(w, "\nArrow schema: none stored in the file metadata (JSON columns read as binary)")
	}
	kv := md.KeyValueMetadata()
	var other []string
	for i, k := range kv.Keys() {
		if k != "ARROW:schema" {
			other = append(other, fmt.Sprintf("  %s: %s", k, kv.Values()[i]))
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(w, "\nfile metadata:\n%s\n", strings.Join(other, "\n"))
	}
	if rows <= 0 || md.NumRows == 0 {
		return nil
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	fmt.Fprintf(w, "\nfirst %d rows:\n", min(int64(rows), md.NumRows))
	shown := 0
	for shown < rows && rr.Next() {
		rec := rr.RecordBatch()
		shown += printRows(w, rec, origin, shown, rows-shown)
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func inspectArrow(w io.Writer, path string, rows int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return err
	}
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(newBoundedAllocator(inspectMemoryCap(fst.Size()))))
	if err != nil {
		return fmt.Errorf("not a readable Arrow IPC file: %w", err)
	}
	defer r.Close()
	st, _ := f.Stat()
	var total int64
	var sizes []string
	for k := 0; k < r.NumRecords(); k++ {
		rec, err := r.RecordBatch(k)
		if err != nil {
			return fmt.Errorf("record batch %d: %w", k, err)
		}
		total += rec.NumRows()
		sizes = append(sizes, fmt.Sprint(rec.NumRows()))
	}
	fmt.Fprintf(w, "file: %s (Arrow IPC file, %d bytes)\nrows: %d\nrecord batches: %d", path, st.Size(), total, r.NumRecords())
	if len(sizes) > 0 && len(sizes) <= 20 {
		fmt.Fprintf(w, " (%s rows)", strings.Join(sizes, ", "))
	}
	fmt.Fprintln(w, "\n\nArrow schema:")
	printArrowSchema(w, r.Schema())
	if rows <= 0 || total == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nfirst %d rows:\n", min(int64(rows), total))
	shown := 0
	for k := 0; k < r.NumRecords() && shown < rows; k++ {
		rec, err := r.RecordBatch(k)
		if err != nil {
			return fmt.Errorf("record batch %d: %w", k, err)
		}
		shown += printRows(w, rec, r.Schema(), shown, rows-shown)
	}
	return nil
}

func inspectJSONL(w io.Writer, path string, rows int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	br := bufio.NewReaderSize(f, 1<<20)
	var first []orderedObject
	var n int64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			n++
			if len(first) < max(rows, 1) {
				obj, perr := parseOrdered(b)
				if perr != nil {
					return fmt.Errorf("line %d: %w", line, perr)
				}
				first = append(first, obj)
			} else if !json.Valid(b) {
				return fmt.Errorf("line %d: invalid JSON", line)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "file: %s (JSONL, %d bytes)\nrows: %d\n", path, st.Size(), n)
	if len(first) > 0 {
		fmt.Fprintln(w, "\ncolumns (from the first row):")
		for _, kv := range first[0] {
			fmt.Fprintf(w, "  %s: %s\n", kv.key, jsonKind(kv.val))
		}
	}
	if rows <= 0 || n == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nfirst %d rows:\n", len(first))
	for i, obj := range first {
		if i >= rows {
			break
		}
		fmt.Fprintf(w, "row %d\n", i+1)
		for _, kv := range obj {
			printField(w, kv.key, kv.val)
		}
	}
	return nil
}

type keyVal struct {
	key string
	val json.RawMessage
}

type orderedObject []keyVal

// parseOrdered reads a JSON object keeping its key order.
func parseOrdered(b []byte) (orderedObject, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out orderedObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, keyVal{key: tok.(string), val: v})
	}
	return out, nil
}

func jsonKind(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "?"
	}
	switch t[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(t, &arr) == nil && len(arr) > 0 {
			return "list<" + jsonKind(arr[0]) + ">"
		}
		return "list"
	}
	return "number"
}

// printField prints one column of a row: lists of objects (messages) one
// pretty-printed object per element, everything else on one line.
func printField(w io.Writer, name string, v json.RawMessage) {
	t := bytes.TrimSpace(v)
	var arr []json.RawMessage
	if len(t) > 0 && t[0] == '[' && json.Unmarshal(t, &arr) == nil && len(arr) > 0 && bytes.HasPrefix(bytes.TrimSpace(arr[0]), []byte("{")) {
		fmt.Fprintf(w, "  %s: [%d]\n", name, len(arr))
		for i, e := range arr {
			pretty := prettyJSON(e)
			prefix := fmt.Sprintf("    [%d] ", i)
			w.Write(indentAfterFirst(pretty, prefix, strings.Repeat(" ", len(prefix))))
		}
		return
	}
	fmt.Fprintf(w, "  %s: %s\n", name, t)
}

// prettyJSON indents a JSON value, keeping its key order.
func prettyJSON(e json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, e, "", "  ") != nil {
		return string(e)
	}
	return b.String()
}

func indent(s, prefix string) []byte {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return []byte(b.String())
}

func indentAfterFirst(s, first, rest string) []byte {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(rest)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func printArrowSchema(w io.Writer, s *arrow.Schema) {
	for _, f := range s.Fields() {
		null := ""
		if !f.Nullable {
			null = " not null"
		}
		fmt.Fprintf(w, "  %s: %s%s\n", f.Name, typeString(f.Type), null)
	}
	if md := s.Metadata(); md.Len() > 0 {
		keys := append([]string(nil), md.Keys()...)
		sort.Strings(keys)
		fmt.Fprintf(w, "  metadata keys: %s\n", strings.Join(keys, ", "))
	}
}

func typeString(t arrow.DataType) string {
	switch t := t.(type) {
	case *arrow.ListType:
		return "list<" + typeString(t.Elem()) + ">"
	case arrow.ExtensionType:
		return fmt.Sprintf("extension<%s, storage %s>", t.ExtensionName(), t.StorageType())
	}
	return t.String()
}

// printRows prints up to limit rows of a record batch as JSON per column.
// Columns that the schema (stored or file) types as arrow.json are printed
// as JSON even when the reader returned bytes.
func printRows(w io.Writer, rec arrow.RecordBatch, typed *arrow.Schema, first, limit int) int {
	n := min(int(rec.NumRows()), limit)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "row %d\n", first+i+1)
		for c := 0; c < int(rec.NumCols()); c++ {
			isJSON := false
			if typed != nil && c < typed.NumFields() {
				isJSON = holdsJSON(typed.Field(c).Type)
			}
			printField(w, rec.ColumnName(c), marshal(cellValue(rec.Column(c), i, isJSON)))
		}
	}
	return n
}

// marshal renders a value as JSON without HTML escaping (for people).
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(fmt.Sprintf("%q", fmt.Sprint(v)))
	}
	return bytes.TrimSpace(b.Bytes())
}

func holdsJSON(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.ListType:
		return holdsJSON(t.Elem())
	case *extensions.JSONType:
		return true
	}
	return false
}

// cellValue converts one Arrow value to something json.Marshal renders
// faithfully.
func cellValue(a arrow.Array, i int, isJSON bool) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for k := start; k < end; k++ {
			out = append(out, cellValue(a.ListValues(), int(k), isJSON))
		}
		return out
	case *extensions.JSONArray:
		return json.RawMessage(a.ValueStr(i))
	case *array.Binary:
		if isJSON && json.Valid(a.Value(i)) {
			return json.RawMessage(a.Value(i))
		}
		return string(a.Value(i))
	case *array.String:
		if isJSON && json.Valid([]byte(a.Value(i))) {
			return json.RawMessage(a.Value(i))
		}
		return a.Value(i)
	}
	return a.GetOneForMarshal(i)
}
