package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/antidrift/antidrift/rollout/trajectory"
	segjson "github.com/segmentio/encoding/json"
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
		return errNotObject
	}
	if _, fast := recordJSON.(fastThenStd); fast {
		if decodeSized(b, r) == nil {
			if err := checkLine(b); err != nil {
				return err
			}
			return CheckRecord(r)
		}
		*r = trajectory.Record{} // the reference decides, and words the error
	}
	if err := recordJSON.Unmarshal(b, r); err != nil {
		return err
	}
	if err := checkLine(b); err != nil {
		return err
	}
	return CheckRecord(r)
}

// sizedRecord is a record whose messages are decoded by the walker
// (walkedMessages: most of a record's bytes, and its tool calls in slices
// of their size) and whose per-step call notes are decoded into slices
// sized for the usual one or two (the fast decoder's first allocation for
// a slice holds ten elements: most of a record's allocated bytes would be
// empty capacity).
type sizedRecord struct {
	trajectory.Record
	Messages walkedMessages `json:"messages"`
	Steps    []sizedStep    `json:"steps"`
}

type sizedStep struct {
	trajectory.Step
	Calls smallSlice[trajectory.CallNote] `json:"calls,omitempty"`
}

// smallSlice decodes a JSON array (or null) as []T does, into a slice
// that starts with room for two. A slice already decoded (its member given
// twice) is decoded into, as encoding/json does: the second array's
// elements are merged into the first's.
type smallSlice[T any] []T

func (s *smallSlice[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	v := []T(*s)
	if v == nil {
		v = make([]T, 0, 2)
	}
	if err := segjson.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = v
	return nil
}

// decodeSized decodes a line the fast way through sizedRecord; any error
// (or a line the fast decoder must not see) leaves the decision to the
// reference path.
func decodeSized(b []byte, r *trajectory.Record) error {
	if needsStd(b) {
		return errSlowPath
	}
	var sr sizedRecord
	if err := segjson.Unmarshal(b, &sr); err != nil {
		return err
	}
	*r = sr.Record
	r.Messages = sr.Messages
	r.Steps = nil
	if sr.Steps != nil {
		r.Steps = make([]trajectory.Step, len(sr.Steps))
		for i := range sr.Steps {
			r.Steps[i] = sr.Steps[i].Step
			r.Steps[i].Calls = sr.Steps[i].Calls
		}
	}
	return nil
}

var errSlowPath = errors.New("store: a line for encoding/json")

var errNotObject = errors.New("not a JSON object")

// hasKey reports whether the line holds "key" followed by a colon: a
// field the decoder would otherwise take as its zero value when a
// hand-edited line lacks it (success false). A cheap scan, not a parse: a
// genuine record always has the key at its top level. It looks from the
// end, where the writer puts the labels, past the messages.
func hasKey(b []byte, key string) bool {
	q := `"` + key + `"`
	for {
		i := bytes.LastIndex(b, []byte(q))
		if i < 0 {
			return false
		}
		rest := b[i+len(q):]
		j := 0
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
			j++
		}
		if j < len(rest) && rest[j] == ':' {
			return true
		}
		b = b[:i]
	}
}

// checkLine checks what decoding cannot tell: fields every record writes,
// whose absence would decode as a value.
func checkLine(b []byte) error {
	if !hasKey(b, "success") {
		return errors.New("missing success (every record states whether the episode succeeded)")
	}
	return nil
}

// CheckRecord checks the fields every record must have. It is the one
// validity rule every reader applies (DecodeRecord, DecodeRecordLean, the
// queue's coordinator): identity, a known status, messages with their
// roles, and steps that point at assistant turns holding the calls they
// note.
func CheckRecord(r *trajectory.Record) error { return checkRecord(r, recordShape{r}) }

// shape is what CheckRecord reads of a record's messages and steps: a
// decoded record has them (recordShape), a scanned one only their outline
// (scanShape), and both are checked by one rule.
type shape interface {
	messages() int
	role(i int) string
	toolCalls(i int) int
	steps() int
	stepTurn(i int) int
	stepCalls(i int) int
	// stepUnparsed: every call the step notes was read from unparsed markup.
	stepUnparsed(i int) bool
}

type recordShape struct{ r *trajectory.Record }

func (s recordShape) messages() int           { return len(s.r.Messages) }
func (s recordShape) role(i int) string       { return s.r.Messages[i].Role }
func (s recordShape) toolCalls(i int) int     { return len(s.r.Messages[i].ToolCalls) }
func (s recordShape) steps() int              { return len(s.r.Steps) }
func (s recordShape) stepTurn(i int) int      { return s.r.Steps[i].Turn }
func (s recordShape) stepCalls(i int) int     { return len(s.r.Steps[i].Calls) }
func (s recordShape) stepUnparsed(i int) bool { return allUnparsed(s.r.Steps[i].Calls) }

func checkRecord(r *trajectory.Record, sh shape) error {
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
	if !r.Status.Valid() {
		return fmt.Errorf("unknown status %q", r.Status)
	}
	nm := sh.messages()
	if nm == 0 && r.Status != trajectory.StatusInfraError {
		// An infrastructure error reaped before the episode began (a work
		// item out of deliveries) has none: it is kept in errors/ and
		// retried, never scored.
		return errors.New("no messages")
	}
	for i := range nm {
		switch role := sh.role(i); role {
		case trajectory.RoleSystem, trajectory.RoleUser, trajectory.RoleAssistant, trajectory.RoleTool:
		default:
			return fmt.Errorf("messages[%d]: role %q is not system, user, assistant or tool (a null message?)", i, role)
		}
	}
	for i := range sh.steps() {
		turn := sh.stepTurn(i)
		if turn < 0 || turn >= nm {
			return fmt.Errorf("steps[%d].turn %d is not a message index (%d messages)", i, turn, nm)
		}
		calls := sh.stepCalls(i)
		if calls == 0 {
			continue
		}
		if role := sh.role(turn); role != trajectory.RoleAssistant {
			return fmt.Errorf("steps[%d] notes calls on message %d, a %s message", i, turn, role)
		}
		// Calls read from markup the server left unparsed are noted on the
		// step (the drift detector saw them) but are no message call.
		if tc := sh.toolCalls(turn); tc != calls && (tc != 0 || !sh.stepUnparsed(i)) {
			return fmt.Errorf("steps[%d] notes %d calls, message %d has %d tool calls", i, calls, turn, tc)
		}
	}
	return nil
}

// allUnparsed: every note is of a call read from unparsable markup.
func allUnparsed(notes []trajectory.CallNote) bool {
	for _, c := range notes {
		if c.Outcome != "unparsed" {
			return false
		}
	}
	return len(notes) > 0
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

// repairHint tells how to recover from a bad line of a trajectory file:
// `antidrift repair RUN` moves invalid lines and a torn tail aside.
func repairHint(file string) string {
	run := filepath.Dir(filepath.Dir(file))
	return fmt.Sprintf("; `antidrift repair %s` moves such lines aside, keeping every valid record", run)
}
