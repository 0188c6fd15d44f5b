package engine

import (
	"errors"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// sink takes a run's finished episodes, from any number of goroutines:
// through the first-wave refusal gate, then records to the shard's file
// and infrastructure errors to errors/, each counted into the summary.
type sink struct {
	w, elog  *store.Writer
	gate     *refusalGate
	onRecord func(*trajectory.Record)
	warn     func(string)
	warned   sync.Once

	mu  sync.Mutex
	sum *Summary
}

// openSink opens the shard's writers for todo episodes, counting into sum.
func openSink(run *store.Run, shard Shard, todo int, sum *Summary, onRecord func(*trajectory.Record), warn func(string)) (*sink, error) {
	w, err := run.Writer(shard.String(), 64, time.Second)
	if err != nil {
		return nil, err
	}
	elog, err := run.ErrorLog(shard.String())
	if err != nil {
		w.Close()
		return nil, err
	}
	return &sink{w: w, elog: elog, gate: newRefusalGate(todo), onRecord: onRecord, warn: warn, sum: sum}, nil
}

// put admits a finished episode (cause as episode returns it). The error
// stops the run: the endpoint refuses or fails every request, or a write
// failed.
func (s *sink) put(rec *trajectory.Record, cause error) error {
	hold, release, refused := s.gate.admit(rec, cause)
	if !hold {
		release = append(release, rec)
	}
	for _, r := range release {
		if err := s.write(r); err != nil {
			return err
		}
	}
	return refused
}

func (s *sink) write(rec *trajectory.Record) error {
	infra := rec.Status == trajectory.StatusInfraError
	target := s.w
	if infra {
		target = s.elog
	}
	if err := target.Append(rec); err != nil {
		return err
	}
	s.mu.Lock()
	s.sum.Ran++
	s.sum.Statuses[string(rec.Status)]++
	if infra {
		s.sum.InfraErrors++
	}
	s.mu.Unlock()
	if rec.Status == trajectory.StatusContextTruncated && s.warn != nil {
		s.warned.Do(func() { s.warn(ContextTruncatedWarning) })
	}
	if s.onRecord != nil {
		s.onRecord(rec)
	}
	return nil
}

// close writes what the gate still holds, then flushes and closes both
// writers.
func (s *sink) close() error {
	var errs []error
	for _, r := range s.gate.flush() {
		if err := s.write(r); err != nil {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(append(errs, s.w.Close(), s.elog.Close())...)
}
