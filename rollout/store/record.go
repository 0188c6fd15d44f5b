package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// A valid record, for every command that reads trajectories (rollout's
// resume, merge, repair, score, judge, pairs, rewards, export, qc):
//
//   - A line is one JSON object followed by a newline. A line holding only
//     spaces or tabs is blank: it is skipped, never an error.
//   - The last line of a file without its newline is incomplete (a run
//     still writing, or killed): rollout's resume truncates it, every other
//     reader refuses the file, naming it, until the run is resumed.
//   - traj_id and scenario_id (the identity every command keys on) must be
//     present and non-empty, and rollout must not be negative. Other known
//     fields may be missing (they read as their zero value: no messages,
//     success false, drift false) but must have their types when present.
//     Fields the toolkit does not know are ignored (a record written by a
//     newer version still reads).
//   - A traj_id appears once per run folder. A second copy (two writers on
//     one folder) is refused until `antidrift repair RUN` moves it aside.
//     The same traj_id in two folders given together (shards beside their
//     merge) is one episode, read once.
//
// Every violation is an error naming the file and the line.

// ErrDuplicate is wrapped by the errors for a traj_id seen twice in one
// run folder.
var ErrDuplicate = errors.New("duplicate traj_id")

// blank reports whether a line is blank (only whitespace).
func blank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// DecodeRecord decodes one record line and checks it against the
// definition above (all but uniqueness). The caller adds file and line.
func DecodeRecord(b []byte, r *trajectory.Record) error {
	*r = trajectory.Record{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	if err := recordJSON.Unmarshal(b, r); err != nil {
		return err
	}
	return CheckRecord(r)
}

// CheckRecord checks the fields every record must have.
func CheckRecord(r *trajectory.Record) error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"traj_id", r.TrajID}, {"scenario_id", r.ScenarioID},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", joinAnd(missing))
	}
	if r.Rollout < 0 {
		return fmt.Errorf("rollout %d is negative", r.Rollout)
	}
	return nil
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	out := ""
	for i, x := range xs {
		switch {
		case i == 0:
		case i == len(xs)-1:
			out += " and "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

// duplicateError is the refusal of a second copy of a traj_id.
func duplicateError(file string, line int, id, firstFile string, firstLine int, dir string) error {
	return fmt.Errorf("store: %s:%d: %w %s (first at %s:%d): two writers on one run folder? run `antidrift repair %s` to keep the first copy and move the others aside",
		file, line, ErrDuplicate, id, firstFile, firstLine, dir)
}
