package main

import (
	"encoding/json"
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
	// every row rendered through its layout's real chat templates
	code, stdout, _ := runScenarios(t, "inspect", "--trainer", "trl", pairs)
	assert.Contains(t, stdout, "chat templates of its layout: Qwen2.5, Qwen3, Llama-3.1, Llama-3.2, Phi-3.5")
	mistral := filepath.Join(t.TempDir(), "pairs-mistral")
	code, _, stderr = runScenarios(t, "pairs", run, "--out", mistral, "--pair-types", "step,trajectory", "--format", "parquet", "--template-compat", "mistral")
	require.Equal(t, 0, code, stderr)
	code, stdout, _ = runScenarios(t, "inspect", "--trainer", "trl", mistral)
	assert.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "Mistral-7B-v0.3, Mistral-Nemo")
	// default rows under a card that claims the Mistral layout: the system
	// message goes to the last user turn, and the prefix property fails
	claimMistral(t, filepath.Join(pairs, "manifest.json"))
	code, stdout, _ = runScenarios(t, "inspect", "--trainer", "trl", pairs)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "Mistral-7B-v0.3: the prompt rendered with add_generation_prompt is not a prefix of prompt + completion")
	restoreDefault(t, filepath.Join(pairs, "manifest.json"))

	code, stdout, _ = runScenarios(t, "inspect", "--trainer", "openrlhf", pairs)
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

func setCompat(t *testing.T, manifest, compat string) {
	t.Helper()
	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	settings, _ := m["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
		m["settings"] = settings
	}
	if compat == "" {
		delete(settings, "template_compat")
	} else {
		settings["template_compat"] = compat
	}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, b, 0o644))
}

func claimMistral(t *testing.T, manifest string)   { setCompat(t, manifest, "mistral") }
func restoreDefault(t *testing.T, manifest string) { setCompat(t, manifest, "") }

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
	got := commandLineIn(out)
	assert.Equal(t, "antidrift export ../../runs/base --table kto --out . --provisions=../../w.json --seed 3", got)
	assert.NotContains(t, got, root)

	// a folder named as the command (a checkout's rewards/) leaves the
	// command's name as typed
	t.Chdir(root)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "rewards"), 0o755))
	os.Args = []string{"antidrift", "rewards", "runs/base", "--out", out}
	assert.Equal(t, "antidrift rewards ../../runs/base --out .", commandLineIn(out))
}
