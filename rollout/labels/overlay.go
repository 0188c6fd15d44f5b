package labels

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Overlay applies one labeling to records as commands read them (score,
// pairs, view --labeling NAME): the records on disk are never changed.
type Overlay struct {
	Name string
	by   map[string]Label
	// leftOut counts the records Apply left out (labels without a verdict).
	leftOut atomic.Int64
}

// OpenOverlay reads the labeling name of every run. "record" (or "") needs
// no overlay: it returns nil, whose Apply keeps every record as it is. A
// run without the labeling is an error.
func OpenOverlay(runs []string, name string) (*Overlay, error) {
	name = NameFor(name)
	if name == "" || name == Record {
		return nil, nil
	}
	o := &Overlay{Name: name, by: map[string]Label{}}
	for _, run := range runs {
		ls, err := Read(run, name)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if _, dup := o.by[l.TrajID]; !dup {
				o.by[l.TrajID] = l
			}
		}
	}
	return o, nil
}

// Apply puts the labeling's verdict on a record read from a run, and
// reports whether the record is kept:
//
//   - a record the labeling has no label for is an error (the labeling was
//     written for other records; rerun antidrift judge with --force);
//   - a label without a verdict (Error set) leaves the record out: it is
//     never read as a failure or as clean;
//   - otherwise the record's success becomes the label's; when the label
//     carries a drift verdict (Drift set), the record's drift becomes it:
//     drift true adds the label's matches to the record's (sorted by call,
//     the final answer last, with Counted recomputed), drift false removes
//     every match; drift_steps follow the matches. Steps, messages and the
//     record's judgement are kept.
//
// A nil Overlay keeps every record as it is.
func (o *Overlay) Apply(rec *trajectory.Record) (bool, error) {
	if o == nil {
		return true, nil
	}
	l, ok := o.by[rec.TrajID]
	if !ok {
		return false, fmt.Errorf("labels: labeling %q has no label for trajectory %s (written for other records? rerun antidrift judge with --force)", o.Name, rec.TrajID)
	}
	if Stale(l, rec) {
		return false, fmt.Errorf("labels: %w", staleError(o.Name, rec.TrajID))
	}
	if !l.Judged() {
		o.leftOut.Add(1)
		return false, nil
	}
	rec.Success = l.Success
	if l.Drift == nil {
		return true, nil
	}
	rec.Drift = *l.Drift
	if !rec.Drift {
		rec.Matches, rec.DriftSteps = nil, []int{}
		return true, nil
	}
	if len(l.Matches) > 0 {
		ms := make([]drift.Match, 0, len(rec.Matches)+len(l.Matches))
		ms = append(append(ms, rec.Matches...), l.Matches...)
		pos := func(m drift.Match) int {
			if m.Call == drift.AnswerCall {
				return int(^uint(0) >> 1)
			}
			return m.Call
		}
		sort.SliceStable(ms, func(i, j int) bool { return pos(ms[i]) < pos(ms[j]) })
		drift.MarkCounted(ms)
		rec.Matches = ms
	}
	rec.DriftSteps = drift.Steps(rec.Matches)
	if rec.DriftSteps == nil {
		rec.DriftSteps = []int{}
	}
	return true, nil
}

// LeftOut is the number of records Apply left out for want of a verdict.
func (o *Overlay) LeftOut() int {
	if o == nil {
		return 0
	}
	return int(o.leftOut.Load())
}

// Warning says what the overlay left out, or "" when nothing.
func (o *Overlay) Warning() string {
	if n := o.LeftOut(); n > 0 {
		return fmt.Sprintf("labeling %s: %d trajectories without a verdict (an unparseable answer or an endpoint error) left out", o.Name, n)
	}
	return ""
}
