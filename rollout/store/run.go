package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// maxPooledLine bounds the line buffer an encoder keeps for the next
// record (Append copies each line into the file's buffered writer).
const maxPooledLine = 1 << 20

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
	e := encoders.Get().(*recordEncoder)
	defer encoders.Put(e)
	b, ok := e.append(e.line[:0], rec)
	if !ok {
		var err error
		if b, err = json.Marshal(rec); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	b = append(b, '\n')
	if ok && cap(b) <= maxPooledLine {
		e.line = b
	}
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
	err := w.f.Sync()
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
