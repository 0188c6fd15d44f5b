package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/store"
)

// markerName lists the entries of an output folder that antidrift wrote;
// a later command may replace those, and nothing else.
const markerName = ".antidrift-output.json"

type outMarker struct {
	Command string   `json:"command"`
	Files   []string `json:"files"`
}

// outClaim is a writing command's hold on its output folder: the folder is
// checked (not a run folder, not inside one, not an input), locked (one
// writer), swept of temporary files a killed earlier command left, and
// checked to hold only what antidrift wrote there before.
type outClaim struct {
	dir     string
	command string
	lock    *store.Lock
	undo    func()
	rule    outRule
	marked  map[string]bool // entries the marker lists
}

// outRule says which entries of an output folder a command may replace.
type outRule struct {
	// writes reports whether the command may write an entry of that name
	// (a table's files, its card); nil: the command replaces the whole
	// folder (pareto) or works inside it (demo, rescore), so every entry
	// must be antidrift's.
	writes func(name string) bool
	// resumable entries are the command's own even before its marker
	// lists them: what demo and rescore leave when killed before done.
	resumable []string
}

// claimOut takes the output folder of command (export, pairs, rewards,
// pareto, demo, rescore); inputs are the folders it reads.
func claimOut(command, dir string, inputs []string, rule outRule) (*outClaim, error) {
	if dir == "" {
		return nil, errors.New("--out: an output folder is required")
	}
	if err := guardOut(dir, inputs); err != nil {
		return nil, err
	}
	lock, err := store.LockDir(dir, commandLine())
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", dir, err)
	}
	c := &outClaim{dir: dir, command: command, lock: lock, rule: rule}
	sweepTemps(dir)
	if err := c.checkOwned(); err != nil {
		lock.Release()
		return nil, err
	}
	c.undo = onInterrupt(func() { sweepTemps(dir) })
	return c, nil
}

// namesOf is the rule of a command writing a table's files and its card.
func namesOf(prefixes ...string) outRule {
	return outRule{writes: func(n string) bool {
		if n == "README.md" || n == "manifest.json" {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				return true
			}
		}
		return false
	}}
}

// guardOut refuses an output folder equal to or inside an input folder or
// a run folder: writing there would replace the run's manifest or put
// files where the store reads shards.
func guardOut(dir string, inputs []string) error {
	out, err := realPath(dir)
	if err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	for _, in := range inputs {
		p, err := realPath(in)
		if err != nil {
			continue
		}
		if within(out, p) {
			what := "inside the input folder"
			if out == p {
				what = "the input folder"
			}
			return fmt.Errorf("--out %s is %s %s; write the output to a folder of its own", dir, what, in)
		}
	}
	for p := out; ; p = filepath.Dir(p) {
		if isRunFolder(p) {
			what := "inside the run folder " + p
			if p == out {
				what = "a run folder"
			}
			return fmt.Errorf("--out %s is %s; write the output to a folder of its own", dir, what)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// isRunFolder: a manifest.json beside a trajectories/ folder.
func isRunFolder(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "trajectories"))
	if err != nil || !st.IsDir() {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "manifest.json"))
	return err == nil
}

// realPath is the absolute path with the symlinks of its existing part
// resolved, so that two names of one folder compare equal.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		if filepath.Dir(cur) == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

func within(p, dir string) bool {
	if p == dir {
		return true
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// checkOwned refuses a folder holding an entry antidrift did not write
// where the command would write (any entry, for a command replacing or
// working in the whole folder): it would be overwritten, or lost.
func (c *outClaim) checkOwned() error {
	es, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("--out %s: %w", c.dir, err)
	}
	var m outMarker
	if b, err := os.ReadFile(filepath.Join(c.dir, markerName)); err == nil {
		if json.Unmarshal(b, &m) != nil {
			return fmt.Errorf("--out %s: %s is not valid JSON; remove it if the folder holds only antidrift output", c.dir, filepath.Join(c.dir, markerName))
		}
	}
	c.marked = map[string]bool{}
	for _, f := range m.Files {
		c.marked[f] = true
	}
	ours := map[string]bool{}
	for _, f := range c.rule.resumable {
		ours[f] = true
	}
	var foreign []string
	for _, e := range es {
		n := e.Name()
		if strings.HasPrefix(n, ".") || c.marked[n] || ours[n] {
			continue
		}
		if c.rule.writes == nil || c.rule.writes(n) {
			foreign = append(foreign, n)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	sort.Strings(foreign)
	more := ""
	if len(foreign) > 3 {
		more = fmt.Sprintf(" and %d more", len(foreign)-3)
		foreign = foreign[:3]
	}
	return fmt.Errorf("--out %s holds files antidrift did not write (%s%s) where %s writes; it never overwrites those: choose a new or empty folder", c.dir, strings.Join(foreign, ", "), more, c.command)
}

// done records the entries the command wrote in the folder's marker and
// releases the lock.
func (c *outClaim) done() error {
	defer c.release()
	es, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	m := outMarker{Command: c.command}
	for _, e := range es {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			continue
		}
		if c.marked[n] || c.rule.writes == nil || c.rule.writes(n) {
			m.Files = append(m.Files, n)
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	tmp := filepath.Join(c.dir, markerName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(c.dir, markerName))
}

// release drops the lock (on every path: deferred by the commands).
func (c *outClaim) release() {
	if c == nil {
		return
	}
	if c.undo != nil {
		c.undo()
		c.undo = nil
	}
	c.lock.Release()
}

// sweepTemps removes what a killed writer leaves in an output folder, at
// every level (export's jsonl/, parquet/ and arrow/ included): the staging
// folders of pairs and rewards, the temporary files of the table writers
// and of atomic writes. Called under the folder's lock, so never a live
// writer's files.
func sweepTemps(dir string) {
	store.SweepTemps(dir, markerName+".tmp")
}
