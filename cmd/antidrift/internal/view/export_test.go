package view

import (
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readTree reads every file below dir, by relative path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

// TestExportIsDeterministicAndSelects: the same folders and filter give
// byte-identical sites; the site holds the selected trajectories only,
// never the runs' settings.
func TestExportIsDeterministicAndSelects(t *testing.T) {
	filter := url.Values{"checkpoint": {"sim:dpo-2"}, "drift": {"false"}}
	var sites []map[string]string
	for range 2 {
		s, err := New([]string{fixture(t)}, builtinScenarios)
		require.NoError(t, err)
		dir := filepath.Join(t.TempDir(), "site")
		res, err := s.Export(dir, ExportOptions{Filter: filter, Limit: 1000})
		require.NoError(t, err)
		want := 0
		for _, r := range allRecords(t) {
			if r.Checkpoint == "sim:dpo-2" && !r.Drift {
				want++
			}
		}
		require.Equal(t, want, res.Trajectories)
		require.Equal(t, want, res.Selected)
		sites = append(sites, readTree(t, dir))
	}
	require.Equal(t, sites[0], sites[1], "byte-identical")
	index := sites[0]["data/index.js"]
	assert.True(t, strings.HasPrefix(index, "window.ANTIDRIFT_STATIC = {"))
	assert.NotContains(t, index, "secret", "settings (endpoints with credentials) are not exported")
	var data struct {
		Rows []summaryRow `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(index, "window.ANTIDRIFT_STATIC = "), ";\n")), &data))
	for _, r := range data.Rows {
		if r.Checkpoint != "sim:dpo-2" || r.Drift {
			t.Fatalf("row %s (%s, drift %v) is not selected by the filter", r.TrajID, r.Checkpoint, r.Drift)
		}
	}
	assert.Contains(t, sites[0]["index.html"], `<script src="data/index.js"></script>`)

	s, err := New([]string{fixture(t)}, builtinScenarios)
	require.NoError(t, err)
	_, err = s.Export(t.TempDir()+"/x", ExportOptions{Filter: url.Values{"drift": {"maybe"}}, Limit: 10})
	assert.ErrorContains(t, err, "drift=")
	_, err = s.Export(t.TempDir()+"/y", ExportOptions{Limit: 0})
	assert.ErrorContains(t, err, "limit")
}
