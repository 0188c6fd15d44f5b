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

// put admits a finished episode (refusal as episode returns it). The error
// stops the run: the endpoint refuses every request, or a write failed.
func (s *sink) put(rec *trajectory.Record, refusal error) error {
	hold, release, refused := s.gate.admit(rec, refusal)
	if refused != nil {
		return refused
	}
	if hold {
		return nil
	}
	for _, r := range append(release, rec) {
		if err := s.write(r); err != nil {
			return err
		}
	}
	return nil
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

// close flushes and closes both writers.
func (s *sink) close() error { return errors.Join(s.w.Close(), s.elog.Close()) }
