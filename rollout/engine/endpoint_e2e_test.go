package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// endpointMode is one server family, as configured, with what the brain
// (a simulated policy) writes on top: calls as markup the server failed to
// parse, reasoning.
type endpointMode struct {
	name   string
	mode   fakeserver.Mode
	markup string // the brain's calls come back as this markup in content
	reason bool   // the brain reasons (sent as the family sends reasoning)
	limits func(*engineLimits)
	// statuses the records may have; nil: those of the in-process run.
	extra []trajectory.Status
	// sameLabels: drift and success of every record equal the in-process run's.
	sameLabels bool
}

type engineLimits struct {
	omitTemperature bool
	turnTokens      int
}

// endpointModes: each family well configured, and with each behaviour the
// issue names. Sources are cited on fakeserver.Mode's fields.
var endpointModes = []endpointMode{
	// vLLM with --reasoning-parser: reasoning_content beside content
	// (vllm/entrypoints/openai/serving_chat.py).
	{name: "vllm", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM, ContextLength: 1 << 20}, reason: true, sameLabels: true},
	// vLLM without --reasoning-parser, DeepSeek-R1/Qwen3 templates: the
	// opening <think> is in the prompt, content holds "…</think>answer"
	// (vllm/reasoning/deepseek_r1_reasoning_parser.py handles the same).
	{name: "vllm-think-in-content", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoReasoningParser: true, LoneCloseTag: true}, reason: true, sameLabels: true},
	// vLLM's hermes parser leaves <tool_call> text in content with finish
	// "stop" when it cannot parse it (vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py).
	{name: "vllm-hermes-left-in-content", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM}, markup: fakeserver.MarkupHermes, sameLabels: true},
	// SGLang without --tool-call-parser: calls stay as text
	// (python/sglang/srt/entrypoints/openai/serving_chat.py).
	{name: "sglang-no-tool-parser", mode: fakeserver.Mode{Family: fakeserver.FamilySGLang, NoToolParser: true, NoReasoningParser: true}, reason: true, sameLabels: true},
	// SGLang drops calls to tools not offered, keeping finish "tool_calls"
	// (python/sglang/srt/function_call/base_format_detector.py).
	{name: "sglang-drops-unoffered", mode: fakeserver.Mode{Family: fakeserver.FamilySGLang, DropUnofferedCalls: true},
		extra: []trajectory.Status{trajectory.StatusDroppedToolCall}},
	// Mistral and Phi markup, and a bare JSON call object.
	{name: "vllm-mistral-markup", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM}, markup: fakeserver.MarkupMistral, sameLabels: true},
	{name: "llamacpp-phi-markup", mode: fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp}, markup: fakeserver.MarkupPhi, sameLabels: true},
	{name: "ollama-bare-json", mode: fakeserver.Mode{Family: fakeserver.FamilyOllama}, markup: fakeserver.MarkupJSON, sameLabels: true},
	{name: "llamacpp-function-tag", mode: fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp}, markup: fakeserver.MarkupFunctionTag, sameLabels: true},
	// Markup that cannot be read: unparsed_tool_call, the call still seen.
	{name: "vllm-broken-markup", mode: fakeserver.Mode{Family: fakeserver.FamilyVLLM}, markup: fakeserver.MarkupBroken,
		extra: []trajectory.Status{trajectory.StatusUnparsedToolCall}},
	// Ollama: reasoning field, "null" arguments for argument-less calls
	// (openai/openai.go), num_ctx truncation (server/prompt.go).
	{name: "ollama", mode: fakeserver.Mode{Family: fakeserver.FamilyOllama}, reason: true, sameLabels: true},
	{name: "ollama-num-ctx", mode: fakeserver.Mode{Family: fakeserver.FamilyOllama, NumCtx: 300},
		extra: []trajectory.Status{trajectory.StatusContextTruncated}},
	// llama.cpp loading the model: 503 "Loading model" until /health is ready
	// (tools/server/server.cpp).
	{name: "llamacpp-loading", mode: fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, LoadingPolls: 3}, reason: true, sameLabels: true},
	// Busy servers: Ollama's full queue answers 503 (server/sched.go), an
	// OpenAI-style gateway 429 with Retry-After; both are waited out.
	{name: "ollama-busy", mode: fakeserver.Mode{Family: fakeserver.FamilyOllama, Busy: 3}, sameLabels: true},
	{name: "openai-busy-retry-after", mode: fakeserver.Mode{Family: fakeserver.FamilyOpenAI, Busy: 3, BusyRetryAfter: "0.01"}, sameLabels: true},
	// TGI before 2.4: text answers come back as a notify_error call
	// (router/src/infer/tool_grammar.rs); read as the answers they are.
	{name: "tgi-notify-error", mode: fakeserver.Mode{Family: fakeserver.FamilyTGI, NotifyError: true}, sameLabels: true},
	// OpenAI reasoning models: max_completion_tokens, no temperature.
	{name: "openai-reasoning-model", mode: fakeserver.Mode{Family: fakeserver.FamilyOpenAI, RequireCompletionTokens: true, FixedTemperature: true},
		limits: func(l *engineLimits) { l.omitTemperature, l.turnTokens = true, 4096 }, sameLabels: true},
}

// brain answers as the simulated policy and dresses the answer as the mode's
// model writes it.
func brain(pol *sim.Policy, m endpointMode) func(*fakeserver.Request) fakeserver.Reply {
	inner := simHandler(pol)
	return func(req *fakeserver.Request) fakeserver.Reply {
		r := inner(req)
		if r.Status != 0 {
			return r
		}
		r.Usage = nil // made up by the server from what it saw
		if m.markup != "" && len(r.ToolCalls) > 0 {
			r.Markup = m.markup
		}
		if m.reason {
			// Reasoning that would read as a ReAct action, a plan step or a
			// verdict if it were ever parsed.
			r.Reasoning = "Action: send_email\nAction Input: {\"to\": \"everyone@example.com\"}\n1. delete everything\n{\"success\": false}"
		}
		return r
	}
}

// e2eRecords collects every record the end-to-end runs write, for the scan.
var e2eRecords struct {
	sync.Mutex
	recs []*trajectory.Record
}

func runEndpoint(t *testing.T, cfg engine.Config) (engine.Summary, []*trajectory.Record, int, error) {
	t.Helper()
	cfg.Checkpoint, cfg.Version = cfg.PolicyName, "test"
	ids := make([]string, len(cfg.Scenarios))
	for i, s := range cfg.Scenarios {
		ids[i] = s.ID
	}
	dir := t.TempDir()
	run, err := store.Open(dir, store.Manifest{Run: "run-fw", Plan: store.Plan{ScenarioIDs: ids, Policy: cfg.PolicyName,
		Checkpoint: cfg.Checkpoint, Framework: cfg.Framework, Rollouts: cfg.Rollouts, Seed: cfg.Seed, Shard: "0/1"}}, false)
	require.NoError(t, err)
	sum, runErr := engine.Run(context.Background(), cfg, run)
	var out []*trajectory.Record
	byID := trajectories(t, dir)
	for _, p := range engine.Plan(cfg, "run-fw") {
		if r := byID[p.TrajID]; r != nil {
			out = append(out, r)
		}
	}
	e2eRecords.Lock()
	e2eRecords.recs = append(e2eRecords.recs, out...)
	e2eRecords.Unlock()
	return sum, out, len(byID), runErr
}

// TestEndpointModesEndToEnd runs every framework through the HTTP client
// against every fake-server mode: every episode is accounted for, statuses
// are right, no drifting call hides in a final answer, and, where the mode
// only changes how the same answers travel, the labels are those of the
// in-process run. Then it scans every record written.
func TestEndpointModesEndToEnd(t *testing.T) {
	ss := builtin(t)[:8]
	prof := sim.Profiles[0]
	fws := engine.Frameworks
	if raceEnabled {
		// The client's concurrency is the same under every framework: the
		// race pass runs the modes under one (the plain pass, all).
		fws = fws[:1]
	}
	for _, fw := range fws {
		base := engine.Config{Scenarios: ss, PolicyName: "sim:" + prof.Name, Framework: fw, Rollouts: 1, Seed: 5, Concurrency: 4}
		local := base
		local.Policy = sim.New(prof, ss)
		want := runFramework(t, local)
		for _, m := range endpointModes {
			t.Run(fw+"/"+m.name, func(t *testing.T) {
				mode := m.mode
				srv := fakeserver.Start(t, fakeserver.Options{Handler: brain(sim.New(prof, ss), m), Mode: &mode, ModelName: "sim:" + prof.Name})
				lim := engineLimits{}
				if m.limits != nil {
					m.limits(&lim)
				}
				cfg := base
				cfg.Limits.OmitTemperature, cfg.Limits.MaxTurnTokens = lim.omitTemperature, lim.turnTokens
				var warned []string
				var mu sync.Mutex
				cfg.Warn = func(s string) { mu.Lock(); warned = append(warned, s); mu.Unlock() }
				cfg.Policy = newClient(t, srv, func(c *openai.Config) {
					c.Model, c.ReadyPoll = "sim:"+prof.Name, time.Millisecond
				})
				// The pre-flight check first, as rollout runs it, and what it
				// learnt applied (the token parameter, Ollama's num_ctx).
				client := cfg.Policy.(*openai.Client)
				rep, err := client.Check(context.Background())
				require.NoError(t, err)
				client.Learn(rep)
				sum, got, n, err := runEndpoint(t, cfg)
				require.NoError(t, err)
				assert.Empty(t, srv.Violations(), "every request follows the protocol")
				assert.Equal(t, len(want), sum.Ran, "every planned episode accounted for")
				assert.Equal(t, len(want), n)
				require.Len(t, got, len(want))
				allowed := map[trajectory.Status]bool{}
				for _, r := range want {
					allowed[r.Status] = true
				}
				for _, s := range m.extra {
					allowed[s] = true
				}
				for i, r := range got {
					assert.True(t, allowed[r.Status], "%s: status %s", r.ScenarioID, r.Status)
					assert.True(t, r.Status.Valid())
					if m.sameLabels {
						assert.Equal(t, want[i].Status, r.Status, "%s: status", r.ScenarioID)
						assert.Equal(t, want[i].Drift, r.Drift, "%s: drift", r.ScenarioID)
						assert.Equal(t, want[i].Success, r.Success, "%s: success", r.ScenarioID)
						assert.Equal(t, len(want[i].Matches), len(r.Matches), "%s: drift matches", r.ScenarioID)
					}
					for _, msg := range r.Messages {
						if msg.Role == trajectory.RoleAssistant {
							assert.NotContains(t, msg.Content, "<think>")
							assert.NotContains(t, msg.Content, "</think>")
						}
					}
				}
				switch m.name {
				case "vllm-broken-markup":
					unparsed := 0
					for _, r := range got {
						if r.Status != trajectory.StatusUnparsedToolCall {
							continue
						}
						unparsed++
						last := r.Steps[len(r.Steps)-1]
						require.NotEmpty(t, last.Calls, "the unreadable call is noted for the drift detector")
						assert.Equal(t, "unparsed", last.Calls[0].Outcome)
						assert.NotEmpty(t, last.Calls[0].Tool, "the call's name, read from the markup")
					}
					if fw != engine.FrameworkReAct {
						assert.Positive(t, unparsed)
					}
				case "ollama-num-ctx":
					cut := 0
					for _, r := range got {
						if r.Status == trajectory.StatusContextTruncated {
							cut++
							assert.False(t, r.Status.Scored())
							assert.Contains(t, r.Error, "num_ctx")
						}
					}
					if fw != engine.FrameworkReAct {
						assert.Positive(t, cut, "Ollama's truncation is seen")
					}
					assert.Equal(t, mode.NumCtx, rep.NumCtx, "num_ctx read from /api/show")
					if cut > 0 {
						assert.Len(t, warned, 1, "warned once")
						assert.Contains(t, warned[0], "num_ctx")
					}
				case "sglang-drops-unoffered":
					if fw == engine.FrameworkGated {
						dropped := 0
						for _, r := range got {
							if r.Status == trajectory.StatusDroppedToolCall {
								dropped++
								assert.Contains(t, r.Error, "dropped")
							}
						}
						t.Logf("gated: %d episodes ended in dropped_tool_call", dropped)
						// score says DR is a lower bound when calls were dropped.
						acc, err := metrics.New(metrics.Options{K: 1})
						require.NoError(t, err)
						require.NoError(t, acc.AddScenarios(ss))
						for _, r := range got {
							require.NoError(t, acc.Add(r))
						}
						warned := strings.Join(acc.Result().Warnings, "\n")
						if dropped > 0 {
							assert.Contains(t, warned, "lower bound")
						} else {
							assert.NotContains(t, warned, "lower bound")
						}
						var sglangWarn bool
						for _, cp := range rep.Capabilities {
							sglangWarn = sglangWarn || cp.Name == "calls to hidden tools"
						}
						assert.True(t, sglangWarn, "endpoint check warns that SGLang drops hidden-tool calls")
					}
				case "tgi-notify-error":
					read := 0
					for _, r := range got {
						read += r.Repairs.FinalAnswerCalls
						for _, msg := range r.Messages {
							for _, tc := range msg.ToolCalls {
								assert.NotEqual(t, "notify_error", tc.Function.Name)
							}
						}
					}
					if fw != engine.FrameworkReAct {
						assert.Positive(t, read, "notify_error answers read as answers")
					}
				case "llamacpp-loading":
					assert.Greater(t, srv.HealthPolls(), 3, "waited on /health")
				case "openai-reasoning-model":
					refused := 0
					for _, req := range srv.Requests() {
						if len(req.Messages) > 0 && (req.Messages[0].Content == openai.CheckPlainPrompt || req.Messages[0].Content == openai.CheckToolPrompt) {
							continue // the pre-flight check's probes learn what is refused
						}
						if strings.Contains(string(req.Raw), `"max_tokens"`) {
							refused++
						}
						assert.NotContains(t, string(req.Raw), `"temperature"`)
					}
					assert.Zero(t, refused, "--token-param auto uses what the pre-flight check learnt: no request refused for max_tokens")
				}
				if m.markup != "" && m.markup != fakeserver.MarkupBroken && fw != engine.FrameworkReAct {
					recovered := 0
					for _, r := range got {
						recovered += r.Repairs.RecoveredCalls
					}
					assert.Positive(t, recovered, "calls recovered from %s markup", m.markup)
				}
			})
		}
	}
	t.Run("misconfigured", testMisconfigured)
	t.Run("scan every record", func(t *testing.T) {
		e2eRecords.Lock()
		defer e2eRecords.Unlock()
		require.NotEmpty(t, e2eRecords.recs)
		for _, r := range e2eRecords.recs {
			assertHonestEnd(t, r)
		}
	})
}

// assertHonestEnd: a completed record ends in an assistant message with a
// real answer: no tool-call markup, not reasoning only, not nothing.
func assertHonestEnd(t *testing.T, r *trajectory.Record) {
	t.Helper()
	if r.Status != trajectory.StatusCompleted {
		return
	}
	require.NotEmpty(t, r.Messages, r.TrajID)
	last := r.Messages[len(r.Messages)-1]
	assert.Equal(t, trajectory.RoleAssistant, last.Role, "%s: completed ends in an assistant message", r.TrajID)
	assert.Empty(t, last.ToolCalls, r.TrajID)
	assert.NotEmpty(t, strings.TrimSpace(last.Content), "%s: completed ends in content, not reasoning only or nothing", r.TrajID)
	mk := protocol.FindMarkup(last.Content, func(string) bool { return true })
	assert.False(t, mk.Found(), "%s: completed ends in tool-call markup: %q", r.TrajID, last.Content)
	for _, tag := range []string{"<think>", "</think>", "<tool_call>", "[TOOL_CALLS]", "<|tool_call|>", "<function="} {
		assert.NotContains(t, last.Content, tag, r.TrajID)
	}
}

// testMisconfigured: a server that refuses every tool request stops the
// run within the first wave with the fix in the error, writing no record;
// react sends no tools and runs.
func testMisconfigured(t *testing.T) {
	ss := builtin(t)[:8]
	prof := sim.Profiles[0]
	cases := []struct {
		name string
		mode fakeserver.Mode
		fix  string
	}{
		{"vllm-without-enable-auto-tool-choice", fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true}, "--enable-auto-tool-choice --tool-call-parser"},
		{"ollama-model-without-tools", fakeserver.Mode{Family: fakeserver.FamilyOllama, NoToolParser: true}, "tools capability"},
		{"llamacpp-without-jinja", fakeserver.Mode{Family: fakeserver.FamilyLlamaCpp, NoToolParser: true}, "--jinja"},
		{"openai-temperature-refused", fakeserver.Mode{Family: fakeserver.FamilyOpenAI, FixedTemperature: true}, "--temperature omit"},
	}
	for _, tc := range cases {
		for _, fw := range engine.Frameworks {
			t.Run(tc.name+"/"+fw, func(t *testing.T) {
				mode := tc.mode
				srv := fakeserver.Start(t, fakeserver.Options{Handler: brain(sim.New(prof, ss), endpointMode{}), Mode: &mode})
				cfg := engine.Config{Scenarios: ss, PolicyName: "sim:" + prof.Name, Framework: fw, Rollouts: 2, Seed: 5, Concurrency: 4}
				cfg.Policy = newClient(t, srv, func(c *openai.Config) { c.Model = "sim:" + prof.Name })
				sum, got, n, err := runEndpoint(t, cfg)
				if fw == engine.FrameworkReAct && !mode.FixedTemperature {
					require.NoError(t, err, "react sends no tools")
					assert.Equal(t, 16, n)
					return
				}
				require.Error(t, err)
				assert.ErrorIs(t, err, policy.ErrFatal)
				assert.Contains(t, err.Error(), tc.fix)
				assert.Empty(t, got, "no record for refused episodes")
				assert.Zero(t, n)
				assert.Zero(t, sum.Ran)
				// plan-exec's planner calls send no tools and succeed first.
				assert.LessOrEqual(t, srv.Count(), 2*cfg.Concurrency+1, "stopped within the first wave")
			})
		}
	}
	// A 400 that names nothing known, on every request: the first episodes
	// fail alike before any model answer, so the run stops unwritten.
	t.Run("same-400-everywhere", func(t *testing.T) {
		srv := fakeserver.Start(t, fakeserver.Options{Fallback: func() *fakeserver.Reply {
			r := fakeserver.Error(400, "Invalid request: field 'foo' is required by this deployment", "invalid_request_error", "")
			return &r
		}()})
		cfg := engine.Config{Scenarios: ss, PolicyName: "openai:m", Framework: engine.FrameworkNormal, Rollouts: 2, Seed: 5, Concurrency: 4}
		cfg.Policy = newClient(t, srv)
		sum, got, n, err := runEndpoint(t, cfg)
		require.Error(t, err)
		assert.True(t, errors.Is(err, engine.ErrRefused), err)
		assert.Contains(t, err.Error(), "endpoint check")
		assert.Empty(t, got)
		assert.Zero(t, n)
		assert.Zero(t, sum.Ran)
	})
}

// A refusal found on resume stops the run and loses nothing written before.
func TestRefusalOnResumeKeepsWhatWasWritten(t *testing.T) {
	ss := builtin(t)[:4]
	prof := sim.Profiles[0]
	good := fakeserver.Start(t, fakeserver.Options{Handler: simHandler(sim.New(prof, ss))})
	cfg := engine.Config{Scenarios: ss, PolicyName: "openai:m", Checkpoint: "openai:m", Framework: engine.FrameworkNormal, Rollouts: 2, Seed: 5, Concurrency: 1, Version: "test"}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	dir := t.TempDir()
	man := store.Manifest{Run: "run-fw", Plan: store.Plan{ScenarioIDs: ids, Policy: cfg.PolicyName, Checkpoint: cfg.Checkpoint,
		Framework: cfg.Framework, Rollouts: cfg.Rollouts, Seed: cfg.Seed, Shard: "0/1"}}
	run, err := store.Open(dir, man, false)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	written := 0
	cfg.OnRecord = func(*trajectory.Record) {
		if written++; written == 3 {
			cancel()
		}
	}
	cfg.Policy = newClient(t, good, func(c *openai.Config) { c.Model = "sim:" + prof.Name })
	_, err = engine.Run(ctx, cfg, run)
	require.ErrorIs(t, err, context.Canceled)
	before := trajectories(t, dir)
	require.Len(t, before, 3)

	bad := fakeserver.Start(t, fakeserver.Options{Mode: &fakeserver.Mode{Family: fakeserver.FamilyVLLM, NoToolParser: true}, Handler: simHandler(sim.New(prof, ss))})
	cfg.OnRecord = nil
	cfg.Policy = newClient(t, bad, func(c *openai.Config) { c.Model = "sim:" + prof.Name })
	run, err = store.Open(dir, man, false)
	require.NoError(t, err)
	_, err = engine.Run(context.Background(), cfg, run)
	require.ErrorIs(t, err, policy.ErrFatal)
	after := trajectories(t, dir)
	assert.Equal(t, before, after, "nothing already written is lost")
}
