package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInspectTrainer: an export folder reads cleanly as TRL reads it; the
// same rows fail OpenRLHF's loader check (it passes no tools to the
// template) until exported with --tools-in-system; a broken split file and
// a missing LLaMA-Factory layout are named.
func TestInspectTrainer(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--rollouts", "2", "--limit", "12", "--out", run)
	require.Equal(t, 0, code, stderr)
	pairs := filepath.Join(t.TempDir(), "pairs")
	code, _, stderr = runScenarios(t, "pairs", run, "--out", pairs, "--pair-types", "step,trajectory", "--format", "parquet,llamafactory")
	require.Equal(t, 0, code, stderr)
	kto := filepath.Join(t.TempDir(), "kto")
	code, _, stderr = runScenarios(t, "export", run, "--table", "kto", "--out", kto, "--format", "parquet")
	require.Equal(t, 0, code, stderr)

	for _, dir := range []string{pairs, kto} {
		code, stdout, stderr := runScenarios(t, "inspect", "--trainer", "trl", dir)
		assert.Equal(t, 0, code, "%s\n%s", stdout, stderr)
		assert.Contains(t, stdout, "nothing would fail")
		assert.Contains(t, stdout, "data/")
	}
	code, stdout, _ := runScenarios(t, "inspect", "--trainer", "openrlhf", pairs)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "OpenRLHF passes no tools to the chat template")

	sys := filepath.Join(t.TempDir(), "pairs-sys")
	code, _, stderr = runScenarios(t, "pairs", run, "--out", sys, "--tools-in-system", "--format", "parquet")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr = runScenarios(t, "inspect", "--trainer", "openrlhf", sys)
	assert.Equal(t, 0, code, "%s\n%s", stdout, stderr)

	code, stdout, _ = runScenarios(t, "inspect", "--trainer", "llamafactory", pairs)
	assert.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "llamafactory/")
	code, stdout, _ = runScenarios(t, "inspect", "--trainer", "llamafactory", kto)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "dataset_info.json")

	require.NoError(t, os.WriteFile(filepath.Join(kto, "data", "kto-train.parquet"), []byte("not parquet"), 0o644))
	code, stdout, _ = runScenarios(t, "inspect", "--trainer", "trl", kto)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "FAIL data/kto-train.parquet: not a readable Parquet file")

	code, _, stderr = runScenarios(t, "inspect", "--trainer", "axolotl", kto)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `--trainer "axolotl"`)
}

// TestTableCommandLineRelative: the command line a card records names
// files and folders relative to the output folder, never by the absolute
// path of the machine that made it.
func TestTableCommandLineRelative(t *testing.T) {
	root := t.TempDir()
	run, out := filepath.Join(root, "runs", "base"), filepath.Join(root, "tables", "kto")
	require.NoError(t, os.MkdirAll(run, 0o755))
	saved := os.Args
	defer func() { os.Args = saved }()
	os.Args = []string{"antidrift", "export", run, "--table", "kto", "--out", out, "--provisions=" + filepath.Join(root, "w.json"), "--seed", "3"}
	got := tableCommandLine(out)
	assert.Equal(t, "antidrift export ../../runs/base --table kto --out . --provisions=../../w.json --seed 3", got)
	assert.NotContains(t, got, root)
}
