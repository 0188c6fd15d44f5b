package export

import (
	"bufio"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrowSink streams rows into an Arrow IPC file (the random-access "file"
// format, .arrow) in record batches bounded by rows and bytes, buffers
// compressed with zstd.
type arrowSink[R Row] struct {
	tmp    *tempFile
	bw     *bufio.Writer
	cols   []column[R]
	opts   Options
	schema *arrow.Schema
	b      *array.RecordBuilder
	fw     *ipc.FileWriter
	n      int   // rows in the current batch
	size   int64 // bytes appended to the current batch (approximate)
	apps   []func(r *R) int64
}

func newArrowSink[R Row](final string, cols []column[R], opts Options) (*arrowSink[R], error) {
	tmp, err := createTemp(final)
	if err != nil {
		return nil, err
	}
	schema := arrowSchema(cols)
	mem := memory.DefaultAllocator
	bw := bufio.NewWriterSize(tmp.f, 1<<20)
	// Buffers compressed with zstd (Arrow IPC's own compression, which
	// pyarrow and arrow-go read); tool schemas repeat on every row.
	fw, err := ipc.NewFileWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd())
	if err != nil {
		tmp.abort()
		return nil, fmt.Errorf("export: arrow: %w", err)
	}
	s := &arrowSink[R]{tmp: tmp, bw: bw, cols: cols, opts: opts, schema: schema, fw: fw, b: array.NewRecordBuilder(mem, schema)}
	for i, c := range cols {
		s.apps = append(s.apps, appender(c, s.b.Field(i)))
	}
	return s, nil
}

// appender returns the function appending a column's value of a row to the
// column's builder; it returns the bytes appended.
func appender[R Row](c column[R], fb array.Builder) func(r *R) int64 {
	switch c.kind {
	case kString, kDictString:
		b := fb.(*array.StringBuilder)
		return func(r *R) int64 { v := c.str(r); b.Append(v); return int64(len(v)) + 4 }
	case kBool:
		b := fb.(*array.BooleanBuilder)
		return func(r *R) int64 { b.Append(c.boolean(r)); return 1 }
	case kInt64:
		b := fb.(*array.Int64Builder)
		return func(r *R) int64 { b.Append(c.i64(r)); return 8 }
	case kFloat64:
		b := fb.(*array.Float64Builder)
		return func(r *R) int64 { b.Append(c.f64(r)); return 8 }
	case kOptFloat64:
		b := fb.(*array.Float64Builder)
		return func(r *R) int64 { b.Append(*c.optf(r)); return 8 }
	case kMessages:
		lb := fb.(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.ExtensionBuilder).Builder.(*array.StringBuilder)
		return func(r *R) int64 {
			lb.Append(true)
			n := int64(4)
			for _, m := range c.msgs(r) {
				vb.BinaryBuilder.Append(m)
				n += int64(len(m)) + 4
			}
			return n
		}
	case kStrings:
		lb := fb.(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.StringBuilder)
		return func(r *R) int64 {
			lb.Append(true)
			n := int64(4)
			for _, v := range c.strs(r) {
				vb.Append(v)
				n += int64(len(v)) + 4
			}
			return n
		}
	case kInt64s:
		lb := fb.(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.Int64Builder)
		return func(r *R) int64 {
			lb.Append(true)
			vs := c.i64s(r)
			vb.AppendValues(vs, nil)
			return 4 + 8*int64(len(vs))
		}
	case kFloat64s:
		lb := fb.(*array.ListBuilder)
		vb := lb.ValueBuilder().(*array.Float64Builder)
		return func(r *R) int64 {
			lb.Append(true)
			vs := c.f64s(r)
			vb.AppendValues(vs, nil)
			return 4 + 8*int64(len(vs))
		}
	}
	panic(fmt.Sprintf("export: unknown column kind %d", c.kind))
}

func (s *arrowSink[R]) path() string { return s.tmp.final }

func (s *arrowSink[R]) write(r *R) error {
	for _, app := range s.apps {
		s.size += app(r)
	}
	s.n++
	if s.n >= s.opts.RowGroupRows || s.size >= s.opts.RowGroupBytes {
		return s.flush()
	}
	return nil
}

func (s *arrowSink[R]) flush() error {
	if s.n == 0 {
		return nil
	}
	rec := s.b.NewRecordBatch()
	defer rec.Release()
	s.n, s.size = 0, 0
	return s.fw.Write(rec)
}

func (s *arrowSink[R]) finish() error {
	err := s.flush()
	s.b.Release()
	if err != nil {
		return err
	}
	if err := s.fw.Close(); err != nil {
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	return s.tmp.finish()
}

func (s *arrowSink[R]) commit() error { return s.tmp.commit() }
func (s *arrowSink[R]) abort()        { s.tmp.abort() }
