package store

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Planned is the number of episodes the manifest's plan asks of this
// folder: scenarios × rollouts, or the shard's share of them (every n-th
// episode from i, as the engine plans them). 0 when the plan says nothing
// (a hand-made folder).
func (m Manifest) Planned() int {
	total := len(m.Plan.ScenarioIDs) * m.Plan.Rollouts
	i, n := 0, 1
	if a, b, ok := strings.Cut(m.Plan.Shard, "/"); ok {
		x, err1 := strconv.Atoi(a)
		y, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && y > 0 && x >= 0 && x < y {
			i, n = x, y
		}
	}
	if total <= i {
		return 0
	}
	return (total - i + n - 1) / n
}

// Presence is a run folder's planned and present episode counts.
type Presence struct {
	Dir     string `json:"dir"`
	Run     string `json:"run"`
	Planned int    `json:"planned"`
	Present int    `json:"present"`
	// Outside counts records whose scenario is not in the plan's
	// scenario_ids or whose rollout is not below its rollouts: records of
	// another plan (a hand copy, a merge gone wrong). Present excludes them.
	Outside      int    `json:"outside,omitempty"`
	FirstOutside string `json:"first_outside,omitempty"` // FILE:LINE: why
}

// Missing is the number of planned episodes without a record.
func (p Presence) Missing() int {
	if p.Present >= p.Planned {
		return 0
	}
	return p.Planned - p.Present
}

// Partial reports whether the folder lacks planned episodes or holds
// records outside its plan.
func (p Presence) Partial() bool { return p.Missing() > 0 || p.Outside > 0 }

func (p Presence) String() string {
	s := fmt.Sprintf("%s: %d of %d planned episodes (%d missing)", p.Dir, p.Present, p.Planned, p.Missing())
	if p.Outside > 0 {
		s += fmt.Sprintf(", and %d records outside its plan (first: %s)", p.Outside, p.FirstOutside)
	}
	return s
}

// Count reads a run folder's plan and counts its records (non-blank lines
// of trajectories/*.jsonl; records are checked by the readers).
func Count(dir string) (Presence, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return Presence{}, fmt.Errorf("%s is not a run folder (no %s)", dir, manifestName)
		}
		return Presence{}, err
	}
	c := NewPresenceCounter(dir, m)
	files, err := filepath.Glob(filepath.Join(dir, trajDir, "*.jsonl"))
	if err != nil {
		return c.Presence(), err
	}
	for _, f := range files {
		if err := countRecords(f, c); err != nil {
			return c.Presence(), err
		}
	}
	return c.Presence(), nil
}

// PresenceCounter counts a run folder's records against its plan as a
// reader meets them: Count without a pass of its own over the files, for
// a reader that reads every record anyway (score).
type PresenceCounter struct {
	p       Presence
	outside func(scenarioID string, rollout int) string
}

// NewPresenceCounter starts counting the records of the run folder dir
// with manifest m.
func NewPresenceCounter(dir string, m Manifest) *PresenceCounter {
	return &PresenceCounter{p: Presence{Dir: dir, Run: m.Run, Planned: m.Planned()}, outside: planCheck(m.Plan)}
}

// Add counts the record at file:line.
func (c *PresenceCounter) Add(file string, line int, scenarioID string, rollout int) {
	why := c.outside(scenarioID, rollout)
	if why == "" {
		c.p.Present++
		return
	}
	if c.p.Outside == 0 {
		c.p.FirstOutside = fmt.Sprintf("%s:%d: %s", file, line, why)
	}
	c.p.Outside++
}

// Presence is the count so far.
func (c *PresenceCounter) Presence() Presence { return c.p }

// planCheck says why a record's scenario and rollout are outside plan,
// or "" when they are in it (or the plan does not say: a hand-made
// folder without scenario_ids or rollouts).
func planCheck(plan Plan) func(scenarioID string, rollout int) string {
	ids := make(map[string]bool, len(plan.ScenarioIDs))
	for _, id := range plan.ScenarioIDs {
		ids[id] = true
	}
	return func(sc string, rollout int) string {
		if len(ids) > 0 && !ids[sc] {
			return fmt.Sprintf("scenario %q is not in plan.scenario_ids", sc)
		}
		if plan.Rollouts > 0 && rollout >= plan.Rollouts {
			return fmt.Sprintf("rollout %d of scenario %q is beyond plan.rollouts %d", rollout, sc, plan.Rollouts)
		}
		return ""
	}
}

// countRecords counts the records of one trajectory file into p: those in
// the plan as present, the others as outside. A line whose keys do not
// decode counts as present; the readers report it.
func countRecords(path string, c *PresenceCounter) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var long []byte
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if len(bytes.TrimSpace(b)) > 0 && err == nil {
			if k, kerr := readKeys(b); kerr == nil {
				c.Add(path, line, k.ScenarioID, k.Rollout)
			} else {
				c.p.Present++
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}
