package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RepairResult says what Repair did.
type RepairResult struct {
	Files      int    `json:"files"`      // trajectory files read
	Kept       int    `json:"kept"`       // records left in place
	Duplicates int    `json:"duplicates"` // later copies of a traj_id, moved aside
	Invalid    int    `json:"invalid"`    // lines that are not valid records, moved aside
	Rewritten  int    `json:"rewritten"`  // trajectory files rewritten
	Aside      string `json:"aside,omitempty"`
}

// Repair makes a run folder readable again after two writers, a hand edit
// or a crash: for every traj_id the first copy (in file-name, then line
// order) stays, every later copy, every line that is not a valid record and
// a torn last line are moved to DIR/trajectories.repaired-TIMESTAMP/ (same
// file names, nothing deleted), and each changed file is replaced
// atomically. The folder is locked while it works.
func Repair(dir string) (RepairResult, error) {
	var res RepairResult
	if _, err := ReadManifest(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("repair: %s is not a run folder (no %s)", dir, manifestName)
		}
		return res, fmt.Errorf("repair: %w", err)
	}
	lock, err := LockDir(dir, "antidrift repair "+dir)
	if err != nil {
		return res, err
	}
	defer lock.Release()
	files, err := filepath.Glob(filepath.Join(dir, trajDir, "*.jsonl"))
	if err != nil {
		return res, err
	}
	sort.Strings(files)
	seen := map[string]bool{}
	aside := filepath.Join(dir, trajDir+".repaired-"+time.Now().UTC().Format("20060102T150405.000000000Z"))
	for _, f := range files {
		res.Files++
		changed, err := repairFile(f, seen, aside, &res)
		if err != nil {
			return res, fmt.Errorf("repair: %w", err)
		}
		if changed {
			res.Rewritten++
			res.Aside = aside
		}
	}
	return res, nil
}

// repairFile filters one file, streaming; it replaces the file only when
// a line moves.
func repairFile(path string, seen map[string]bool, asideDir string, res *RepairResult) (changed bool, err error) {
	in, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer in.Close()
	keep, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".repair-tmp*")
	if err != nil {
		return false, err
	}
	defer func() {
		keep.Close()
		os.Remove(keep.Name())
	}()
	var drop bytes.Buffer // only the moved lines are held
	kw := bufio.NewWriterSize(keep, 1<<20)
	br := bufio.NewReaderSize(in, 1<<20)
	var rec trajectory.Record
	for {
		b, rerr := br.ReadBytes('\n')
		if len(b) == 0 && rerr == io.EOF {
			break
		}
		if rerr != nil && rerr != io.EOF {
			return false, fmt.Errorf("%s: %w", path, rerr)
		}
		switch {
		case rerr == io.EOF: // torn last line
			drop.Write(b)
			drop.WriteByte('\n')
			res.Invalid++
			changed = true
		case blank(b):
			kw.Write(b)
		case DecodeRecord(b, &rec) != nil:
			drop.Write(b)
			res.Invalid++
			changed = true
		case seen[rec.TrajID]:
			drop.Write(b)
			res.Duplicates++
			changed = true
		default:
			seen[rec.TrajID] = true
			if _, err := kw.Write(b); err != nil {
				return false, err
			}
			res.Kept++
		}
	}
	if !changed {
		return false, nil
	}
	if err := kw.Flush(); err != nil {
		return false, err
	}
	if err := keep.Sync(); err != nil {
		return false, err
	}
	st, err := in.Stat()
	if err != nil {
		return false, err
	}
	if err := keep.Chmod(st.Mode().Perm()); err != nil {
		return false, err
	}
	if err := os.MkdirAll(asideDir, 0o755); err != nil {
		return false, err
	}
	// The moved lines are safe on disk before the file loses them.
	if err := writeFileAtomic(filepath.Join(asideDir, filepath.Base(path)), drop.Bytes()); err != nil {
		return false, err
	}
	if err := keep.Close(); err != nil {
		return false, err
	}
	if err := os.Rename(keep.Name(), path); err != nil {
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}
