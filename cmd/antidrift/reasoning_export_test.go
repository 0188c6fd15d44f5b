package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// addReasoning gives every assistant message of a run's records a
// reasoning text, as a reasoning model's records have (issue 10: reasoning
// is kept apart from content in the record).
func addReasoning(t *testing.T, run string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(run, "trajectories", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		in, err := os.ReadFile(f)
		require.NoError(t, err)
		var out strings.Builder
		sc := bufio.NewScanner(strings.NewReader(string(in)))
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var rec trajectory.Record
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
			for i := range rec.Messages {
				if rec.Messages[i].Role == trajectory.RoleAssistant {
					rec.Messages[i].Reasoning = "THOUGHT-" + rec.TrajID
				}
			}
			b, err := json.Marshal(&rec)
			require.NoError(t, err)
			out.Write(b)
			out.WriteByte('\n')
		}
		require.NoError(t, os.WriteFile(f, []byte(out.String()), 0o644))
	}
}

// TestExportsLeaveReasoningOutUnlessAsked: the model's reasoning reaches no
// training row by default, and every table carries it as
// reasoning_content with --include-reasoning.
func TestExportsLeaveReasoningOutUnlessAsked(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	code, _, stderr := runScenarios(t, "rollout", "--policy", "sim:base", "--out", run, "--limit", "10", "--rollouts", "4")
	require.Equal(t, 0, code, stderr)
	addReasoning(t, run)

	for _, include := range []bool{false, true} {
		for _, c := range []struct{ name, cmd string }{
			{"trajectories", "export"}, {"kto", "export"}, {"rewards", "rewards"}, {"pairs", "pairs"},
		} {
			out := filepath.Join(dir, c.name+map[bool]string{false: "-plain", true: "-reasoning"}[include])
			args := []string{c.cmd, run, "--out", out, "--format", "jsonl"}
			if c.cmd == "export" {
				args = append(args, "--table", c.name)
			}
			if include {
				args = append(args, "--include-reasoning")
			}
			code, _, stderr := runScenarios(t, args...)
			require.Equal(t, 0, code, "%v: %s", args, stderr)
			var text strings.Builder
			files, _ := filepath.Glob(filepath.Join(out, "jsonl", "*.jsonl"))
			more, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
			files = append(files, more...)
			require.NotEmpty(t, files, "%v wrote JSONL", args)
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				text.Write(b)
			}
			require.NotEmpty(t, strings.TrimSpace(text.String()), "%v wrote rows", args)
			if include {
				assert.Contains(t, text.String(), `"reasoning_content":"THOUGHT-`, "%v", args)
			} else {
				assert.NotContains(t, text.String(), "THOUGHT-", "%v", args)
			}
		}
	}
}
