package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simRunDir rolls a small simulated run out into a new folder.
func simRunDir(t *testing.T, policy string, concurrency string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runScenarios(t, "rollout", "--policy", policy, "--rollouts", "3", "--limit", "10", "--seed", "5",
		"--concurrency", concurrency, "--out", dir, "--json")
	require.Equal(t, 0, code, stderr)
	return dir
}

func TestExportTablesAndCard(t *testing.T) {
	a := simRunDir(t, "sim:base", "8")
	b := simRunDir(t, "sim:dpo-1", "8")
	for _, table := range []string{"trajectories", "kto"} {
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := runScenarios(t, "export", a, b, "--table", table, "--out", out, "--json")
		require.Equal(t, 0, code, stderr)
		var res struct {
			Table struct {
				Rows   int64            `json:"rows"`
				Splits map[string]int64 `json:"splits"`
				Files  []string         `json:"files"`
			} `json:"table"`
			Records int `json:"records"`
			Metrics []struct {
				Checkpoint string `json:"checkpoint"`
				N          int64  `json:"n"`
			} `json:"metrics"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
		assert.Equal(t, 60, res.Records)
		assert.Equal(t, []string{"data/" + table + "-train.parquet", "data/" + table + "-validation.parquet", "data/" + table + "-test.parquet",
			"arrow/" + table + "-train.arrow", "arrow/" + table + "-validation.arrow", "arrow/" + table + "-test.arrow", "jsonl/" + table + ".jsonl"}, res.Table.Files)
		var sum int64
		for _, n := range res.Table.Splits {
			sum += n
		}
		assert.Equal(t, res.Table.Rows, sum)
		require.Len(t, res.Metrics, 2)
		assert.Equal(t, "sim:base", res.Metrics[0].Checkpoint)
		for _, f := range append(res.Table.Files, "README.md", "manifest.json") {
			_, err := os.Stat(filepath.Join(out, f))
			require.NoError(t, err, f)
		}
		card, err := os.ReadFile(filepath.Join(out, "README.md"))
		require.NoError(t, err)
		assert.Contains(t, string(card), `load_dataset("path/to/this/folder", "`+table+`")`)
		assert.NotContains(t, string(card), "(/", "cards hold relative run paths")
		assert.NotContains(t, string(b4manifest(t, out)), `"path": "/`, "manifests hold relative paths")
		assert.Contains(t, string(card), "| sim:base (normal) | 30 |")
		var man map[string]any
		b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &man))
		assert.Equal(t, Version, man["toolkit_version"])
		assert.Contains(t, man["command"], "antidrift")
		assert.Equal(t, []any{"sim:base", "sim:dpo-1"}, man["checkpoints"])

		code, stdout, stderr = runScenarios(t, "inspect", filepath.Join(out, "data", table+"-train.parquet"), "--rows", "1")
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, fmt.Sprintf("rows: %d", res.Table.Splits["train"]))
		assert.Contains(t, stdout, "list<extension<arrow.json, storage utf8>>")
		assert.Contains(t, stdout, "row 1\n")
		assert.NotContains(t, stdout, "row 2\n")
	}
}

// The export never depends on the order episodes finished in: two runs of
// one plan, written in different orders, give byte-identical files.
func TestExportIsByteIdenticalAcrossRunOrder(t *testing.T) {
	a := simRunDir(t, "sim:sft", "1")
	b := simRunDir(t, "sim:sft", "16")
	outA, outB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, args := range [][]string{{a, "--out", outA}, {b, "--out", outB}} {
		code, _, stderr := runScenarios(t, append([]string{"export", "--table", "kto", "--seed", "3"}, args...)...)
		require.Equal(t, 0, code, stderr)
	}
	for _, f := range []string{"data/kto-train.parquet", "arrow/kto-train.arrow", "jsonl/kto.jsonl"} {
		x, err := os.ReadFile(filepath.Join(outA, f))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(outB, f))
		require.NoError(t, err)
		assert.True(t, string(x) == string(y), "%s differs", f)
	}
}

func TestExportErrorsNameTheInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, stderr := runScenarios(t, "export", missing, "--table", "kto", "--out", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, missing)

	notRun := t.TempDir()
	code, _, stderr = runScenarios(t, "export", notRun, "--table", "kto", "--out", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, notRun+" is not a run folder")

	run := simRunDir(t, "sim:base", "4")
	code, _, stderr = runScenarios(t, "export", run, "--table", "dpo", "--out", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `unknown --table "dpo"`)
	code, _, stderr = runScenarios(t, "export", run, "--table", "kto", "--format", "csv", "--out", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `unknown format "csv"`)

	// A corrupt record names its file and line; nothing is left under a
	// final name.
	f := filepath.Join(run, "trajectories", "part-0-of-1.jsonl")
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = "{not json\n"
	require.NoError(t, os.WriteFile(f, []byte(strings.Join(lines, "")), 0o644))
	out := t.TempDir()
	code, _, stderr = runScenarios(t, "export", run, "--table", "trajectories", "--out", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, f+":3:")
	ents, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Empty(t, ents)
}

func TestInspectErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "x.parquet")
	code, _, stderr := runScenarios(t, "inspect", missing)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, missing)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"a\":1}\n{oops\n"), 0o644))
	code, _, stderr = runScenarios(t, "inspect", bad, "--rows", "5")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, bad+": line 2")
}

func b4manifest(t *testing.T, out string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	require.NoError(t, err)
	return b
}
