package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Run is an open run folder.
type Run struct {
	dir      string
	Manifest Manifest
	done     map[string]bool
	lock     *Lock
}

// Close releases the run folder's lock. Writers must be closed first.
func (r *Run) Close() error { return r.lock.Release() }

// Dir is the run folder.
func (r *Run) Dir() string { return r.dir }

// Done reports whether an episode already has a record.
func (r *Run) Done(trajID string) bool { return r.done[trajID] }

// DoneCount is the number of finished episodes found when the run opened.
func (r *Run) DoneCount() int { return len(r.done) }

// ShardFile names the trajectory file of a shard, e.g. "part-0-of-1.jsonl".
func ShardFile(shard string) string {
	return "part-" + strings.ReplaceAll(shard, "/", "-of-") + ".jsonl"
}

// Writer appends records to one trajectory file. Lines are buffered and
// written with a sync every batch records or interval, whichever comes
// first, and on Close. A crash loses at most the unsynced batch, which the
// next invocation reruns; a torn line is truncated by Open.
type Writer struct {
	mu      sync.Mutex
	syncMu  sync.Mutex // one fsync at a time, outside mu
	f       *os.File
	bw      *bufio.Writer
	pending int
	batch   int
	err     error
	stop    chan struct{}
	stopped chan struct{}
}

// Writer opens the run's trajectory file for the given shard for appending.
func (r *Run) Writer(shard string, batch int, interval time.Duration) (*Writer, error) {
	return openWriter(filepath.Join(r.dir, trajDir, ShardFile(shard)), batch, interval)
}

// ErrorLog opens errors/<shard>.jsonl, where records of episodes that failed
// for infrastructure reasons go: they are kept for diagnosis, out of the
// trajectories, and retried on the next invocation.
func (r *Run) ErrorLog(shard string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Join(r.dir, errorsDir), 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return openWriter(filepath.Join(r.dir, errorsDir, ShardFile(shard)), 1, time.Second)
}

func openWriter(path string, batch int, interval time.Duration) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if batch <= 0 {
		batch = 1
	}
	w := &Writer{f: f, bw: bufio.NewWriterSize(f, 1<<20), batch: batch, stop: make(chan struct{}), stopped: make(chan struct{})}
	go w.tick(interval)
	return w, nil
}

func (w *Writer) tick(interval time.Duration) {
	defer close(w.stopped)
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if w.pending > 0 && w.err == nil {
				w.err = w.syncLocked()
			}
			w.mu.Unlock()
		}
	}
}

// Append writes one record. Safe for concurrent use. A full batch is
// written under the lock but synced outside it, so that other episodes keep
// appending while the disk catches up.
//
// An error message is recorded with its URLs redacted (secret.Text): a
// transport error quotes the endpoint, credentials and query included.
func (w *Writer) Append(rec *trajectory.Record) error {
	if rec.Error != "" {
		if red := secret.Text(rec.Error); red != rec.Error {
			cp := *rec
			cp.Error = red
			rec = &cp
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	b = append(b, '\n')
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return w.err
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("store: %w", err)
		w.mu.Unlock()
		return w.err
	}
	w.pending++
	if w.pending < w.batch {
		w.mu.Unlock()
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("store: %w", err)
		w.mu.Unlock()
		return w.err
	}
	w.pending = 0
	w.mu.Unlock()
	w.syncMu.Lock()
	err = w.f.Sync()
	w.syncMu.Unlock()
	if err != nil {
		w.mu.Lock()
		w.err = fmt.Errorf("store: %w", err)
		w.mu.Unlock()
		return w.err
	}
	return nil
}

func (w *Writer) syncLocked() error {
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	w.pending = 0
	return nil
}

// Close syncs what is pending and closes the file.
func (w *Writer) Close() error {
	close(w.stop)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if err == nil {
		err = w.syncLocked()
	}
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: %w", cerr)
	}
	return err
}

// Iterator streams the records of one or more run folders, file by file,
// holding one record in memory at a time.
type Iterator struct {
	files []string
	dirOf []string // the run folder of each of files
	dir   string
	seen  map[string]pos // traj_ids of the current folder
	cur   *os.File
	br    *bufio.Reader
	name  string
	line  int
	rec   trajectory.Record
	err   error
}

type pos struct {
	file string
	line int
}

// Records iterates over the trajectories of run folders, in file order,
// checking each line against the definition of a valid record (see
// DecodeRecord): blank lines are skipped; a traj_id seen twice in one
// folder is an error (ErrDuplicate).
func Records(dirs ...string) *Iterator {
	it := &Iterator{}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, manifestName)); err != nil {
			it.err = fmt.Errorf("store: %s is not a run folder (no %s)", d, manifestName)
			return it
		}
		fs, err := filepath.Glob(filepath.Join(d, trajDir, "*.jsonl"))
		if err != nil {
			it.err = err
			return it
		}
		sort.Strings(fs)
		it.files = append(it.files, fs...)
		for range fs {
			it.dirOf = append(it.dirOf, d)
		}
	}
	return it
}

// Next advances to the next record.
func (it *Iterator) Next() bool {
	for it.err == nil {
		if it.cur == nil {
			if len(it.files) == 0 {
				return false
			}
			it.name, it.files = it.files[0], it.files[1:]
			if d := it.dirOf[0]; d != it.dir || it.seen == nil {
				it.dir, it.seen = d, map[string]pos{}
			}
			it.dirOf = it.dirOf[1:]
			f, err := os.Open(it.name)
			if err != nil {
				it.err = fmt.Errorf("store: %w", err)
				return false
			}
			it.cur, it.br, it.line = f, bufio.NewReaderSize(f, 1<<20), 0
		}
		b, err := it.br.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			it.cur.Close()
			it.cur = nil
			continue
		}
		it.line++
		if b[len(b)-1] != '\n' {
			it.err = fmt.Errorf("store: %s:%d: incomplete last line (a run still writing, or killed: rerun it to repair)", it.name, it.line)
			return false
		}
		if blank(b) {
			continue
		}
		if err := DecodeRecord(b, &it.rec); err != nil {
			it.err = fmt.Errorf("store: %s:%d: not a valid record: %w", it.name, it.line, err)
			return false
		}
		if first, dup := it.seen[it.rec.TrajID]; dup {
			it.err = duplicateError(it.name, it.line, it.rec.TrajID, first.file, first.line, it.dir)
			return false
		}
		it.seen[it.rec.TrajID] = pos{it.name, it.line}
		return true
	}
	return false
}

// At returns the current record; it is overwritten by the next call to Next.
func (it *Iterator) At() *trajectory.Record { return &it.rec }

// Pos names the file and line the current record was read from, for
// messages such as "FILE:LINE: ...".
func (it *Iterator) Pos() (file string, line int) { return it.name, it.line }

// Err returns the first error met.
func (it *Iterator) Err() error { return it.err }

// Close releases the open file, if any.
func (it *Iterator) Close() {
	if it.cur != nil {
		it.cur.Close()
		it.cur = nil
	}
}
