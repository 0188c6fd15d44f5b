package view

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeKTO writes a small KTO table: rows over three scenarios and two
// splits, some with drift types, their completions calling a tool.
func writeKTO(t *testing.T) (string, []map[string]any) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "kto")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var rows []map[string]any
	var b strings.Builder
	for i := 0; i < 40; i++ {
		drift := []string{}
		if i%3 == 0 {
			drift = []string{"data"}
		}
		if i%5 == 0 {
			drift = append(drift, "scope")
		}
		recipient := []string{"alice@example.com", "mallory@evil.example", "bob@example.com"}[i%3]
		r := map[string]any{
			"prompt":      []any{map[string]any{"role": "user", "content": fmt.Sprintf("Task %d: send the \"report\"", i)}},
			"completion":  []any{map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": fmt.Sprint(i), "type": "function", "function": map[string]any{"name": "send_email", "arguments": map[string]any{"to": recipient}}}}}},
			"label":       i%3 != 0,
			"traj_id":     fmt.Sprintf("t%02d", i),
			"scenario_id": fmt.Sprintf("sc-%d", i%3),
			"split":       []string{"train", "test"}[i%2],
			"reward":      float64(i%7) / 2,
			"drift_types": drift,
		}
		rows = append(rows, r)
		line, err := json.Marshal(r)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kto.jsonl"), []byte(b.String()), 0o644))
	return dir, rows
}

type tableRes struct {
	Total   int                 `json:"total"`
	Rows    []map[string]any    `json:"rows"`
	Columns []string            `json:"columns"`
	Facets  map[string][]string `json:"facets"`
}

// TestTableQueriesAgreeWithTheFile: filters (a column, a list column's
// member), search over the messages and sort select the rows the file
// holds, read directly.
func TestTableQueriesAgreeWithTheFile(t *testing.T) {
	dir, _ := writeKTO(t)
	s, err := New([]string{dir}, nil)
	require.NoError(t, err)
	require.NoError(t, s.Index())
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()

	// The truth: the file's lines.
	f, err := os.Open(filepath.Join(dir, "kto.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var file []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		file = append(file, r)
	}
	has := func(r map[string]any, typ string) bool {
		for _, x := range r["drift_types"].([]any) {
			if x == typ {
				return true
			}
		}
		return false
	}
	args := func(r map[string]any) string {
		b, _ := json.Marshal(r["completion"])
		return string(b)
	}
	cases := []struct {
		query string
		keep  func(r map[string]any) bool
	}{
		{"", func(map[string]any) bool { return true }},
		{"split=test", func(r map[string]any) bool { return r["split"] == "test" }},
		{"drift_types=scope&scenario_id=sc-0", func(r map[string]any) bool { return has(r, "scope") && r["scenario_id"] == "sc-0" }},
		{"label=true&split=train", func(r map[string]any) bool { return r["label"] == true && r["split"] == "train" }},
		{"q=" + url.QueryEscape("MALLORY@evil"), func(r map[string]any) bool { return strings.Contains(args(r), "mallory@evil") }},
		{"q=" + url.QueryEscape(`the "report"`) + "&split=train", func(r map[string]any) bool { return r["split"] == "train" }},
		{"q=nowhere-at-all", func(map[string]any) bool { return false }},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			want := map[string]bool{}
			for _, r := range file {
				if c.keep(r) {
					want[r["traj_id"].(string)] = true
				}
			}
			var res tableRes
			getJSON(t, hs, "/api/tables/0/rows?size=500&"+c.query, 200, &res)
			assert.Equal(t, len(want), res.Total)
			for _, r := range res.Rows {
				assert.True(t, want[r["traj_id"].(string)], r["traj_id"])
			}
		})
	}

	var res tableRes
	getJSON(t, hs, "/api/tables/0/rows?size=500&sort=-reward", 200, &res)
	for i := 1; i < len(res.Rows); i++ {
		var a, b float64
		fmt.Sscan(res.Rows[i-1]["reward"].(string), &a)
		fmt.Sscan(res.Rows[i]["reward"].(string), &b)
		require.GreaterOrEqual(t, a, b)
	}
	assert.Equal(t, []string{"data", "scope"}, res.Facets["drift_types"])
	assert.Equal(t, []string{"test", "train"}, res.Facets["split"])
	assert.NotContains(t, res.Facets, "traj_id", "ids are searched, not offered as menus")

	for q, want := range map[string]string{"colour=red": "no column \"colour\"", "sort=prompt": "sort=", "size=0": "size="} {
		var e map[string]string
		getJSON(t, hs, "/api/tables/0/rows?"+q, 400, &e)
		assert.Contains(t, e["error"], want, q)
	}
}

// TestTableBadRowIsReported: a row that is not JSON is refused with its
// file and line.
func TestTableBadRowIsReported(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kto.jsonl"), []byte(`{"prompt":[],"completion":[],"label":true}`+"\n{oops\n"), 0o644))
	_, err := New([]string{dir}, nil)
	require.ErrorContains(t, err, "kto.jsonl:2")
}
