package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepTempsEveryLevel: temporary files and staging folders go at
// every level; other files, the lock and whatever a symlink leads to stay.
func TestSweepTempsEveryLevel(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	write := func(p string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	temps := []string{".antidrift-tmp-1/part", ".train.jsonl.tmp", "jsonl/.train.jsonl.12.tmp", "parquet/.README.md.tmp99",
		"arrow/deep/.tmp-abc", "arrow/.antidrift-tmp-2/x", "extra.partial"}
	kept := []string{"README.md", "jsonl/train.jsonl", "parquet/.hidden-but-mine", "arrow/deep/data.arrow", LockName}
	for _, p := range append(append([]string(nil), temps...), kept...) {
		write(filepath.Join(dir, p))
	}
	write(filepath.Join(outside, ".x.tmp"))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))

	SweepTemps(dir, "*.partial")
	for _, p := range temps {
		assert.NoFileExists(t, filepath.Join(dir, p), p)
	}
	assert.NoDirExists(t, filepath.Join(dir, "arrow", ".antidrift-tmp-2"))
	for _, p := range kept {
		assert.FileExists(t, filepath.Join(dir, p), p)
	}
	assert.FileExists(t, filepath.Join(outside, ".x.tmp"), "a symlink is not followed")
}
