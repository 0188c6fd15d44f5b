package report

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// A report that fails half-way (disk full, a signal) leaves the previous
// report as it was, never a mix; a success replaces it whole.
func TestWriteWholeNeverMixes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	write := func(files map[string]string, failAfter int) func(string) error {
		return func(staging string) error {
			n := 0
			for name, body := range files {
				if n == failAfter {
					return errors.New("no space left on device")
				}
				if err := os.WriteFile(filepath.Join(staging, name), []byte(body), 0o644); err != nil {
					return err
				}
				n++
			}
			return nil
		}
	}
	v1 := map[string]string{"report.json": "1", "report.md": "1", "old-plot.svg": "1"}
	require.NoError(t, writeWhole(dir, write(v1, -1)))
	assert.Equal(t, v1, readDir(t, dir))

	v2 := map[string]string{"report.json": "2", "report.md": "2", "pareto.svg": "2"}
	err := writeWhole(dir, write(v2, 2))
	require.Error(t, err)
	assert.Equal(t, v1, readDir(t, dir), "the failed write left the previous report untouched")
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), StagingPrefix+"*"))
	assert.Empty(t, left, "no staging folder left")

	// A staging folder a killed process left is removed by the next write.
	require.NoError(t, os.Mkdir(filepath.Join(filepath.Dir(dir), StagingPrefix+"report-123"), 0o755))
	require.NoError(t, writeWhole(dir, write(v2, -1)))
	assert.Equal(t, v2, readDir(t, dir), "replaced whole: the old plot is gone")
	left, _ = filepath.Glob(filepath.Join(filepath.Dir(dir), StagingPrefix+"*"))
	assert.Empty(t, left)
}
