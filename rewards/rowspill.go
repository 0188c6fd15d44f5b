package rewards

// How Table keeps a large scenario's rows between its two passes: written
// by the first pass, as it renders them, to a temporary file, and read back
// by rank in row order.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// rowSpill holds the rendered rows of a scenario's trajectories in an
// unnamed temporary file (in $TMPDIR, removed at once), by rank.
type rowSpill struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	at   []spilledRows // by rank; n 0: no rows
}

type spilledRows struct {
	off int64
	n   int32
}

func newRowSpill(ranks int) (*rowSpill, error) {
	f, err := os.CreateTemp("", "antidrift-rewards-*")
	if err != nil {
		return nil, fmt.Errorf("rewards: a file for a scenario's rows: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("rewards: a file for a scenario's rows: %w", err)
	}
	return &rowSpill{f: f, w: bufio.NewWriterSize(f, 1<<20), at: make([]spilledRows, ranks)}, nil
}

// put writes the encoded rows of rank k (encodeRows).
func (s *rowSpill) put(k int, enc []byte) error {
	if len(enc) > math.MaxInt32 {
		return fmt.Errorf("rewards: a trajectory's rows are %d bytes encoded, past 2 GiB", len(enc))
	}
	if _, err := s.w.Write(enc); err != nil {
		return fmt.Errorf("rewards: writing a scenario's rows: %w", err)
	}
	s.at[k] = spilledRows{off: s.size, n: int32(len(enc))}
	s.size += int64(len(enc))
	return nil
}

// finish ends the writing.
func (s *rowSpill) finish() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("rewards: writing a scenario's rows: %w", err)
	}
	s.w = nil
	return nil
}

// source gives the rows of the ranks asked for, read back.
func (s *rowSpill) source(ks []int, fn func(k int, rows []*dataset.RewardRow) error) error {
	for _, k := range ks {
		at := s.at[k]
		b := make([]byte, at.n) // the rows' byte slices point into it: one per trajectory
		if _, err := s.f.ReadAt(b, at.off); err != nil {
			return fmt.Errorf("rewards: reading a scenario's rows back: %w", err)
		}
		rows, err := decodeRows(b)
		if err != nil {
			return err
		}
		if err := fn(k, rows); err != nil {
			return err
		}
	}
	return nil
}

func (s *rowSpill) close() {
	if s != nil && s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// encodeRows appends rows to b, every field of each: counts and lengths as
// uvarints (a slice's count or a raw message's length plus one, 0 for
// nil), numbers as their bits.
func encodeRows(b []byte, rows []*dataset.RewardRow) []byte {
	b = binary.AppendUvarint(b, uint64(len(rows)))
	for _, r := range rows {
		b = appendRaws(b, r.Prompt)
		b = appendRaws(b, r.Completion)
		b = appendRaws(b, r.Tools)
		b = appendString(b, r.GroupID)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Reward))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Advantage))
		if r.ProcessRewards == nil {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(r.ProcessRewards))+1)
			for _, v := range r.ProcessRewards {
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
			}
		}
		b = binary.AppendVarint(b, r.Turn)
		for _, s := range []string{r.TrajID, r.ScenarioID, r.Domain, r.Split, r.Checkpoint, r.Framework, r.ToolFormat} {
			b = appendString(b, s)
		}
		b = append(b, boolByte(r.Success), boolByte(r.Drift))
		if r.BoundaryTools == nil {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(r.BoundaryTools))+1)
			for _, s := range r.BoundaryTools {
				b = appendString(b, s)
			}
		}
		b = binary.AppendVarint(b, r.PromptTokensEst)
		b = binary.AppendVarint(b, r.CompletionTokensEst)
		b = appendString(b, r.SchemaVersion)
	}
	return b
}

func appendRaws(b []byte, vs []json.RawMessage) []byte {
	if vs == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(vs))+1)
	for _, v := range vs {
		if v == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(v))+1)
		b = append(b, v...)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var errRowsEncoding = errors.New("rewards: a scenario's rows read back damaged")

// rowReader decodes what encodeRows wrote; the first error sticks.
type rowReader struct {
	b   []byte
	err error
}

func (r *rowReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *rowReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *rowReader) fail() {
	if r.err == nil {
		r.err = errRowsEncoding
	}
	r.b = nil
}

// bytes takes the next n bytes (a slice of the buffer, not a copy).
func (r *rowReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *rowReader) float() float64 {
	v := r.bytes(8)
	if len(v) < 8 {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v))
}

func (r *rowReader) str() string { return string(r.bytes(r.uvarint())) }

func (r *rowReader) raws() []json.RawMessage {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n-1 > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	vs := make([]json.RawMessage, n-1)
	for i := range vs {
		if m := r.uvarint(); m > 0 {
			vs[i] = r.bytes(m - 1)
		}
	}
	return vs
}

func (r *rowReader) boolean() bool {
	v := r.bytes(1)
	return len(v) == 1 && v[0] == 1
}

// decodeRows reads what encodeRows wrote; the rows' raw messages point
// into b.
func decodeRows(b []byte) ([]*dataset.RewardRow, error) {
	r := &rowReader{b: b}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(b)) {
		return nil, errRowsEncoding
	}
	rows := make([]*dataset.RewardRow, 0, n)
	for range n {
		row := &dataset.RewardRow{}
		row.Prompt, row.Completion, row.Tools = r.raws(), r.raws(), r.raws()
		row.GroupID = r.str()
		row.Reward, row.Advantage = r.float(), r.float()
		if k := r.uvarint(); k > 0 && r.err == nil {
			if k-1 > uint64(len(r.b)) {
				r.fail()
			} else {
				row.ProcessRewards = make([]float64, k-1)
				for i := range row.ProcessRewards {
					row.ProcessRewards[i] = r.float()
				}
			}
		}
		row.Turn = r.varint()
		for _, s := range []*string{&row.TrajID, &row.ScenarioID, &row.Domain, &row.Split, &row.Checkpoint, &row.Framework, &row.ToolFormat} {
			*s = r.str()
		}
		row.Success, row.Drift = r.boolean(), r.boolean()
		if k := r.uvarint(); k > 0 && r.err == nil {
			if k-1 > uint64(len(r.b)) {
				r.fail()
			} else {
				row.BoundaryTools = make([]string, k-1)
				for i := range row.BoundaryTools {
					row.BoundaryTools[i] = r.str()
				}
			}
		}
		row.PromptTokensEst, row.CompletionTokensEst = r.varint(), r.varint()
		row.SchemaVersion = r.str()
		if r.err != nil {
			return nil, r.err
		}
		rows = append(rows, row)
	}
	if len(r.b) != 0 {
		return nil, errRowsEncoding
	}
	return rows, nil
}
