package scenario_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadHostilePaths: an empty suite is an error, only regular files are
// read (a FIFO does not hang, /dev/zero does not exhaust memory), and
// every unreadable path is reported, not only the first.
func TestLoadHostilePaths(t *testing.T) {
	cat := provisions.Builtin()
	valid, err := filepath.Glob(filepath.Join("testdata", "valid", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, valid)

	empty := t.TempDir()
	yaml := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(yaml, "a.yaml"), []byte("id: a\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(yaml, "b.JSON"), []byte("{}"), 0o644))
	fifoDir := t.TempDir()
	fifo := filepath.Join(fifoDir, "pipe.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	big := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat(" ", scenario.MaxFileBytes+1)), 0o644))

	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{"empty folder", []string{empty}, []string{empty + ": no scenario files (.json) in this folder"}},
		{"yaml and .JSON only", []string{yaml}, []string{"skipped a.yaml, b.JSON"}},
		{"fifo", []string{fifo}, []string{fifo + ": not a regular file"}},
		{"fifo in a folder", []string{fifoDir}, []string{fifo + ": not a regular file"}},
		{"device", []string{"/dev/zero"}, []string{"/dev/zero: not a regular file"}},
		{"over the cap", []string{big}, []string{"over the 16777216-byte limit"}},
		{"every missing path", []string{"/nonexistent/a", valid[0], "/nonexistent/b"}, []string{"/nonexistent/a", "/nonexistent/b"}},
		{"nothing at all", nil, []string{"no scenarios: an empty suite"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var ps scenario.Problems
			go func() {
				_, ps = scenario.Load(tc.paths, cat)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load hung")
			}
			require.NotEmpty(t, ps)
			for _, w := range tc.want {
				assert.Contains(t, ps.Error(), w)
			}
		})
	}
	if os.Getuid() != 0 {
		t.Run("unreadable folders, all reported", func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"a", "b"} {
				require.NoError(t, os.Mkdir(filepath.Join(root, d), 0o000))
				t.Cleanup(func() { os.Chmod(filepath.Join(root, d), 0o755) })
			}
			_, ps := scenario.Load([]string{root}, cat)
			assert.Contains(t, ps.Error(), filepath.Join(root, "a"))
			assert.Contains(t, ps.Error(), filepath.Join(root, "b"))
		})
	}
}
