// Package store keeps a run folder: manifest.json (the run's configuration,
// never a secret) and trajectories/*.jsonl, one record per finished episode.
// Records are appended and synced in batches; reopening a folder truncates a
// torn last line and reports which episodes are already done, so a killed
// run resumes to exactly its plan. Readers stream records with Records, or
// go through them in an order of their own with an Index.
package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/trajectory"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// Manifest describes a run. Plan holds everything that decides which
// episodes run and what they produce; two invocations with equal plans
// may share a folder.
type Manifest struct {
	Version  string   `json:"version"`
	Run      string   `json:"run"`
	Created  string   `json:"created"`
	Plan     Plan     `json:"plan"`
	Settings Settings `json:"settings"`
	Shards   []string `json:"merged_from,omitempty"`
	// Step is the checkpoint's training step, when known (rollout --step,
	// rescore); pareto orders checkpoints by it.
	Step *int `json:"step,omitempty"`
}

// Plan is the part of the configuration that must match on resume.
type Plan struct {
	ScenarioSource string   `json:"scenario_source"`
	ScenarioHash   string   `json:"scenario_hash"`
	ScenarioIDs    []string `json:"scenario_ids"`
	Policy         string   `json:"policy"`
	Model          string   `json:"model,omitempty"`
	Checkpoint     string   `json:"checkpoint"`
	Framework      string   `json:"framework"`
	Rollouts       int      `json:"rollouts"`
	Seed           int64    `json:"seed"`
	Shard          string   `json:"shard"`
	MaxSteps       int      `json:"max_steps"`
	MaxTokens      int      `json:"max_tokens"`
	Temperature    float64  `json:"temperature"`
	// OmitTemperature: no temperature was sent (reasoning models).
	OmitTemperature bool `json:"omit_temperature,omitempty"`
	MaxTurnTokens   int  `json:"max_turn_tokens"`
	// AllowUnsafeProvenance: the scenarios were loaded with unsafe
	// provenance allowed (the broken-provenance boundary case).
	AllowUnsafeProvenance bool `json:"allow_unsafe_provenance,omitempty"`
	// Filter holds the exposure filter's settings when they differ from
	// the defaults (relevance k, risk penalty λ, risk weights).
	Filter *FilterPlan `json:"filter,omitempty"`
	// ToolOrder is "seeded" when each scenario's tools were shown in an
	// order drawn from the seed, "" when in the file's order (every plan
	// made before the order was drawn).
	ToolOrder string `json:"tool_order,omitempty"`
}

// FilterPlan is an exposure filter's settings, as rollout recorded them.
type FilterPlan struct {
	RelevanceK  int     `json:"relevance_k,omitempty"`
	RiskLambda  float64 `json:"risk_lambda"`
	RiskWeights string  `json:"risk_weights,omitempty"`
	// LowRisk is the gated and causal filters' low-risk visibility when
	// not the default ("causal").
	LowRisk string `json:"low_risk,omitempty"`
}

// Settings may change between invocations of the same run.
type Settings struct {
	BaseURL     string `json:"base_url,omitempty"`
	APIKeyEnv   string `json:"api_key_env,omitempty"` // the variable's name, never its value
	Concurrency int    `json:"concurrency"`
	EpisodeTime string `json:"episode_wall_time,omitempty"`
	Command     string `json:"command,omitempty"`
	// Rewards is the reward configuration a served run (env serve) scores
	// its episodes with.
	Rewards string `json:"rewards,omitempty"`
}

const (
	manifestName = "manifest.json"
	trajDir      = "trajectories"
	errorsDir    = "errors"
)

// ErrPlanMismatch is returned when a folder holds a run with another plan.
var ErrPlanMismatch = errors.New("run folder holds a different plan")

// Open prepares a run folder and takes its lock (see LockDir), held until
// Close: a second writer on the folder is refused, naming the holder. A new
// folder gets the manifest; an existing one must hold the same run (same
// plan and same run name), unless force is set, in which case its
// trajectories are moved aside (never deleted) and the run starts over. A
// folder holding trajectories but no manifest is refused too (its records
// belong to an unknown plan), with the same way out.
func Open(dir string, m Manifest, force bool) (*Run, error) {
	lock, err := LockDir(dir, m.Settings.Command)
	if err != nil {
		return nil, err
	}
	r, err := open(dir, m, force)
	if err != nil {
		lock.Release()
		return nil, err
	}
	r.lock = lock
	return r, nil
}

func open(dir string, m Manifest, force bool) (*Run, error) {
	if err := checkLinks(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, trajDir), 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	old, err := ReadManifest(dir)
	var diff string
	switch {
	case errors.Is(err, os.ErrNotExist):
		n, cerr := countRecordFiles(dir)
		if cerr != nil {
			return nil, cerr
		}
		if n > 0 {
			diff = fmt.Sprintf("no %s, but %d trajectory files in %s", manifestName, n, filepath.Join(dir, trajDir))
			if !force {
				return nil, fmt.Errorf("store: %s: %w (%s): their plan is unknown; restore the manifest, use another --out, or --force to move the old trajectories aside and start over", dir, ErrPlanMismatch, diff)
			}
		}
	case err != nil:
		return nil, err
	default:
		diff = planDiff(old.Plan, m.Plan)
		if old.Run != m.Run {
			d := fmt.Sprintf("run was %s, now %s", old.Run, m.Run)
			if diff == "" {
				diff = d
			} else {
				diff = d + "; " + diff
			}
		}
		if diff != "" && !force {
			return nil, fmt.Errorf("store: %s: %w (%s); use another --out, or --force to move the old trajectories aside and start over", dir, ErrPlanMismatch, diff)
		}
		if diff == "" {
			m.Created = old.Created
		}
	}
	if diff != "" { // force: move the old records (and errors) aside
		stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
		for _, sub := range []string{trajDir, errorsDir} {
			src := filepath.Join(dir, sub)
			if _, err := os.Stat(src); err != nil {
				continue
			}
			if err := os.Rename(src, filepath.Join(dir, fmt.Sprintf("%s.replaced-%s", sub, stamp))); err != nil {
				return nil, fmt.Errorf("store: %w", err)
			}
		}
		if err := os.MkdirAll(filepath.Join(dir, trajDir), 0o755); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	// Records are checked before the manifest is written, so that a refused
	// folder is left exactly as it was.
	r := &Run{dir: dir, Manifest: m}
	if r.done, err = recover(filepath.Join(dir, trajDir)); err != nil {
		return nil, err
	}
	if err := WriteManifest(dir, m); err != nil {
		return nil, err
	}
	return r, nil
}

// countRecordFiles counts the non-empty trajectory files of a folder.
func countRecordFiles(dir string) (int, error) {
	fs, err := filepath.Glob(filepath.Join(dir, trajDir, "*.jsonl"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range fs {
		if st, err := os.Stat(f); err == nil && st.Size() > 0 {
			n++
		}
	}
	return n, nil
}

// planDiff names the first fields that differ, for the refusal message.
func planDiff(a, b Plan) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb map[string]any
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var diffs []string
	for k := range ma {
		if fmt.Sprint(ma[k]) != fmt.Sprint(mb[k]) {
			if k == "scenario_ids" || k == "scenario_hash" {
				diffs = append(diffs, k+" differs")
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s was %v, now %v", k, ma[k], mb[k]))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// ReadManifest reads a run folder's manifest.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("store: %s: %w", filepath.Join(dir, manifestName), err)
	}
	// null, or anything that is not an object, decodes to an empty
	// manifest without an error: name it rather than fail later on its
	// empty fields.
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		what := string(t)
		if len(what) > 20 || len(what) == 0 {
			what = "no JSON object"
		}
		return m, fmt.Errorf("store: %s: holds %s, not a run manifest (a JSON object with a plan); restore it from a copy of the run", filepath.Join(dir, manifestName), what)
	}
	if m.Step != nil && *m.Step < 0 {
		return m, fmt.Errorf("store: %s: step: %d is negative; a checkpoint's training step is 0 or more (leave it out when unknown)", filepath.Join(dir, manifestName), *m.Step)
	}
	return m, nil
}

// WriteManifest replaces the manifest atomically (write, sync, rename).
// The settings' endpoint goes through secret.URL whatever the caller
// passed: a password or ?token= in a base URL never reaches the file.
func WriteManifest(dir string, m Manifest) error {
	m.Settings.BaseURL = secret.URL(m.Settings.BaseURL)
	m.Settings.Command = secret.Text(m.Settings.Command)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, manifestName), append(b, '\n'))
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := tempgate.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("store: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not supported everywhere; the rename is still ordered on Linux
	return nil
}

// checkLinks refuses a run folder whose trajectories/ folder or one of
// whose trajectory files is a symbolic link leading out of the run folder
// (or nowhere): a resume appends to those files and would write there.
func checkLinks(dir string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	inside := func(p string) (string, bool) {
		t, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "nowhere (a dangling link)", false
		}
		rel, err := filepath.Rel(root, t)
		return t, err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	paths := []string{filepath.Join(dir, trajDir)}
	files, _ := filepath.Glob(filepath.Join(dir, trajDir, "*.jsonl"))
	paths = append(paths, files...)
	for _, p := range paths {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			continue
		}
		if t, ok := inside(p); !ok {
			return fmt.Errorf("store: %s is a symbolic link to %s, outside the run folder %s; a resume appends to it and would write there: replace the link with the file itself", p, t, dir)
		}
	}
	return nil
}

// recover scans every trajectory file: a torn last line (a crash mid-write)
// is truncated away; a broken line before the last is corruption and an
// error naming file and line. It returns the ids of finished episodes.
func recover(dir string) (map[string]bool, error) {
	done := map[string]bool{}
	first := map[string]pos{}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		if err := scanFile(f, true, func(line int, r *trajectory.Record) error {
			if done[r.TrajID] {
				p := first[r.TrajID]
				return duplicateError(f, line, r.TrajID, p.file, p.line, filepath.Dir(dir))
			}
			done[r.TrajID] = true
			first[r.TrajID] = pos{f, line}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// scanFile decodes each line of a trajectory file. With repair, a torn tail
// (no final newline, or an undecodable last line) is truncated.
func scanFile(path string, repair bool, fn func(line int, r *trajectory.Record) error) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if !repair {
		f, err = os.Open(path)
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var offset int64
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(b) > 0 { // torn: no newline at the end
				if !repair {
					return fmt.Errorf("store: %s:%d: incomplete last line%s", path, line, repairHint(path))
				}
				return truncate(f, path, offset)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: %s: %w", path, err)
		}
		if blank(b) {
			offset += int64(len(b))
			continue
		}
		var r trajectory.Record
		if uerr := DecodeRecord(b, &r); uerr != nil {
			// A last line that is not even JSON is the torn tail of a crash;
			// a complete JSON line missing fields is somebody's edit: kept.
			if _, perr := br.Peek(1); perr == io.EOF && repair && !json.Valid(bytes.TrimSpace(b)) {
				return truncate(f, path, offset)
			}
			return fmt.Errorf("store: %s:%d: corrupt record: %v%s", path, line, uerr, repairHint(path))
		}
		if err := fn(line, &r); err != nil {
			return err
		}
		offset += int64(len(b))
	}
}

func truncate(f *os.File, path string, offset int64) error {
	if err := f.Truncate(offset); err != nil {
		return fmt.Errorf("store: truncating torn line of %s: %w", path, err)
	}
	return f.Sync()
}
