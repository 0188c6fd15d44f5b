package view

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/antidrift/antidrift/rollout/store"
)

// Run states, as the list and the runs table show them.
const (
	stateIndexing = "indexing" // the first pass has not reached it yet
	stateLive     = "live"     // a writer holds the folder, or it grew lately
	stateFinished = "finished" // every planned record is written
	stateStopped  = "stopped"  // short of its plan and nobody writes it
)

// liveWindow is how long a run that grew counts as live without a writer
// holding its folder (a writer on another host, a lock file removed).
const liveWindow = 10 * time.Second

// Watch follows the run folders after the first indexing pass: every
// interval it indexes the complete lines appended since, and record files
// a run started since, until ctx ends. A partial last line waits for its
// end. Errors (a bad line, a file that shrank) stop following that file
// and are reported in the progress, as the first pass reports its own.
func (s *Server) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.runs.mu.RLock()
			done := s.runs.done
			s.runs.mu.RUnlock()
			if done {
				s.runs.refresh(time.Now())
			}
		}
	}
}

// refresh indexes what the run folders gained since the last pass.
func (ix *runIndex) refresh(now time.Time) {
	ix.growMu.Lock()
	var errs []error
	for d := range ix.dirs {
		if _, err := ix.addFiles(d); err != nil {
			errs = append(errs, err)
		}
	}
	for fi, rf := range ix.filesNow() {
		if rf.failed {
			continue
		}
		st, err := os.Stat(rf.path)
		switch {
		case err != nil:
			rf.failed = true
			errs = append(errs, err)
		case st.Size() < rf.off:
			rf.failed = true
			errs = append(errs, fmt.Errorf("%s: shrank from %d to %d bytes since it was indexed; restart the viewer to read it again", rf.path, rf.off, st.Size()))
		case st.Size() > rf.off:
			if st.Size() > rf.seen {
				ix.total.Add(st.Size() - rf.seen)
				rf.seen = st.Size()
			}
			if err := ix.indexFile(fi); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ix.growMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		ix.mu.Lock()
		if ix.err == nil {
			ix.err = err
		}
		ix.mu.Unlock()
	}
	ix.updateStates(now)
}

// updateStates sets each run's state from what the store records: the
// plan's size against the records written, and the folder's lock, which a
// writer holds while it writes (store.LockDir).
func (ix *runIndex) updateStates(now time.Time) {
	held := make([]bool, len(ix.dirs))
	for i, d := range ix.dirs {
		held[i] = writerHolds(d.Path)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i, d := range ix.dirs {
		switch {
		case d.Planned > 0 && d.written >= d.Planned:
			d.State = stateFinished
		case held[i] || (!d.lastGrowth.IsZero() && now.Sub(d.lastGrowth) < liveWindow):
			d.State = stateLive
		default:
			d.State = stateStopped
		}
	}
}

// writerHolds reports whether a process holds dir's lock: its lock file
// names a live process (on another host, its presence is all we can tell).
// The lock is not taken, so a writer starting meanwhile is never refused.
func writerHolds(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, store.LockName))
	if err != nil {
		return false
	}
	var h store.Holder
	if json.Unmarshal(b, &h) != nil || h.PID <= 0 {
		return true // being written as we read it
	}
	if host, _ := os.Hostname(); h.Host != host {
		return true
	}
	p, err := os.FindProcess(h.PID)
	if err != nil {
		return false
	}
	// Signal 0 checks that the process exists without touching it; a crashed
	// writer leaves its lock file behind, and no process.
	err = p.Signal(syscall.Signal(0))
	return err == nil || !errors.Is(err, os.ErrProcessDone)
}

// runLabel tells runs apart in lists: the run's name, folder and start,
// and the settings that differ from other runs of the same checkpoint
// (seed, framework, synth round, ...).
type runLabel struct {
	Name     string   `json:"name"`
	Start    string   `json:"start"`
	Round    int      `json:"round,omitempty"`
	Distinct []string `json:"distinct"`
	Label    string   `json:"label"`
}

// roundDir finds a synth critic round in a run folder's path
// (seeds/ID/round-N/...).
var roundDir = regexp.MustCompile(`(?:^|/)round-(\d+)(?:/|$)`)

// labelRuns fills each run's label. Settings are compared within a
// checkpoint: two runs of one checkpoint are told apart by what differs.
func labelRuns(dirs []*runDir) {
	settings := func(d *runDir) [][2]string {
		p := d.Manifest.Plan
		out := [][2]string{
			{"framework", p.Framework}, {"seed", strconv.FormatInt(p.Seed, 10)},
			{"rollouts", strconv.Itoa(p.Rollouts)}, {"shard", p.Shard},
			{"temperature", strconv.FormatFloat(p.Temperature, 'g', -1, 64)},
			{"max_steps", strconv.Itoa(p.MaxSteps)}, {"scenarios", p.ScenarioSource},
		}
		if d.Round > 0 {
			out = append(out, [2]string{"round", strconv.Itoa(d.Round)})
		}
		if d.Manifest.Step != nil {
			out = append(out, [2]string{"step", strconv.Itoa(*d.Manifest.Step)})
		}
		return out
	}
	byCkpt := map[string][]*runDir{}
	for _, d := range dirs {
		d.Name, d.Start = d.Manifest.Run, d.Manifest.Created
		if m := roundDir.FindStringSubmatch(filepath.ToSlash(d.Path)); m != nil {
			d.Round, _ = strconv.Atoi(m[1])
		}
		byCkpt[d.Manifest.Plan.Checkpoint] = append(byCkpt[d.Manifest.Plan.Checkpoint], d)
	}
	for _, d := range dirs {
		d.Distinct = []string{}
		peers := byCkpt[d.Manifest.Plan.Checkpoint]
		for _, kv := range settings(d) {
			differs := false
			for _, o := range peers {
				if o == d {
					continue
				}
				found := false
				for _, okv := range settings(o) {
					if okv[0] == kv[0] {
						found = true
						differs = differs || okv[1] != kv[1]
					}
				}
				differs = differs || !found
			}
			// The framework and seed are always shown: they are what a
			// reader asks first of a run.
			if differs || kv[0] == "framework" || kv[0] == "seed" || kv[0] == "round" {
				d.Distinct = append(d.Distinct, kv[0]+" "+kv[1])
			}
		}
		parts := []string{}
		if d.Name != "" {
			parts = append(parts, d.Name)
		}
		parts = append(parts, filepath.ToSlash(d.Path))
		if d.Start != "" {
			parts = append(parts, d.Start)
		}
		d.Label = strings.Join(append(parts, d.Distinct...), " · ")
	}
}
