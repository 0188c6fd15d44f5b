package export

import (
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// Parquet key-value metadata written beside "ARROW:schema".
const (
	MetaSchemaVersion = "antidrift.schema_version"
	MetaTable         = "antidrift.table"
	MetaToolkit       = "antidrift.toolkit_version"
)

// zstdCodec compresses the pages of every Parquet file written: one
// encoder (keptZstd) for all of them, a split-file table writing three
// files at once.
var zstdCodec = newKeptZstd()

// parquetSink streams rows into a Parquet file with bounded row groups.
type parquetSink[R Row] struct {
	tmp    *tempFile
	cols   []column[R]
	pw     *parquet.Writer
	opts   Options
	row    parquet.Row
	rows   []parquet.Row
	group  int64 // rows in the current row group
	groups int   // row groups written
	base   int64 // pw.Size() when the current row group started
}

func newParquetSink[R Row](final, table string, cols []column[R], opts Options) (*parquetSink[R], error) {
	arrowMeta, err := serializedArrowSchema(arrowSchema(cols))
	if err != nil {
		return nil, fmt.Errorf("export: arrow schema: %w", err)
	}
	tmp, err := createTemp(final)
	if err != nil {
		return nil, err
	}
	wopts := []parquet.WriterOption{
		parquetSchema(table, cols),
		parquet.Compression(zstdCodec),
		// Version 1 data pages: what pyarrow writes by default and what
		// older Spark/Iceberg vectorised readers accept.
		parquet.DataPageVersion(1),
		// A fixed created_by (never the build's VCS stamp) keeps files
		// byte-identical across builds of one version.
		parquet.CreatedBy("antidrift", opts.ToolkitVersion, "parquet-go v0.32.0"),
		parquet.KeyValueMetadata("ARROW:schema", arrowMeta),
		parquet.KeyValueMetadata(MetaSchemaVersion, dataset.SchemaVersion),
		parquet.KeyValueMetadata(MetaTable, table),
		parquet.KeyValueMetadata(MetaToolkit, opts.ToolkitVersion),
	}
	// Page-header statistics of message columns would copy whole messages
	// into every page header, so they are skipped. Their bounds in the
	// page index (column index) are kept: parquet-go truncates them to
	// ColumnIndexSizeLimit bytes (min cut, max cut and incremented), so
	// they stay valid. SkipPageBounds must not be used: parquet-go then
	// indexes every non-null page with min = max = "" — bounds that
	// exclude every message, which a reader filtering on the page index
	// takes at their word.
	for _, c := range cols {
		if c.kind == kMessages {
			wopts = append(wopts, parquet.SkipPageStatistics(c.name, "list", "element"))
		}
	}
	config, err := parquet.NewWriterConfig(wopts...)
	if err != nil {
		tmp.abort()
		return nil, fmt.Errorf("export: parquet: %w", err)
	}
	pw := parquet.NewWriter(tmp.f, config)
	return &parquetSink[R]{tmp: tmp, cols: cols, pw: pw, opts: opts, rows: make([]parquet.Row, 1)}, nil
}

func (s *parquetSink[R]) path() string { return s.tmp.final }

// bytesOf views a string as bytes without copying; parquet-go copies values
// into its column buffers before WriteRows returns.
func bytesOf(v string) []byte { return unsafe.Slice(unsafe.StringData(v), len(v)) }

// deconstruct builds the Parquet row of r: one leaf per column, levels set
// by hand. Lists are required with required elements (max definition level
// 1, max repetition level 1): an empty list is one null at definition 0.
func (s *parquetSink[R]) deconstruct(r *R) parquet.Row {
	row := s.row[:0]
	for ci, c := range s.cols {
		switch c.kind {
		case kString, kDictString:
			row = append(row, parquet.ByteArrayValue(bytesOf(c.str(r))).Level(0, 0, ci))
		case kBool:
			row = append(row, parquet.BooleanValue(c.boolean(r)).Level(0, 0, ci))
		case kInt64:
			row = append(row, parquet.Int64Value(c.i64(r)).Level(0, 0, ci))
		case kFloat64:
			row = append(row, parquet.DoubleValue(c.f64(r)).Level(0, 0, ci))
		case kOptFloat64:
			row = append(row, parquet.DoubleValue(*c.optf(r)).Level(0, 0, ci))
		case kMessages:
			ms := c.msgs(r)
			if len(ms) == 0 {
				row = append(row, parquet.NullValue().Level(0, 0, ci))
			}
			for i, m := range ms {
				row = append(row, parquet.ByteArrayValue(m).Level(rep(i), 1, ci))
			}
		case kStrings:
			vs := c.strs(r)
			if len(vs) == 0 {
				row = append(row, parquet.NullValue().Level(0, 0, ci))
			}
			for i, v := range vs {
				row = append(row, parquet.ByteArrayValue(bytesOf(v)).Level(rep(i), 1, ci))
			}
		case kInt64s:
			vs := c.i64s(r)
			if len(vs) == 0 {
				row = append(row, parquet.NullValue().Level(0, 0, ci))
			}
			for i, v := range vs {
				row = append(row, parquet.Int64Value(v).Level(rep(i), 1, ci))
			}
		case kFloat64s:
			vs := c.f64s(r)
			if len(vs) == 0 {
				row = append(row, parquet.NullValue().Level(0, 0, ci))
			}
			for i, v := range vs {
				row = append(row, parquet.DoubleValue(v).Level(rep(i), 1, ci))
			}
		}
	}
	s.row = row
	return row
}

func rep(i int) int {
	if i == 0 {
		return 0
	}
	return 1
}

func (s *parquetSink[R]) write(r *R) error {
	s.rows[0] = s.deconstruct(r)
	if _, err := s.pw.WriteRows(s.rows); err != nil {
		return err
	}
	s.group++
	if s.group >= int64(s.opts.RowGroupRows) || s.pw.Size()-s.base >= s.opts.RowGroupBytes {
		return s.flush()
	}
	return nil
}

func (s *parquetSink[R]) flush() error {
	if err := s.pw.Flush(); err != nil {
		return err
	}
	s.group = 0
	s.groups++
	s.base = s.pw.Size()
	return nil
}

func (s *parquetSink[R]) finish() error {
	if err := s.pw.Close(); err != nil {
		return err
	}
	// The writer holds every row group's footer entries: a sharded split
	// keeps its finished shards until it is committed, not their footers.
	s.pw, s.row, s.rows = nil, nil, nil
	return s.tmp.finish()
}

func (s *parquetSink[R]) commit() error { return s.tmp.commit() }
func (s *parquetSink[R]) abort()        { s.tmp.abort() }
