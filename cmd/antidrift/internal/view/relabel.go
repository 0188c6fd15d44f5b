package view

import "github.com/antidrift/antidrift/rollout/trajectory"

// SetRelabel makes the viewer show another labeling than the records' own
// (labels.Overlay.Apply): its success, and its drift and added matches
// when it carries a drift verdict; records it returns false for are not
// listed. Call it before Index.
func (s *Server) SetRelabel(fn func(*trajectory.Record) (bool, error)) { s.runs.relabel = fn }

// RunDirs are the run folders the viewer serves, in order.
func (s *Server) RunDirs() []string {
	out := make([]string, len(s.runs.dirs))
	for i, d := range s.runs.dirs {
		out[i] = d.Path
	}
	return out
}

// relabelLine applies the labeling to the part of a record the list reads.
func (ix *runIndex) relabelLine(l *summaryLine) error {
	if ix.relabel == nil {
		return nil
	}
	rec := trajectory.Record{TrajID: l.TrajID, Success: l.Success, Drift: l.Drift, Matches: l.Matches}
	rec.Timings.Start = l.Timings.Start
	keep, err := ix.relabel(&rec)
	if err != nil {
		return err
	}
	l.Success, l.Drift, l.Matches, l.skip = rec.Success, rec.Drift, rec.Matches, !keep
	return nil
}
