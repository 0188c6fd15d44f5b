package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
)

// checkServer answers the endpoint check's probes as a model that follows
// them, dressed by the mode.
func checkServer(t *testing.T, m fakeserver.Mode) *fakeserver.Server {
	t.Helper()
	return fakeserver.Start(t, fakeserver.Options{Mode: &m, ModelName: "m", Handler: func(req *fakeserver.Request) fakeserver.Reply {
		if len(req.Tools) > 0 {
			return fakeserver.ToolCalls(fakeserver.Call{Name: openai.CheckTool, Arguments: `{"city":"Paris"}`})
		}
		return fakeserver.Text("ready")
	}})
}

func TestEndpointCheckCommand(t *testing.T) {
	cases := []struct {
		name  string
		mode  fakeserver.Mode
		code  int
		tools string
		fix   string
	}{
		{"vllm", fakeserver.Mode{Family: fakeserver.FamilyVLLM, ContextLength: 32768}, 0, "structured", ""},
		{"vllm-no-tool-parser", fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true}, 1, "refused", "--enable-auto-tool-choice --tool-call-parser"},
		{"sglang-no-tool-parser", fakeserver.Mode{Family: fakeserver.FamilySGLang, NoToolParser: true}, 1, "markup_in_content", "--tool-call-parser"},
		{"ollama-no-tools", fakeserver.Mode{Family: fakeserver.FamilyOllama, NoToolParser: true}, 1, "refused", "tools capability"},
		{"llamacpp-no-jinja", fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, NoToolParser: true}, 1, "refused", "--jinja"},
		{"openai-reasoning", fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true}, 0, "structured", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := checkServer(t, tc.mode)
			code, stdout, stderr := runScenarios(t, "endpoint", "check", "--base-url", srv.URL(), "--model", "m", "--json")
			assert.Equal(t, tc.code, code, stderr)
			var rep openai.Report
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
			assert.Equal(t, tc.tools, rep.ToolCalls)
			assert.Equal(t, tc.code == 0, rep.OK)
			code, text, _ := runScenarios(t, "endpoint", "check", "--base-url", srv.URL(), "--model", "m")
			assert.Equal(t, tc.code, code)
			assert.Contains(t, text, "tool calls")
			if tc.fix != "" {
				assert.Contains(t, text, tc.fix)
			}
		})
	}
}

// rollout against a misconfigured server exits non-zero before writing any
// record: the preflight check refuses it, and with the check skipped the
// first wave's refusals stop the run, again with no record.
func TestRolloutAgainstMisconfiguredServerWritesNothing(t *testing.T) {
	for _, skip := range []bool{false, true} {
		srv := checkServer(t, fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true})
		out := filepath.Join(t.TempDir(), "run")
		args := []string{"rollout", "--policy", "openai:m", "--base-url", srv.URL(), "--out", out, "--rollouts", "2", "--limit", "3", "--max-retries", "0"}
		if skip {
			args = append(args, "--skip-endpoint-check")
		}
		code, _, stderr := runScenarios(t, args...)
		assert.NotZero(t, code)
		assert.Contains(t, stderr, "--enable-auto-tool-choice")
		files, _ := filepath.Glob(filepath.Join(out, "trajectories", "*.jsonl"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			assert.Empty(t, strings.TrimSpace(string(b)), "no record for refused episodes (skip=%v)", skip)
		}
	}
}

// A credentialed base URL never reaches the output (manifests store secret.URL of it).
func TestRolloutErrorsRedactTheBaseURL(t *testing.T) {
	srv := checkServer(t, fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true})
	cred := strings.Replace(srv.URL(), "http://", "http://user:hunter2@", 1) + "?token=sk-secret"
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runScenarios(t, "rollout", "--policy", "openai:m", "--base-url", cred, "--out", out, "--limit", "1", "--rollouts", "1")
	assert.NotZero(t, code)
	assert.NotContains(t, stderr, "hunter2")
	assert.NotContains(t, stderr, "sk-secret")
}
