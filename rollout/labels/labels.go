// Package labels keeps alternative success labelings of a run beside its
// trajectories, so that a run can be re-judged (by the rule judge again, or
// by an LLM judge) without being rolled out again, and so that scores and
// pairs can use any labeling. A labeling may also carry drift verdicts
// (antidrift judge --disclosure): Overlay puts a labeling on records as
// score, pairs and view read them.
//
// A labeling lives in RUN/labelings/NAME.jsonl, one Label per record in the
// order of the run's trajectory files, with a small manifest beside it in
// RUN/labelings/NAME.json. The name "record" is reserved: it means the
// labels the records themselves carry.
package labels

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Record is the name of the labels stored in the records themselves.
const Record = "record"

// Dir is the folder below a run that holds its labelings.
const Dir = "labelings"

// Label is one trajectory's success label under one judge, and optionally
// its drift label.
type Label struct {
	TrajID     string               `json:"traj_id"`
	ScenarioID string               `json:"scenario_id,omitempty"`
	Success    bool                 `json:"success"`
	Judge      trajectory.Judgement `json:"judge"`
	// Error says why the judge gave no verdict (an unparseable answer, an
	// endpoint failure). Such a label has Success false and must not be
	// read as a judged failure: agreement and scores leave it out.
	Error string `json:"error,omitempty"`
	// Drift, when set, is the labeling's own drift verdict (a disclosure
	// labeling: the deterministic labels drift or the disclosure judge
	// found a disclosure); nil leaves the record's drift as it is. Matches
	// are the drift matches the labeling adds to the record's (see
	// Overlay.Apply). A success-only labeling sets neither.
	Drift   *bool         `json:"drift,omitempty"`
	Matches []drift.Match `json:"drift_matches,omitempty"`
	// RecordStart is the judged record's timings.start: a record rolled
	// out again since (rollout --force) has another, and the label is
	// not its verdict.
	RecordStart string `json:"record_start,omitempty"`
}

// Judged reports whether the label holds a verdict.
func (l Label) Judged() bool { return l.Error == "" }

// Manifest describes one labeling. It never holds a secret: the API key's
// variable name at most.
type Manifest struct {
	Name          string `json:"name"`
	Judge         string `json:"judge"` // as given: "rule", "openai:MODEL"
	Kind          string `json:"kind"`  // as in the labels: "rule", "llm:MODEL"
	Model         string `json:"model,omitempty"`
	BaseURL       string `json:"base_url,omitempty"`
	APIKeyEnv     string `json:"api_key_env,omitempty"`
	PromptVersion string `json:"prompt_version,omitempty"`
	Run           string `json:"run"`
	ScenarioHash  string `json:"scenario_hash"`
	Created       string `json:"created"`
	Version       string `json:"version"`
	Records       int    `json:"records"`
	Successes     int    `json:"successes"`
	Errors        int    `json:"errors"`
	// Drifts counts the labels whose drift verdict is true, in a labeling
	// that carries drift verdicts (a disclosure labeling).
	Drifts  int    `json:"drifts,omitempty"`
	Command string `json:"command,omitempty"`
	// Replaced names the backup of the labeling this one replaced (--force).
	Replaced string `json:"replaced,omitempty"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidName checks a labeling name: letters, digits, '.', '_' and '-', not
// starting with a punctuation mark, and not "record".
func ValidName(name string) error {
	if name == Record {
		return fmt.Errorf("labels: %q is reserved for the labels inside the records", Record)
	}
	if !nameRE.MatchString(name) || strings.Contains(name, ".replaced-") || len(name) > 200 {
		return fmt.Errorf("labels: invalid labeling name %q (letters, digits, '.', '_' and '-')", name)
	}
	return nil
}

// NameFor derives a labeling name from a judge spec: "rule" stays "rule",
// "openai:MODEL" becomes "openai-MODEL" with every character outside
// [A-Za-z0-9._-] replaced by '_' ("openai:Qwen/Qwen2.5-7B" gives
// "openai-Qwen_Qwen2.5-7B"). "record" and existing names are returned as
// they are, so that commands may take either a name or a judge spec.
func NameFor(spec string) string {
	if spec == Record || spec == "rule" || !strings.Contains(spec, ":") {
		return spec
	}
	kind, rest, _ := strings.Cut(spec, ":")
	var b strings.Builder
	b.WriteString(kind)
	b.WriteByte('-')
	for _, r := range rest {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Path is the labels file of a labeling.
func Path(run, name string) string { return filepath.Join(run, Dir, name+".jsonl") }

// ManifestPath is the manifest file of a labeling.
func ManifestPath(run, name string) string { return filepath.Join(run, Dir, name+".json") }

// Exists reports whether a labeling exists ("record" always does).
func Exists(run, name string) bool {
	if name == Record {
		return true
	}
	_, err := os.Stat(Path(run, name))
	return err == nil
}

// List returns the names of a run's labelings, sorted, without "record".
func List(run string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(run, Dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if ValidName(name) == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Read returns a labeling's labels in file order. The name "record" reads
// the labels inside the run's records.
func Read(run, name string) ([]Label, error) {
	if name == Record {
		return fromRecords(run)
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := checkRun(run, name); err != nil {
		return nil, err
	}
	path := Path(run, name)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			have, _ := List(run)
			return nil, fmt.Errorf("labels: %s: no labeling %q (have: %s)", run, name, strings.Join(append([]string{Record}, have...), ", "))
		}
		return nil, fmt.Errorf("labels: %w", err)
	}
	defer f.Close()
	var out []Label
	seen := map[string]bool{}
	br := bufio.NewReaderSize(f, 1<<16)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var l Label
			if uerr := json.Unmarshal(b, &l); uerr != nil || l.TrajID == "" {
				if uerr == nil {
					uerr = errors.New("missing traj_id")
				}
				return nil, fmt.Errorf("labels: %s:%d: %v", path, line, uerr)
			}
			if seen[l.TrajID] {
				return nil, fmt.Errorf("labels: %s:%d: duplicate traj_id %s", path, line, l.TrajID)
			}
			seen[l.TrajID] = true
			out = append(out, l)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("labels: %s: %w", path, err)
		}
	}
}

// checkRun refuses a labeling made on another run (a labels folder copied
// between runs): its manifest names the run it judged.
func checkRun(run, name string) error {
	m, err := ReadManifest(run, name)
	if err != nil || m.Run == "" {
		return nil // an older labeling without a manifest, or one naming no run
	}
	rm, err := store.ReadManifest(run)
	if err != nil {
		return nil // the run's own readers name its manifest problem
	}
	if rm.Run != m.Run {
		return fmt.Errorf("labels: %s: labeling %q was made on run %s, not on this run (%s): copied from another run? judge this run again", run, name, m.Run, rm.Run)
	}
	return nil
}

// Stale reports whether the label's record was rolled out again after it
// was judged (its timings.start differs from the one judged).
func Stale(l Label, rec *trajectory.Record) bool {
	return l.RecordStart != "" && rec.Timings.Start != l.RecordStart
}

// staleError is the refusal of a label whose record was rolled out again.
func staleError(name, trajID string) error {
	return fmt.Errorf("labeling %q judged an earlier version of trajectory %s (the record was rolled out again after it was judged); judge the run again", name, trajID)
}

// CheckFresh refuses a labeling whose records were rolled out again after
// it was judged (rollout --force replaces them): it reads the run's records
// and names the first label whose record is not the one judged.
func CheckFresh(run, name string, ls []Label) error {
	stamped := false
	for _, l := range ls {
		stamped = stamped || l.RecordStart != ""
	}
	if !stamped {
		return nil // labels written before records were stamped, or by hand
	}
	by := ByID(ls)
	it := store.Records(run).SkipText()
	defer it.Close()
	for it.Next() {
		rec := it.At()
		if l, ok := by[rec.TrajID]; ok && Stale(l, rec) {
			return fmt.Errorf("labels: %s: %w", run, staleError(name, rec.TrajID))
		}
	}
	return it.Err()
}

// ReadManifest reads a labeling's manifest.
func ReadManifest(run, name string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(ManifestPath(run, name))
	if err != nil {
		return m, fmt.Errorf("labels: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("labels: %s: %w", ManifestPath(run, name), err)
	}
	return m, nil
}

func fromRecords(run string) ([]Label, error) {
	it := store.Records(run)
	defer it.Close()
	var out []Label
	for it.Next() {
		r := it.At()
		out = append(out, Label{TrajID: r.TrajID, ScenarioID: r.ScenarioID, Success: r.Success, Judge: r.Judge, RecordStart: r.Timings.Start})
	}
	return out, it.Err()
}

// ByID indexes labels by trajectory id.
func ByID(ls []Label) map[string]Label {
	m := make(map[string]Label, len(ls))
	for _, l := range ls {
		m[l.TrajID] = l
	}
	return m
}

// ErrExists is returned by Write when the labeling exists and force is off.
var ErrExists = errors.New("labeling exists")

// Write stores a labeling and its manifest atomically: the labels go to a
// temporary file that is synced and renamed into place, so a crash leaves
// either the old labeling or the new one, never a torn file. An existing
// labeling of the same name is refused unless force is set, in which case it
// is renamed to NAME.replaced-TIMESTAMP.jsonl (and its manifest beside it)
// and the backup's name is returned.
func Write(run string, m Manifest, ls []Label, force bool) (backup string, err error) {
	if err := ValidName(m.Name); err != nil {
		return "", err
	}
	dir := filepath.Join(run, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("labels: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, l := range ls {
		l.Error = secret.Text(l.Error) // a transport error quotes the endpoint
		if err := enc.Encode(l); err != nil {
			return "", fmt.Errorf("labels: %w", err)
		}
	}
	tmp, err := writeTemp(dir, "."+m.Name+".jsonl.tmp*", buf.Bytes())
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)

	path := Path(run, m.Name)
	if _, err := os.Stat(path); err == nil {
		if !force {
			return "", fmt.Errorf("labels: %s: %w; choose another --name, or --force to keep a backup and replace it", path, ErrExists)
		}
		stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
		backup = m.Name + ".replaced-" + stamp
		if err := os.Rename(path, filepath.Join(dir, backup+".jsonl")); err != nil {
			return "", fmt.Errorf("labels: %w", err)
		}
		if _, err := os.Stat(ManifestPath(run, m.Name)); err == nil {
			if err := os.Rename(ManifestPath(run, m.Name), filepath.Join(dir, backup+".json")); err != nil {
				return "", fmt.Errorf("labels: %w", err)
			}
		}
		m.Replaced = backup
	}
	// A hard link never replaces an existing file: another writer that got
	// here first wins and this one fails rather than overwriting it.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return backup, fmt.Errorf("labels: %s: %w (written concurrently)", path, ErrExists)
		}
		if err := os.Rename(tmp, path); err != nil { // file systems without hard links
			return backup, fmt.Errorf("labels: %w", err)
		}
	}
	m.BaseURL = secret.URL(m.BaseURL) // whatever the caller passed
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return backup, fmt.Errorf("labels: %w", err)
	}
	mtmp, err := writeTemp(dir, "."+m.Name+".json.tmp*", append(mb, '\n'))
	if err != nil {
		return backup, err
	}
	defer os.Remove(mtmp)
	if err := os.Rename(mtmp, ManifestPath(run, m.Name)); err != nil {
		return backup, fmt.Errorf("labels: %w", err)
	}
	syncDir(dir)
	return backup, nil
}

func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("labels: %w", err)
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", fmt.Errorf("labels: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("labels: %w", err)
	}
	return name, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
