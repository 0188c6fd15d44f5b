package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// jsonlSink writes one JSON object per row, columns in table order, message
// columns as arrays of objects (never strings).
type jsonlSink[R Row] struct {
	tmp  *tempFile
	bw   *bufio.Writer
	cols []column[R]
	buf  []byte
	str  bytes.Buffer
	enc  *json.Encoder
}

func newJSONLSink[R Row](final string, cols []column[R]) (*jsonlSink[R], error) {
	tmp, err := createTemp(final)
	if err != nil {
		return nil, err
	}
	s := &jsonlSink[R]{tmp: tmp, bw: bufio.NewWriterSize(tmp.f, 1<<20), cols: cols}
	s.enc = json.NewEncoder(&s.str)
	s.enc.SetEscapeHTML(false)
	return s, nil
}

func (s *jsonlSink[R]) path() string { return s.tmp.final }

// appendString appends v as a JSON string (no HTML escaping, for people).
func (s *jsonlSink[R]) appendString(b []byte, v string) []byte {
	s.str.Reset()
	_ = s.enc.Encode(v) // a string always encodes
	out := s.str.Bytes()
	return append(b, out[:len(out)-1]...) // drop the encoder's newline
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...) // JSON has no NaN; Parquet and Arrow keep it
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func (s *jsonlSink[R]) write(r *R) error {
	b := append(s.buf[:0], '{')
	for i, c := range s.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, c.name)
		b = append(b, ':')
		switch c.kind {
		case kString, kDictString:
			b = s.appendString(b, c.str(r))
		case kBool:
			b = strconv.AppendBool(b, c.boolean(r))
		case kInt64:
			b = strconv.AppendInt(b, c.i64(r), 10)
		case kFloat64:
			b = appendFloat(b, c.f64(r))
		case kOptFloat64:
			b = appendFloat(b, *c.optf(r))
		case kMessages:
			b = append(b, '[')
			for j, m := range c.msgs(r) {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendCompact(b, m)
			}
			b = append(b, ']')
		case kStrings:
			b = append(b, '[')
			for j, v := range c.strs(r) {
				if j > 0 {
					b = append(b, ',')
				}
				b = s.appendString(b, v)
			}
			b = append(b, ']')
		case kInt64s:
			b = append(b, '[')
			for j, v := range c.i64s(r) {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, v, 10)
			}
			b = append(b, ']')
		case kFloat64s:
			b = append(b, '[')
			for j, v := range c.f64s(r) {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendFloat(b, v)
			}
			b = append(b, ']')
		}
	}
	b = append(b, '}', '\n')
	s.buf = b
	_, err := s.bw.Write(b)
	return err
}

// appendCompact appends a JSON value on one line (JSONL needs one row a line).
func appendCompact(b []byte, m []byte) []byte {
	if bytes.ContainsAny(m, "\n\r") {
		var c bytes.Buffer
		if json.Compact(&c, m) == nil {
			return append(b, c.Bytes()...)
		}
	}
	return append(b, bytes.TrimSpace(m)...)
}

func (s *jsonlSink[R]) finish() error {
	if err := s.bw.Flush(); err != nil {
		return err
	}
	return s.tmp.finish()
}

func (s *jsonlSink[R]) commit() error { return s.tmp.commit() }
func (s *jsonlSink[R]) abort()        { s.tmp.abort() }
