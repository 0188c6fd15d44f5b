package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rewards/skills"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rowOf(t *testing.T, res skills.Result, cp, task, setting string) skills.Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Checkpoint == cp && r.Task == task && r.Domain == skills.All && r.Setting == setting {
			return r
		}
	}
	t.Fatalf("no row %s %s %s", cp, task, setting)
	return skills.Row{}
}

func TestSelectIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	args := []string{"select", "--task", "tools", "--library", "builtin:filesystem", "--policy", "sim:sft", "--rollouts", "2", "--concurrency", "8", "--json"}
	require.Equal(t, 0, run(append(args, "--out", a)))
	require.Equal(t, 0, run(append(args, "--out", b)))
	ra := readRecords(t, a)
	require.Len(t, ra, 2*516)
	assert.Equal(t, ra, readRecords(t, b))
	// Another plan in the same folder is refused and leaves it as it was.
	assert.Equal(t, 1, run([]string{"select", "--task", "skill", "--library", "builtin:filesystem", "--policy", "sim:sft", "--out", a, "--json"}))
	assert.Len(t, readRecords(t, a), 2*516)
}

// TestSelectSettingsAndFamily runs both tasks with the simulated family:
// the ambiguous, convenience-, broad-action and boundary-sensitive settings fail more
// than the clean baseline, and training lowers the fail rate.
func TestSelectSettingsAndFamily(t *testing.T) {
	var dirs []string
	for _, cp := range []string{"base", "sft", "dpo-1", "dpo-2"} {
		for _, task := range []string{"skill", "tools"} {
			dir := t.TempDir()
			require.Equal(t, 0, run([]string{"select", "--task", task, "--library", "builtin:email", "--policy", "sim:" + cp,
				"--checkpoint", cp, "--out", dir, "--json"}))
			dirs = append(dirs, dir)
		}
	}
	res, _, err := scoreSelection(dirs...)
	require.NoError(t, err)
	for _, cp := range []string{"base", "sft"} {
		clean := rowOf(t, res, cp, "skill", "clean_baseline")
		for _, s := range []skill.Setting{skill.ScopeAmbiguous, skill.LexicalAmbiguous, skill.ActionImplication} {
			assert.Greater(t, float64(rowOf(t, res, cp, "skill", string(s)).FR), float64(clean.FR), "%s task 1 %s vs clean", cp, s)
		}
		clean2 := rowOf(t, res, cp, "tools", "clean_baseline")
		// Broad-action-justified too: several named items pull toward the
		// bulk tool, which is over-privilege (the paper's setting).
		for _, s := range []skill.Setting{skill.ConvenienceSensitive, skill.BroadActionJustified, skill.BoundarySensitive} {
			assert.Greater(t, float64(rowOf(t, res, cp, "tools", string(s)).FR), float64(clean2.FR), "%s task 2 %s vs clean", cp, s)
		}
	}
	for _, task := range []string{"skill", "tools"} {
		prev := 2.0
		for _, cp := range []string{"base", "sft", "dpo-1", "dpo-2"} {
			fr := float64(rowOf(t, res, cp, task, skills.All).FR)
			assert.Less(t, fr, prev, "%s: FR falls along the family (%s)", task, cp)
			prev = fr
		}
	}
}

// TestPipelineMeasuredBelowProduct: the simulation draws the two stages
// independently, so the measured end-to-end rate, which also needs the
// executed calls to be clean, stays at or below EM1 x EM2.
func TestPipelineMeasuredBelowProduct(t *testing.T) {
	var dirs []string
	for _, lib := range skill.BuiltinNames() {
		dir := t.TempDir()
		require.Equal(t, 0, run([]string{"select", "--task", "pipeline", "--library", "builtin:" + lib, "--policy", "sim:base",
			"--out", dir, "--json"}))
		dirs = append(dirs, dir)
	}
	res, _, err := scoreSelection(dirs...)
	require.NoError(t, err)
	require.NotEmpty(t, res.Pipeline)
	p := res.Pipeline[0]
	require.Equal(t, skills.All, p.Domain)
	t.Logf("EM1 %.3f EM2 %.3f EM1xEM2 %.3f measured %.3f [%.3f, %.3f] executed DR %.3f", p.EM1, p.EM2, p.Product, p.Measured, p.MeasuredCI[0], p.MeasuredCI[1], p.ExecutedDR)
	assert.LessOrEqual(t, float64(p.Measured), float64(p.Product))
	assert.Greater(t, float64(p.ExecutedDR), 0.0)
}

func TestSelectOverHTTP(t *testing.T) {
	url := simServer(t, 0)
	in, http := t.TempDir(), t.TempDir()
	base := []string{"select", "--task", "pipeline", "--library", "builtin:ecommerce", "--seed", "4", "--json", "--checkpoint", "dpo-1", "--run", "r"}
	require.Equal(t, 0, run(append(base, "--policy", "sim:dpo-1", "--out", in)))
	require.Equal(t, 0, run(append(base, "--policy", "openai:sim:dpo-1", "--base-url", url, "--out", http)))
	norm := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for id, rec := range m {
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(rec), &v))
			delete(v, "policy")
			delete(v, "usage")
			b, _ := json.Marshal(v)
			out[id] = string(b)
		}
		return out
	}
	assert.Equal(t, norm(readRecords(t, in)), norm(readRecords(t, http)), "the HTTP path labels exactly what the in-process policy does")
}

func TestSelectRejectsBadLibrary(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "lib.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name": "x", "domain": "d", "tools": [], "skills": [], "queries": []}`), 0o644))
	assert.Equal(t, 1, run([]string{"select", "--library", bad, "--policy", "sim:base", "--out", t.TempDir()}))
	assert.Equal(t, 1, run([]string{"select", "--task", "nope", "--policy", "sim:base", "--out", t.TempDir()}))
}

// TestSelectSurvivesSIGKILL kills a real select process mid-run twice,
// reruns the same command, and checks the folder holds exactly the plan.
func TestSelectSurvivesSIGKILL(t *testing.T) {
	bin := antidriftBin(t) // built once per test binary
	url := simServer(t, 10*time.Millisecond)
	dir := t.TempDir()
	args := []string{"select", "--task", "tools", "--library", "builtin:email", "--policy", "openai:sim:base", "--base-url", url,
		"--rollouts", "2", "--concurrency", "6", "--seed", "3", "--out", dir, "--json"}
	// Kill once new answers are on disk (a fixed delay misses them on a
	// loaded machine, where loading the library and the first wave take
	// longer), twice.
	for kill := 0; kill < 2; kill++ {
		before := len(readRecordsLenient(t, dir))
		cmd := exec.Command(bin, args...)
		require.NoError(t, cmd.Start())
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if len(readRecordsLenient(t, dir)) > before {
				break
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
	}
	partial := readRecordsLenient(t, dir)
	out, err := exec.Command(bin, args...).Output()
	require.NoError(t, err, "resume failed: %s", out)
	var sum selectSummary
	require.NoError(t, json.Unmarshal(out, &sum))
	got := readRecords(t, dir)

	ref := t.TempDir()
	refArgs := append([]string(nil), args...)
	refArgs[len(refArgs)-2] = ref
	require.Equal(t, 0, run(refArgs))
	want := readRecords(t, ref)
	assert.Equal(t, sortedIDs(want), sortedIDs(got), "resumed run must hold exactly the planned answers")
	assert.Equal(t, want, got, "resumed records must equal an uninterrupted run's, apart from timings")
	assert.Equal(t, len(partial), sum.Skipped)
	t.Logf("killed twice with %d of %d answers done; resume ran %d", len(partial), len(want), sum.Ran)
	assert.Less(t, len(partial), len(want), "the kill came too late to test anything")
	assert.Greater(t, len(partial), 0, "the kill came too early to test anything")
}

func TestSelectShardsMergeIntoTheWholeRun(t *testing.T) {
	whole, s0, s1 := t.TempDir(), t.TempDir(), t.TempDir()
	base := []string{"select", "--task", "skill", "--library", "builtin:ecommerce", "--policy", "sim:sft", "--rollouts", "2", "--json"}
	require.Equal(t, 0, run(append(base, "--out", whole)))
	require.Equal(t, 0, run(append(base, "--out", s0, "--shard", "0/2")))
	require.Equal(t, 0, run(append(base, "--out", s1, "--shard", "1/2")))
	merged := filepath.Join(t.TempDir(), "merged")
	require.Equal(t, 0, run([]string{"merge", "--out", merged, s0, s1}))
	assert.Equal(t, readRecords(t, whole), readRecords(t, merged))
}
