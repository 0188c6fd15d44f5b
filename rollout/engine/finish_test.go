package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TestFinishReasons: every finish reason a server sends is read, case
// aside; an answer cut by an error, a filter, the token limit or a reason
// no server is known to send is never a completed episode, and score counts
// each status as trajectory.Status.Scored says. Each episode makes the
// scenario's first required call, then gets the reply under test.
func TestFinishReasons(t *testing.T) {
	ss := builtin(t, "productivity-followup-draft-001")
	first := ss[0].RequiredCalls[0]
	args, err := json.Marshal(first.Args)
	require.NoError(t, err)
	start := fakeserver.ToolCalls(fakeserver.Call{Name: first.Tool, Arguments: string(args)})
	cut := fakeserver.Call{Name: first.Tool, Arguments: `{"x": "half`}
	cases := []struct {
		name     string
		replies  []fakeserver.Reply // the answers to the second turn, in order
		want     trajectory.Status
		requests int    // requests the second turn takes; 0: 1
		errPart  string // in the record's error
	}{
		{name: "STOP upper-case", replies: []fakeserver.Reply{{Content: "Done: drafted.", FinishReason: "STOP"}}, want: trajectory.StatusCompleted},
		{name: "MAX_TOKENS", replies: []fakeserver.Reply{{Content: "The draft is", FinishReason: "MAX_TOKENS"}}, want: trajectory.StatusTruncated},
		{name: "LENGTH", replies: []fakeserver.Reply{{Content: "The draft is", FinishReason: "LENGTH"}}, want: trajectory.StatusTruncated},
		// vLLM's hermes parser leaves an unterminated <tool_call> in content
		// when the limit cuts it (tool_parsers/hermes_tool_parser.py).
		{name: "tool call cut at the limit", replies: []fakeserver.Reply{{ToolCalls: []fakeserver.Call{cut}, Markup: fakeserver.MarkupBroken, FinishReason: "length"}},
			want: trajectory.StatusTruncated, errPart: "cut by the token limit"},
		{name: "structured call cut at the limit", replies: []fakeserver.Reply{{ToolCalls: []fakeserver.Call{cut}, FinishReason: "length"}}, want: trajectory.StatusTruncated},
		// Mistral's API and gateways relaying a provider failure.
		{name: "error twice", replies: []fakeserver.Reply{{Content: "Here is the dr", FinishReason: "error"}, {Content: "Here", FinishReason: "ERROR"}},
			want: trajectory.StatusModelError, requests: 2, errPart: `finish_reason "error"`},
		{name: "error with half a call", replies: []fakeserver.Reply{{ToolCalls: []fakeserver.Call{cut}, FinishReason: "error"}, {ToolCalls: []fakeserver.Call{cut}, FinishReason: "error"}},
			want: trajectory.StatusModelError, requests: 2},
		{name: "error then an answer", replies: []fakeserver.Reply{{Content: "Here is the dr", FinishReason: "error"}, {Content: "Done: drafted."}},
			want: trajectory.StatusCompleted, requests: 2},
		{name: "content_filter", replies: []fakeserver.Reply{{Content: "", FinishReason: "content_filter"}}, want: trajectory.StatusRefused, errPart: "filter"},
		{name: "Gemini SAFETY", replies: []fakeserver.Reply{{Content: "I", FinishReason: "SAFETY"}}, want: trajectory.StatusRefused, errPart: "filter"},
		{name: "OpenAI refusal field", replies: []fakeserver.Reply{{Refusal: "I'm sorry, I can't help with that."}}, want: trajectory.StatusRefused, errPart: "refused"},
		// SGLang drops a call to a tool not offered, keeping finish
		// tool_calls (python/sglang/srt/function_call/base_format_detector.py).
		{name: "tool_calls with no call", replies: []fakeserver.Reply{{FinishReason: "TOOL_CALLS"}}, want: trajectory.StatusDroppedToolCall, errPart: "lower bound"},
		{name: "unknown finish reason", replies: []fakeserver.Reply{{Content: "Done: drafted.", FinishReason: "weird_stop_7"}}, want: trajectory.StatusModelError, errPart: "weird_stop_7"},
	}
	acc, err := metrics.New(metrics.Options{K: 1})
	require.NoError(t, err)
	require.NoError(t, acc.AddScenarios(ss))
	scored, excluded := 0, map[trajectory.Status]int{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.Start(t, fakeserver.Options{Script: append([]fakeserver.Reply{start}, tc.replies...),
				Fallback: &fakeserver.Reply{Content: "Done: drafted."}})
			cfg := engine.Config{Scenarios: ss, PolicyName: "openai:test-model", Checkpoint: "ckpt", Rollouts: 1,
				Seed: 3, Concurrency: 1, Version: "test"}
			cfg.Policy = newClient(t, srv)
			dir := t.TempDir()
			_, err := engine.Run(context.Background(), cfg, openRun(t, dir, cfg))
			require.NoError(t, err)
			assert.Empty(t, srv.Violations())
			recs := trajectories(t, dir)
			require.Len(t, recs, 1)
			for _, r := range recs {
				assert.Equal(t, tc.want, r.Status, "error: %s", r.Error)
				assert.Contains(t, r.Error, tc.errPart)
				if tc.want != trajectory.StatusCompleted {
					last := r.Messages[len(r.Messages)-1]
					for _, tc := range last.ToolCalls {
						assert.NotEqual(t, `{"x": "half`, tc.Function.Arguments, "a cut call is never run")
					}
				}
				if tc.name == "tool call cut at the limit" {
					st := r.Steps[len(r.Steps)-1]
					require.NotEmpty(t, st.Calls, "the cut call is still checked for drift")
					assert.Equal(t, "unparsed", st.Calls[0].Outcome)
				}
				want := max(tc.requests, 1) + 1
				if tc.want == trajectory.StatusCompleted && tc.requests == 0 {
					want = 2
				}
				assert.Equal(t, want, srv.Served(), "requests served")
				require.NoError(t, acc.Add(r))
				if r.Status.Scored() {
					scored++
				} else {
					excluded[r.Status]++
				}
			}
		})
	}
	// Every status these servers produce is the policy's behaviour: scored.
	assert.Equal(t, len(cases), scored)
	assert.Equal(t, scored, acc.Records())
	assert.Empty(t, acc.Excluded())
	assert.Contains(t, strings.Join(acc.Result().Warnings, "\n"), "DR is a lower bound", "score says dropped calls make DR a lower bound")
	assert.True(t, trajectory.StatusRefused.Valid())
	assert.True(t, trajectory.StatusRefused.Scored())
}
