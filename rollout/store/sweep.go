package store

import (
	"io/fs"
	"os"
	"path/filepath"
)

// TempPatterns match the names of the temporary files and staging folders
// antidrift's writers create (filepath.Match syntax, on a base name):
// atomic writes (".NAME.tmpNNN", synth's ".tmp-NNN"), table writers
// (".NAME.tmp") and staging folders (".antidrift-tmp-NNN").
var TempPatterns = []string{".antidrift-tmp-*", ".*.tmp", ".*.tmp[0-9]*", ".tmp-*"}

// SweepTemps removes, at every level under dir, what a killed writer left
// behind: entries whose name matches TempPatterns or one of extra. The
// caller holds dir's lock; a sub-folder whose own lock another process
// holds (a run still being written) is left alone, and symlinks are never
// followed. Errors are ignored: a temporary file that stays is harmless
// and the next sweep tries again.
func SweepTemps(dir string, extra ...string) {
	patterns := append(append([]string(nil), TempPatterns...), extra...)
	isTemp := func(name string) bool {
		if name == LockName {
			return false
		}
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	var locks []*Lock
	defer func() {
		for _, l := range locks {
			l.Release()
		}
	}()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if p == dir {
			return nil
		}
		if isTemp(d.Name()) {
			os.RemoveAll(p)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if _, err := os.Lstat(filepath.Join(p, LockName)); err == nil {
				// Another writer's folder, or a lock a killed one left:
				// sweep it only if its lock can be taken now.
				l, err := LockDir(p, "sweep")
				if err != nil {
					return filepath.SkipDir
				}
				locks = append(locks, l)
			}
		}
		return nil
	})
}
