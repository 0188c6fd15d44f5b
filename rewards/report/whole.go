package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// StagingPrefix starts the name of a report's staging folder (beside the
// report folder); a leftover one, from a killed process, is removed by the
// next Write to the same folder.
const StagingPrefix = ".antidrift-staging-"

// writeWhole writes a folder through a staging folder beside it and puts
// the result in place with one rename: an atomic exchange with the old
// folder where the system supports it, else rename old aside, new in.
func writeWhole(dir string, write func(staging string) error) error {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	prefix := StagingPrefix + base + "-"
	if old, _ := filepath.Glob(filepath.Join(parent, prefix+"*")); len(old) > 0 {
		for _, o := range old {
			os.RemoveAll(o) // a killed earlier write
		}
	}
	staging, err := tempgate.MkdirTemp(parent, prefix+"*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.RemoveAll(staging) // after the swap, the old report
	if err := os.Chmod(staging, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := write(staging); err != nil {
		return err
	}
	// Keep the ownership marker the command line tool keeps in its output
	// folders (.antidrift-output.json), so that the swap does not lose it.
	if es, err := os.ReadDir(dir); err == nil {
		for _, e := range es {
			if n := e.Name(); strings.HasPrefix(n, ".antidrift-output") && !e.IsDir() {
				if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
					_ = os.WriteFile(filepath.Join(staging, n), b, 0o644)
				}
			}
		}
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(staging, dir); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return syncDir(parent)
	}
	if err := exchange(staging, dir); err == nil {
		return syncDir(parent)
	}
	aside := staging + ".old"
	if err := os.Rename(dir, aside); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(staging, dir); err != nil {
		_ = os.Rename(aside, dir)
		return fmt.Errorf("report: %w", err)
	}
	os.RemoveAll(aside)
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
