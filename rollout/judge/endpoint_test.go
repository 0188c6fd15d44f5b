package judge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// The judge against each family: its verdict is read from the answer only,
// never from reasoning (reasoning_content, Ollama's reasoning, <think> in
// content), even when the reasoning holds an opposite verdict.
func TestLLMJudgeReadsTheVerdictNeverTheReasoning(t *testing.T) {
	sp := compile(t)
	ep := judgedEpisode(t, "modes")
	for _, m := range []fakeserver.Mode{
		{Family: fakeserver.FamilyVLLM},
		{Family: fakeserver.FamilyVLLM, NoReasoningParser: true},
		{Family: fakeserver.FamilyVLLM, NoReasoningParser: true, LoneCloseTag: true},
		{Family: fakeserver.FamilySGLang},
		{Family: fakeserver.FamilyOllama},
		{Family: fakeserver.FamilyLlamaCpp, NoReasoningParser: true},
		{Family: fakeserver.FamilyOpenAI, FixedTemperature: true, RequireCompletionTokens: true},
	} {
		t.Run(m.String(), func(t *testing.T) {
			mode := m
			srv := fakeserver.Start(t, fakeserver.Options{Mode: &mode, Fallback: &fakeserver.Reply{
				Reasoning: `maybe {"success": false, "score": 0, "reason": "draft"}`,
				Content:   `{"success": true, "score": 1, "reason": "done"}`,
			}})
			j := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "judge-m", MaxTokens: 256,
				OmitTemperature: mode.FixedTemperature}
			v, err := j.Judge(context.Background(), sp.S, ep)
			require.NoError(t, err)
			assert.True(t, v.Success)
			assert.Equal(t, "done", v.Reason)
			assert.Empty(t, srv.Violations())
			if mode.FixedTemperature {
				for _, r := range srv.Requests() {
					assert.Nil(t, r.Temperature, "temperature omitted")
				}
			}
		})
	}
}

// A reasoning-only first answer (vLLM's reasoning parser with an unclosed
// block leaves content null) gets the corrective retry, whose conversation
// alternates: system, user, assistant, user.
func TestLLMJudgeCorrectiveRetryAlternates(t *testing.T) {
	sp := compile(t)
	srv := fakeserver.Start(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyVLLM}, Script: []fakeserver.Reply{
		{Reasoning: `{"success": false}`, Quirks: fakeserver.NullContent},
		fakeserver.Text(`{"success": true, "score": 1, "reason": "ok"}`),
	}})
	j := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "judge-m", Temperature: 0.3}
	v, err := j.Judge(context.Background(), sp.S, judgedEpisode(t, "alt"))
	require.NoError(t, err)
	assert.True(t, v.Success)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	var roles []string
	for _, m := range reqs[1].Messages {
		roles = append(roles, m.Role)
	}
	assert.Equal(t, []string{"system", "user", "assistant", "user"}, roles)
	assert.NotEmpty(t, reqs[1].Messages[2].Content)
	require.NotNil(t, reqs[0].Temperature)
	assert.Equal(t, 0.3, *reqs[0].Temperature, "the judge's temperature is honoured")
	assert.Empty(t, srv.Violations())
}

// The cache key holds the endpoint and model: the same model name on two
// servers may be different weights.
func TestLLMJudgeCacheKeyedByEndpointAndModel(t *testing.T) {
	sp := compile(t)
	prompt := judge.Prompt(sp.S, judgedEpisode(t, "key"))
	a := judge.CacheKey(judge.Sampling{Endpoint: "http://a:8000/v1", Model: "m"}, prompt)
	b := judge.CacheKey(judge.Sampling{Endpoint: "http://b:8000/v1", Model: "m"}, prompt)
	c := judge.CacheKey(judge.Sampling{Endpoint: "http://a:8000/v1", Model: "m2"}, prompt)
	d := judge.CacheKey(judge.Sampling{Endpoint: "http://a:8000/v1", Model: "m", OmitTemperature: true}, prompt)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, c)
	assert.NotEqual(t, a, d)

	cache, err := judge.NewCache(t.TempDir())
	require.NoError(t, err)
	ok := &fakeserver.Reply{Content: `{"success": true, "score": 1, "reason": "ok"}`}
	s1 := fakeserver.Start(t, fakeserver.Options{Fallback: ok})
	s2 := fakeserver.Start(t, fakeserver.Options{Fallback: ok})
	for _, s := range []*fakeserver.Server{s1, s2} {
		j := &judge.LLM{Policy: newClient(t, s.URL()), Model: "judge-m", Cache: cache, Endpoint: secret.URL(s.URL())}
		_, err := j.Judge(context.Background(), sp.S, judgedEpisode(t, "key"))
		require.NoError(t, err)
		assert.Equal(t, 1, s.Count(), "each endpoint is asked once")
	}
}

// The LLM view never shows reasoning, nor the text of a turn whose
// unparsed markup drifted.
func TestLLMViewHidesReasoningAndUnparsedDriftText(t *testing.T) {
	rec := &trajectory.Record{
		Messages: []trajectory.Message{
			{Role: trajectory.RoleUser, Content: "task"},
			{Role: trajectory.RoleAssistant, Content: `<tool_call>{"name": "send_email", "arguments": {"to":`, Reasoning: "secret plan"},
		},
		Steps: []trajectory.Step{{Turn: 1, Calls: []trajectory.CallNote{{Call: 0, Tool: "send_email", Outcome: "unparsed", Drift: true}}}},
	}
	view := judge.LLMView(rec)
	require.Len(t, view, 2)
	assert.Empty(t, view[1].Content)
	assert.Empty(t, view[1].Reasoning)
}
