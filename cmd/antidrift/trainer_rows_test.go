package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/policy/sim"
)

// captureTools serves the simulated policies over HTTP and keeps the tools
// list of every request, as the bytes that went on the wire.
type captureTools struct {
	h     http.Handler
	mu    sync.Mutex
	lists map[string]bool // the tools arrays, each element compacted as sent, joined by "\n"
	tools map[string]bool
}

func (c *captureTools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &req) == nil && len(req.Tools) > 0 {
		c.mu.Lock()
		var parts []string
		for _, t := range req.Tools {
			c.tools[string(t)] = true
			parts = append(parts, string(t))
		}
		c.lists[strings.Join(parts, "\n")] = true
		c.mu.Unlock()
	}
	c.h.ServeHTTP(w, r)
}

func runCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := execRoot(args...)
	require.NoError(t, err)
	return out
}

// execRoot runs the command line in-process and returns what it wrote; its
// error names the command line and holds that output. For shared setups
// that run once per test binary, outside any one test.
func execRoot(args ...string) (string, error) {
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		return out.String(), fmt.Errorf("antidrift %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func jsonlRows(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var rows []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		rows = append(rows, r)
	}
	require.NoError(t, sc.Err())
	return rows
}

// TestTrainerRowsOverHTTP rolls the simulated policy out through the HTTP
// client and checks what trainers read in every table: tools byte-equal to
// a request's tools list, content a string on every message, arguments
// objects, no {"_raw": …}, and text-protocol rows marked and tool-less.
func TestTrainerRowsOverHTTP(t *testing.T) {
	dir, _, cap := frameworkTables(t)
	tables := map[string][]string{
		"pairs/jsonl/dpo.jsonl":                 {"prompt", "chosen", "rejected"},
		"rewards/jsonl/rewards.jsonl":           {"prompt", "completion"},
		"kto/jsonl/kto.jsonl":                   {"prompt", "completion"},
		"trajectories/jsonl/trajectories.jsonl": {"messages"},
	}
	for file, cols := range tables {
		rows := jsonlRows(t, filepath.Join(dir, file))
		require.NotEmpty(t, rows, file)
		formats := map[string]int{}
		for i, r := range rows {
			var format string
			require.NoError(t, json.Unmarshal(r["tool_format"], &format), "%s row %d: tool_format", file, i)
			formats[format]++
			var tools []json.RawMessage
			require.NoError(t, json.Unmarshal(r["tools"], &tools))
			if format == "text" {
				assert.Empty(t, tools, "%s row %d: a text-protocol model was sent no tools", file, i)
			} else {
				var parts []string
				for _, tl := range tools {
					parts = append(parts, string(tl))
				}
				assert.True(t, cap.lists[strings.Join(parts, "\n")], "%s row %d: tools are not the bytes of any request's tools list", file, i)
			}
			for _, col := range cols {
				var ms []map[string]any
				require.NoError(t, json.Unmarshal(r[col], &ms), "%s row %d %s", file, i, col)
				for j, m := range ms {
					_, ok := m["content"].(string)
					assert.True(t, ok, "%s row %d %s[%d]: content missing or not a string", file, i, col, j)
					calls, _ := m["tool_calls"].([]any)
					if format == "text" {
						assert.Empty(t, calls, "%s row %d: text rows carry no tool_calls", file, i)
					}
					for _, c := range calls {
						args, ok := c.(map[string]any)["function"].(map[string]any)["arguments"].(map[string]any)
						require.True(t, ok, "%s row %d: arguments not an object", file, i)
						assert.NotContains(t, args, "_raw", "%s row %d", file, i)
					}
				}
			}
		}
		assert.Positive(t, formats["native"], file)
		assert.Positive(t, formats["text"], file)
	}
}

// TestHuggingFaceLayout: every card's YAML front matter parses, names a
// config per table whose data_files patterns name every Parquet file under
// data/ (one file per split, or its shards), each split file holds only
// rows of its split and all rows of the JSONL between them, and
// dataset_info.features types the columns as the Parquet files do.
func TestHuggingFaceLayout(t *testing.T) {
	dir, runs := tableRuns(t)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "pairs"), "--step-pairs"}, runs...)...)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "pairs-sharded"), "--shard-bytes", "4000"}, runs...)...)
	runCmd(t, append([]string{"rewards", "--out", filepath.Join(dir, "rewards")}, runs...)...)
	runCmd(t, append([]string{"export", "--table", "kto", "--out", filepath.Join(dir, "kto")}, runs...)...)
	runCmd(t, append([]string{"export", "--table", "trajectories", "--out", filepath.Join(dir, "trajectories"), "--shard-bytes", "100000"}, runs...)...)
	sharded := 0
	for folder, table := range map[string]string{"pairs": "dpo", "pairs-sharded": "dpo", "rewards": "rewards", "kto": "kto", "trajectories": "trajectories"} {
		base := filepath.Join(dir, folder)
		card, err := os.ReadFile(filepath.Join(base, "README.md"))
		require.NoError(t, err)
		front, ok := strings.CutPrefix(string(card), "---\n")
		require.True(t, ok, "%s: the card starts with YAML front matter", folder)
		front, _, ok = strings.Cut(front, "\n---\n")
		require.True(t, ok, folder)
		var meta struct {
			License        string   `yaml:"license"`
			TaskCategories []string `yaml:"task_categories"`
			Tags           []string `yaml:"tags"`
			SizeCategories []string `yaml:"size_categories"`
			Configs        []struct {
				Name      string `yaml:"config_name"`
				Default   bool   `yaml:"default"`
				DataFiles []struct {
					Split string `yaml:"split"`
					Path  string `yaml:"path"`
				} `yaml:"data_files"`
			} `yaml:"configs"`
			DatasetInfo []struct {
				Name     string `yaml:"config_name"`
				Features []struct {
					Name  string `yaml:"name"`
					Dtype string `yaml:"dtype"`
					List  string `yaml:"list"`
				} `yaml:"features"`
				Splits []struct {
					Name     string `yaml:"name"`
					Examples int    `yaml:"num_examples"`
				} `yaml:"splits"`
			} `yaml:"dataset_info"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(front), &meta), folder)
		assert.NotEmpty(t, meta.License, folder)
		assert.NotEmpty(t, meta.TaskCategories, folder)
		assert.Contains(t, meta.Tags, "simulated", folder)
		assert.Len(t, meta.SizeCategories, 1, folder)
		require.Len(t, meta.Configs, 1, folder)
		c := meta.Configs[0]
		assert.Equal(t, table, c.Name)
		assert.True(t, c.Default)
		require.Len(t, c.DataFiles, 3, folder)
		require.Len(t, meta.DatasetInfo, 1, folder)
		info := meta.DatasetInfo[0]
		assert.Equal(t, table, info.Name)
		require.Len(t, info.Splits, 3, folder)

		es, err := os.ReadDir(filepath.Join(base, "data"))
		require.NoError(t, err)
		named := map[string]string{} // file → the split whose pattern names it
		total := 0
		for i, df := range c.DataFiles {
			assert.Equal(t, dataset.Splits[i], df.Split)
			n, rows := 0, 0
			for _, e := range es {
				rel := "data/" + e.Name()
				if ok, _ := path.Match(df.Path, rel); !ok {
					continue
				}
				require.NotContains(t, named, rel, "%s: %s named by two splits", folder, rel)
				named[rel] = df.Split
				n++
				pf, err := os.Open(filepath.Join(base, filepath.FromSlash(rel)))
				require.NoError(t, err)
				st, _ := pf.Stat()
				f, err := parquet.OpenFile(pf, st.Size())
				require.NoError(t, err, rel)
				// dataset_info.features types every column as the file does
				fields := f.Schema().Fields()
				require.Len(t, info.Features, len(fields), "%s %s", folder, rel)
				for k, fd := range fields {
					ft := info.Features[k]
					assert.Equal(t, fd.Name(), ft.Name, "%s %s column %d", folder, rel, k)
					assert.Equal(t, parquetFeature(fd), ft.Dtype+ft.List, "%s %s column %s", folder, rel, fd.Name())
				}
				pf.Close()
				got, err := parquet.ReadFile[struct {
					Split string `parquet:"split"`
				}](filepath.Join(base, filepath.FromSlash(rel)))
				require.NoError(t, err, rel)
				for _, r := range got {
					require.Equal(t, df.Split, r.Split, "%s/%s holds only its split", folder, rel)
				}
				rows += len(got)
			}
			require.Positive(t, n, "%s: %s names no file", folder, df.Path)
			if n > 1 {
				sharded++
				assert.Regexp(t, `^data/`+table+`-`+df.Split+`-\*-of-\d{5}\.parquet$`, df.Path)
			} else {
				assert.Equal(t, "data/"+table+"-"+df.Split+".parquet", df.Path)
			}
			assert.Equal(t, info.Splits[i].Name, df.Split)
			assert.Equal(t, rows, info.Splits[i].Examples, "%s %s: num_examples", folder, df.Split)
			total += rows
		}
		for _, e := range es {
			assert.Contains(t, named, "data/"+e.Name(), "%s: every file under data/ is named in the YAML", folder)
		}
		assert.Len(t, jsonlRows(t, filepath.Join(base, "jsonl", table+".jsonl")), total, "%s: the split files hold every row", folder)
		// The folder loader must not be tempted by other files: no
		// data file outside data/, arrow/ and jsonl/ but the provenance.
		top, err := os.ReadDir(base)
		require.NoError(t, err)
		for _, e := range top {
			if !e.IsDir() {
				assert.Contains(t, []string{"README.md", "manifest.json", "pairs_stats.json", markerName}, e.Name(), folder)
			}
		}
		if table != "trajectories" {
			assert.Contains(t, string(card), "## Lengths", folder)
			assert.Regexp(t, `\| p50 \| p90 \| p99 \| max \|`, string(card), folder)
			if table == "rewards" { // the GRPO recipe bounds the completion only
				assert.Regexp(t, `max_completion_length=\d+`, string(card), folder)
			} else {
				assert.Regexp(t, `max_length=\d+`, string(card), folder)
			}
			for i, r := range jsonlRows(t, filepath.Join(base, "jsonl", table+".jsonl")) {
				var p int64
				require.NoError(t, json.Unmarshal(r["prompt_tokens_est"], &p), "%s row %d", folder, i)
				assert.Positive(t, p, "%s row %d", folder, i)
				for _, col := range []string{"chosen_tokens_est", "rejected_tokens_est", "completion_tokens_est"} {
					if v, ok := r[col]; ok {
						var n int64
						require.NoError(t, json.Unmarshal(v, &n))
						assert.Positive(t, n, "%s row %d %s", folder, i, col)
					}
				}
			}
		}
		man, err := os.ReadFile(filepath.Join(base, "manifest.json"))
		require.NoError(t, err)
		assert.NotContains(t, string(man), `"path": "/`, "%s: manifest paths are relative", folder)
		assert.NotContains(t, string(card), dir, "%s: the card holds no absolute path", folder)
		assert.NotContains(t, string(card), filepath.Dir(filepath.Dir(runs[0])), "%s: the card holds no absolute path of the runs", folder)
	}
	assert.GreaterOrEqual(t, sharded, 2, "the small --shard-bytes bounds cut splits into shards")
}

// parquetFeature is the datasets feature a Parquet column reads as:
// "string", "bool", "int64", "float64", or a list's element type ("json",
// "string", ...).
func parquetFeature(f parquet.Field) string {
	logical := func(n parquet.Node) string {
		if lt := n.Type().LogicalType(); lt != nil {
			return lt.String()
		}
		return ""
	}
	leaf := func(n parquet.Node) string {
		t := n.Type()
		switch {
		case logical(n) == "JSON":
			return "json"
		case logical(n) == "STRING":
			return "string"
		case t.Kind() == parquet.Boolean:
			return "bool"
		case t.Kind() == parquet.Int64:
			return "int64"
		case t.Kind() == parquet.Double:
			return "float64"
		}
		return "unknown " + t.String()
	}
	if logical(f) == "LIST" {
		return leaf(f.Fields()[0].Fields()[0])
	}
	return leaf(f)
}

// TestKTOOrderMixes measures how the KTO file mixes scenarios and labels:
// every window of 8 consecutive rows holds at least two scenarios and both
// labels (the smaller class has more than an eighth of the rows here).
func TestKTOOrderMixes(t *testing.T) {
	dir := t.TempDir()
	runs := []string{filepath.Join(dir, "base"), filepath.Join(dir, "dpo-2")}
	runCmd(t, "rollout", "--policy", "sim:base", "--rollouts", "4", "--out", runs[0])
	runCmd(t, "rollout", "--policy", "sim:dpo-2", "--rollouts", "4", "--out", runs[1])
	for _, framework := range []string{"", "react"} {
		rs := runs
		if framework != "" {
			rs = []string{filepath.Join(dir, framework)}
			runCmd(t, "rollout", "--policy", "sim:base", "--framework", framework, "--rollouts", "4", "--out", rs[0])
		}
		out := filepath.Join(dir, "kto"+framework)
		runCmd(t, append([]string{"export", "--table", "kto", "--out", out, "--format", "jsonl"}, rs...)...)
		rows := jsonlRows(t, filepath.Join(out, "jsonl", "kto.jsonl"))
		require.Greater(t, len(rows), 100)
		type row struct {
			scenario string
			label    bool
		}
		var xs []row
		labels := map[bool]int{}
		for _, r := range rows {
			var x row
			require.NoError(t, json.Unmarshal(r["scenario_id"], &x.scenario))
			require.NoError(t, json.Unmarshal(r["label"], &x.label))
			xs = append(xs, x)
			labels[x.label]++
		}
		require.Greater(t, 8*min(labels[true], labels[false]), len(xs), "the smaller class has more than an eighth of the rows")
		windows, minScen := 0, 8
		for i := 0; i+8 <= len(xs); i++ {
			scen, ls := map[string]bool{}, map[bool]bool{}
			for _, x := range xs[i : i+8] {
				scen[x.scenario], ls[x.label] = true, true
			}
			windows++
			minScen = min(minScen, len(scen))
			assert.GreaterOrEqual(t, len(scen), 2, "rows %d–%d hold one scenario", i, i+7)
			assert.Len(t, ls, 2, "rows %d–%d hold one label", i, i+7)
		}
		t.Logf("%s: %d rows (%d desirable, %d undesirable): all %d windows of 8 hold both labels, at least %d scenarios", out, len(xs), labels[true], labels[false], windows, minScen)
		man, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		require.NoError(t, err)
		assert.Contains(t, string(man), "shuffled by row: by SHA-256 of the seed, traj_id and turn, seed 1, each label on its own")
	}
}

// sharedFrameworkTables are frameworkTables' runs and tables, made once per
// test binary: the two tests that check them only read them.
var sharedFrameworkTables struct {
	once sync.Once
	dir  string
	runs []string
	cap  *captureTools
	err  error
}

// frameworkTables rolls the simulated sft checkpoint out over HTTP (12
// scenarios × 2 rollouts, through a server that records every tools list
// it is sent) under each of the normal, react, plan-exec and gated
// frameworks, and writes the default pairs, rewards, kto and trajectories
// tables as JSONL under dir/<table>. It returns dir, the run folders and
// the capture, made once per test binary: tests must not write into dir
// (copy what they need).
func frameworkTables(t *testing.T) (string, []string, *captureTools) {
	t.Helper()
	f := &sharedFrameworkTables
	f.once.Do(func() {
		ss, err := loadScenarios(nil, "")
		if err != nil {
			f.err = err
			return
		}
		cap := &captureTools{h: sim.NewServer(ss, 0), lists: map[string]bool{}, tools: map[string]bool{}}
		srv := httptest.NewServer(cap)
		defer srv.Close()
		if f.dir, f.err = os.MkdirTemp("", "antidrift-framework-tables-"); f.err != nil {
			return
		}
		runArgs := func(args ...string) error {
			_, err := execRoot(args...)
			return err
		}
		var runs []string
		for _, fw := range []string{"normal", "react", "plan-exec", "gated"} {
			run := filepath.Join(f.dir, "runs", fw)
			runs = append(runs, run)
			if f.err = runArgs("rollout", "--policy", "openai:sim:sft", "--base-url", srv.URL+"/v1", "--framework", fw,
				"--rollouts", "2", "--limit", "12", "--out", run); f.err != nil {
				return
			}
		}
		for _, args := range [][]string{
			{"pairs", "--out", filepath.Join(f.dir, "pairs"), "--format", "jsonl", "--step-pairs"},
			{"rewards", "--out", filepath.Join(f.dir, "rewards"), "--format", "jsonl"},
			{"export", "--table", "kto", "--out", filepath.Join(f.dir, "kto"), "--format", "jsonl"},
			{"export", "--table", "trajectories", "--out", filepath.Join(f.dir, "trajectories"), "--format", "jsonl"},
		} {
			if f.err = runArgs(append(args, runs...)...); f.err != nil {
				return
			}
		}
		f.runs, f.cap = runs, cap
	})
	require.NoError(t, f.err, "the shared framework tables")
	require.NotNil(t, f.cap, "the shared framework tables failed earlier")
	return f.dir, slices.Clone(f.runs), f.cap
}

// removeFrameworkTables removes the shared framework tables after the
// tests (TestMain).
func removeFrameworkTables() {
	if sharedFrameworkTables.dir != "" {
		os.RemoveAll(sharedFrameworkTables.dir)
	}
}
