package export

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultShardBytes bounds a Parquet file of one split in the split-file
// layout: past it the split is cut into shards named as the Hugging Face
// Hub names them (NAME-SPLIT-00000-of-00003.parquet). The bound is checked
// after each row, on parquet-go's size estimate, so a shard passes it by
// at most one row group.
const DefaultShardBytes = 256 << 20

// DefaultShardRowGroups bounds the row groups of a Parquet file of one
// split in the split-file layout, as DefaultShardBytes bounds its bytes:
// parquet-go keeps every row group's footer entries (column chunks, page
// index) in memory until the file is closed, about 25 KB a row group of
// the rewards table, so an unbounded file costs memory that grows with the
// rows written (a 4.4-million-row rewards split: 130 MB). 512 row groups
// of DefaultRowGroupRows are 524,288 rows, some 12 MB of footer entries
// per file open. Rows compress well enough that this bound, not the
// bytes, cuts a large table.
const DefaultShardRowGroups = 512

var shardName = regexp.MustCompile(`^(.*)-\d{5}-of-\d{5}\.parquet$`)

// ShardBase is the one-file name of a shard (data/dpo-train-00001-of-00003.parquet
// → data/dpo-train.parquet), or "" when rel is not a shard's name.
func ShardBase(rel string) string {
	m := shardName.FindStringSubmatch(rel)
	if m == nil {
		return ""
	}
	return m[1] + ".parquet"
}

// shardFile is the name of shard i of n beside the one-file name base
// (".../NAME-SPLIT.parquet"); base itself when n is 1.
func shardFile(base string, i, n int) string {
	if n == 1 {
		return base
	}
	return fmt.Sprintf("%s-%05d-of-%05d.parquet", strings.TrimSuffix(base, ".parquet"), i, n)
}

// shardedSink writes one split's Parquet rows into files of bounded size.
// The shard count is known only at the end, so shards are written under
// temporary names and named at finish.
type shardedSink[R Row] struct {
	base   string // final path of the one-file layout
	table  string
	cols   []column[R]
	opts   Options
	shards []*parquetSink[R]
	cur    *parquetSink[R]
}

func newShardedSink[R Row](base, table string, cols []column[R], opts Options) *shardedSink[R] {
	return &shardedSink[R]{base: base, table: table, cols: cols, opts: opts}
}

func (s *shardedSink[R]) path() string { return s.base }

func (s *shardedSink[R]) open() error {
	p, err := newParquetSink(s.base, s.table, s.cols, s.opts)
	if err != nil {
		return err
	}
	s.shards = append(s.shards, p)
	s.cur = p
	return nil
}

func (s *shardedSink[R]) write(r *R) error {
	if s.cur == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	if err := s.cur.write(r); err != nil {
		return err
	}
	if s.opts.ShardBytes > 0 && s.cur.pw.Size() >= s.opts.ShardBytes ||
		s.opts.ShardRowGroups > 0 && s.cur.groups >= s.opts.ShardRowGroups {
		if err := s.cur.finish(); err != nil {
			return err
		}
		s.cur = nil
	}
	return nil
}

// finish completes the last shard (an empty split still gets its one
// file, so the card names files that exist) and names every shard.
func (s *shardedSink[R]) finish() error {
	if len(s.shards) == 0 {
		if err := s.open(); err != nil {
			return err
		}
	}
	if s.cur != nil {
		if err := s.cur.finish(); err != nil {
			return err
		}
		s.cur = nil
	}
	for i, p := range s.shards {
		p.tmp.final = shardFile(s.base, i, len(s.shards))
	}
	return nil
}

func (s *shardedSink[R]) commit() error {
	for _, p := range s.shards {
		if err := p.commit(); err != nil {
			return err
		}
	}
	return nil
}

func (s *shardedSink[R]) abort() {
	for _, p := range s.shards {
		p.abort()
	}
}

// finals are the final paths of the shards (after finish).
func (s *shardedSink[R]) finals() []string {
	out := make([]string, len(s.shards))
	for i, p := range s.shards {
		out[i] = p.tmp.final
	}
	return out
}

// RemoveStaleShards removes, in dir, the Parquet split files of the
// one-file names bases ("data/NAME-SPLIT.parquet", relative to dir) and
// their shards that are not in written (relative, slash-separated): what
// an earlier export with more shards left, which a data_files glob would
// otherwise pick up.
func RemoveStaleShards(dir string, bases, written []string) error {
	keep := map[string]bool{}
	for _, w := range written {
		keep[w] = true
	}
	isBase := map[string]bool{}
	for _, b := range bases {
		isBase[b] = true
	}
	dirs := map[string]bool{}
	for _, b := range bases {
		dirs[filepath.Dir(filepath.FromSlash(b))] = true
	}
	for d := range dirs {
		es, err := os.ReadDir(filepath.Join(dir, d))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range es {
			rel := filepath.ToSlash(filepath.Join(d, e.Name()))
			if e.IsDir() || keep[rel] {
				continue
			}
			if isBase[rel] || isBase[ShardBase(rel)] {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
	}
	return nil
}
