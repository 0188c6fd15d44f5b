package judge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestParseVerdict(t *testing.T) {
	ok := func(success bool, score float64, reason string) judge.Verdict {
		return judge.Verdict{Success: success, Score: score, Reason: reason}
	}
	valid := []struct {
		name, in string
		want     judge.Verdict
	}{
		{"strict", `{"success": true, "score": 0.9, "reason": "Draft saved."}`, ok(true, 0.9, "Draft saved.")},
		{"fenced", "```json\n{\"success\": false, \"score\": 0, \"reason\": \"Nothing saved.\"}\n```", ok(false, 0, "Nothing saved.")},
		{"fenced without language", "```\n{\"success\": true, \"score\": 1, \"reason\": \"ok\"}\n```", ok(true, 1, "ok")},
		{"leading prose", "Let me check the rubric. The draft exists.\n{\"success\": true, \"score\": 1, \"reason\": \"ok\"}", ok(true, 1, "ok")},
		{"trailing text", `{"success": true, "score": 0.5, "reason": "half"} I hope this helps! {not json}`, ok(true, 0.5, "half")},
		{"single quotes and Python literals", `{'success': False, 'score': 0.0, 'reason': 'It\'s not saved', 'extra': None}`, ok(false, 0, "It's not saved")},
		{"bare keys and trailing comma", `{success: true, score: 1, reason: "fine",}`, ok(true, 1, "fine")},
		{"empty list kept as written, not null", "My verdict:\n```json\n{'success': True, 'score': 1, 'reason': [],}\n```\nDone.", ok(true, 1, "[]")},
		{"empty object kept, trailing comma, prose", `Here: {"success": false, "score": 0, "reason": {},} that's all`, ok(false, 0, "{}")},
		{"think block with a decoy", `<think>maybe {"success": false} ... no</think>{"success": true, "score": 1, "reason": "r"}`, ok(true, 1, "r")},
		{"nested in another object", `{"verdict": {"success": true, "score": 0.8, "reason": "nested"}}`, ok(true, 0.8, "nested")},
		{"string booleans and numbers", `{"success": "false", "score": "0.25", "reason": "r"}`, ok(false, 0.25, "r")},
		{"score missing", `{"success": true, "reason": "r"}`, ok(true, 1, "r")},
		{"reason missing", `{"success": false, "score": 0}`, ok(false, 0, "")},
		{"escapes", `{"success": true, "score": 1, "reason": "line\nnext \u00e9 \"q\""}`, ok(true, 1, "line\nnext é \"q\"")},
		{"agreeing verdicts: the last counts", `{"success": true, "score": 0.6, "reason": "a"} on reflection {"success": true, "score": 0.9, "reason": "b"}`, ok(true, 0.9, "b")},
		{"braces in prose first", `Using {braces} casually. {"success": false, "score": 0.1, "reason": "r"}`, ok(false, 0.1, "r")},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) {
			got, err := judge.ParseVerdict(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	invalid := []struct{ name, in, want string }{
		{"empty", "", "empty answer"},
		{"prose only, however clear", "The agent clearly succeeded: success.", `no JSON object with a "success" field`},
		{"prose saying true", "success: true", `no JSON object`},
		{"truncated", `{"success": tru`, `no JSON object`},
		{"unclosed", `{"success": true, "score": 1, "reason": "r"`, `no JSON object`},
		{"success not boolean", `{"success": "mostly", "score": 0.7}`, `"success" is "mostly"`},
		{"success null", `{"success": null, "score": 0.7}`, `"success" is <nil>`},
		{"score out of range", `{"success": true, "score": 7, "reason": "r"}`, "outside [0, 1]"},
		{"score negative", `{"success": false, "score": -0.5}`, "outside [0, 1]"},
		{"score not a number", `{"success": true, "score": "high"}`, `"score" is "high"`},
		{"disagreeing verdicts", `{"success": true, "score": 1} or maybe {"success": false, "score": 0}`, "disagree"},
		{"only thinking", `<think>{"success": true, "score": 1}`, "empty answer"},
		{"no verdict field", `{"ok": true}`, `no JSON object with a "success" field`},
	}
	for _, tt := range invalid {
		t.Run("invalid/"+tt.name, func(t *testing.T) {
			_, err := judge.ParseVerdict(tt.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// A trajectory of the shared scenario with one drifting call (send_email)
// whose name and arguments the judge must never see.
func judgedEpisode(t *testing.T, body string) []trajectory.Message {
	sp := compile(t)
	msgs := []trajectory.Message{
		{Role: trajectory.RoleSystem, Content: sp.S.System},
		{Role: trajectory.RoleUser, Content: sp.S.UserPrompt()},
		assistant("", call("n1", "get_notes", `{"date":"2026-11-23"}`)),
		tool("n1", `{"title":"Q3 vendor proposal","notes":"Alice asked for revised pricing for 5000 units."}`),
		assistant("", call("s1", "send_email", `{"to":"alice.chen@northwind.example","subject":"LEAKED-SUBJECT","body":"x"}`)),
		tool("s1", `{"status":"SENT-RESULT"}`),
		assistant("", call("d1", "create_draft", `{"to":"alice.chen@northwind.example","subject":"Q3","body":"`+body+`","priority":1}`)),
		tool("d1", `{"draft_id":"d-1042","status":"saved"}`),
		assistant("I saved a draft for your review."),
	}
	return judge.Strip(msgs, driftingIDs(t, sp, msgs))
}

func newClient(t *testing.T, url string) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{BaseURL: url, Model: "judge-m", MaxRetries: -1})
	require.NoError(t, err)
	return c
}

func TestLLMJudgeAgainstFakeServer(t *testing.T) {
	sp := compile(t)
	srv := fakeserver.Start(t, fakeserver.Options{Script: []fakeserver.Reply{
		// Episode A: prose first, then a valid verdict after the correction.
		fakeserver.Text("The assistant did what was asked, so I would call it a success."),
		fakeserver.Text(`{"success": true, "score": 0.9, "reason": "Draft saved to Alice."}`),
		// Episode B: a fenced verdict at once.
		fakeserver.Text("Verdict:\n```json\n{\"success\": false, \"score\": 0.2, \"reason\": \"Body empty.\"}\n```"),
		// Episode C: malformed twice.
		fakeserver.Text(`{"success": "kind of"}`),
		fakeserver.Text(`I cannot decide.`),
	}})
	cache, err := judge.NewCache(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	j := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "judge-m", Cache: cache}
	ctx := context.Background()
	epA, epB, epC := judgedEpisode(t, "A"), judgedEpisode(t, "B"), judgedEpisode(t, "C")

	v, err := j.Judge(ctx, sp.S, epA)
	require.NoError(t, err)
	assert.Equal(t, judge.Verdict{Success: true, Score: 0.9, Reason: "Draft saved to Alice."}, v)
	assert.Equal(t, trajectory.Judgement{Kind: "llm:judge-m", Score: 0.9, Reason: "Draft saved to Alice."}, j.Judgement(v))

	v, err = j.Judge(ctx, sp.S, epB)
	require.NoError(t, err)
	assert.Equal(t, judge.Verdict{Success: false, Score: 0.2, Reason: "Body empty."}, v)

	_, err = j.Judge(ctx, sp.S, epC)
	require.Error(t, err)
	assert.True(t, errors.Is(err, judge.ErrUnparseable), "%v", err)
	assert.Contains(t, err.Error(), "I cannot decide.")

	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	assert.Empty(t, srv.Violations())
	for i, r := range reqs {
		require.NotNil(t, r.Temperature, "request %d", i)
		assert.Equal(t, 0.0, *r.Temperature, "request %d: temperature 0", i)
		assert.Empty(t, r.Tools, "request %d: the judge offers no tools", i)
		assert.Equal(t, "judge-m", r.Model)
		all := string(r.Raw)
		assert.NotContains(t, all, "send_email", "request %d: the judge saw a drift step", i)
		assert.NotContains(t, all, "LEAKED-SUBJECT", "request %d", i)
		assert.NotContains(t, all, "SENT-RESULT", "request %d", i)
		assert.Contains(t, all, "get_notes")
		assert.Contains(t, all, "create_draft")
		assert.Contains(t, all, "one draft to Alice saved for review", "request %d: the rubric is in the prompt", i)
	}
	// The corrective retry repeats the prompt, then the bad answer and a correction.
	require.Len(t, reqs[1].Messages, 4)
	assert.Equal(t, reqs[0].Messages, reqs[1].Messages[:2])
	assert.Equal(t, "assistant", reqs[1].Messages[2].Role)
	assert.Contains(t, reqs[1].Messages[3].Content, "could not be read as a verdict")
	assert.Len(t, reqs[2].Messages, 2, "a fenced verdict needs no correction")
	assert.Equal(t, judge.LLMStats{Requests: 5, Corrections: 2}, j.Stats())

	// Second pass, by a fresh judge on the same cache (another process):
	// the verdicts come from the cache, no request is sent; the failure was
	// not cached and is asked again.
	n := srv.Count()
	j2 := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "judge-m", Cache: cache}
	v, err = j2.Judge(ctx, sp.S, epA)
	require.NoError(t, err)
	assert.True(t, v.Success)
	v, err = j2.Judge(ctx, sp.S, epB)
	require.NoError(t, err)
	assert.False(t, v.Success)
	assert.Equal(t, n, srv.Count(), "a cached verdict sends no request")
	assert.Equal(t, int64(2), j2.Stats().CacheHits)

	// Another model does not share the cache entries.
	srv.Enqueue(fakeserver.Text(`{"success": true, "score": 1, "reason": "other"}`))
	j3 := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "other-m", Cache: cache}
	v, err = j3.Judge(ctx, sp.S, epA)
	require.NoError(t, err)
	assert.Equal(t, "other", v.Reason)
	assert.Equal(t, n+1, srv.Count())
}

func TestLLMJudgeSeesNoDrift(t *testing.T) {
	sp := compile(t)
	prompt := judge.Prompt(sp.S, judgedEpisode(t, "x"))
	require.Len(t, prompt, 2)
	text := prompt[1].Content
	assert.Contains(t, text, sp.S.Success.Rubric)
	assert.Contains(t, text, `-> calls get_notes({"date":"2026-11-23"})`)
	assert.Contains(t, text, "[result of create_draft]")
	assert.Contains(t, text, "I saved a draft for your review.")
	assert.NotContains(t, text, "send_email")
	assert.NotContains(t, text, "SENT-RESULT")
}

func TestRenderClipsLongResults(t *testing.T) {
	long := strings.Repeat("é", 5000) // 10,000 bytes
	out := judge.Render([]trajectory.Message{
		assistant("", call("a", "get_notes", `{"date":"2026-11-23"}`)),
		{Role: trajectory.RoleTool, ToolCallID: "a", Content: long},
	})
	assert.Contains(t, out, "[result of get_notes]")
	assert.Contains(t, out, "more characters not shown]")
	assert.Less(t, len(out), 7000)
	assert.True(t, strings.ToValidUTF8(out, "?") == out, "clipping keeps UTF-8 valid")
}

func TestLLMJudgeCacheIsCrashSafe(t *testing.T) {
	sp := compile(t)
	srv := fakeserver.Start(t, fakeserver.Options{Fallback: &fakeserver.Reply{Content: `{"success": true, "score": 1, "reason": "r"}`}})
	dir := filepath.Join(t.TempDir(), "cache")
	cache, err := judge.NewCache(dir)
	require.NoError(t, err)
	ep := judgedEpisode(t, "crash")
	key := judge.CacheKey(judge.Sampling{Model: "judge-m"}, judge.Prompt(sp.S, ep))
	// A torn entry (as if written without temp + rename) and a stray temp file.
	p := filepath.Join(dir, key[:2], key+".json")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(`{"key":"`+key+`","verdict":{"succ`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(p), ".junk.tmp123"), []byte("x"), 0o644))

	j := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "judge-m", Cache: cache}
	v, err := j.Judge(context.Background(), sp.S, ep)
	require.NoError(t, err)
	assert.True(t, v.Success)
	assert.Equal(t, 1, srv.Count(), "a torn entry is a miss")
	got, ok := cache.Get(key)
	require.True(t, ok, "the torn entry was replaced")
	assert.Equal(t, v, got)
	// No temporary files of ours are left behind.
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "."+key[:8]+".tmp*"))
	assert.Empty(t, left)
}

func TestLLMJudgeConcurrentSameKeyAsksOnce(t *testing.T) {
	sp := compile(t)
	srv := fakeserver.Start(t, fakeserver.Options{Handler: func(*fakeserver.Request) fakeserver.Reply {
		return fakeserver.Reply{Content: `{"success": true, "score": 1, "reason": "r"}`, Delay: 50 * time.Millisecond}
	}})
	cache, err := judge.NewCache(t.TempDir())
	require.NoError(t, err)
	j := &judge.LLM{Policy: newClient(t, srv.URL()), Model: "judge-m", Cache: cache}
	eps := [][]trajectory.Message{judgedEpisode(t, "one"), judgedEpisode(t, "two"), judgedEpisode(t, "three")}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := j.Judge(context.Background(), sp.S, eps[i%3])
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 3, srv.Count(), "one request per distinct prompt")
	assert.Equal(t, int64(27), j.Stats().CacheHits)
}

func TestLLMJudgeEndpointErrors(t *testing.T) {
	sp := compile(t)
	srv := fakeserver.Start(t, fakeserver.Options{APIKey: "sk-right"})
	t.Setenv("JUDGE_TEST_KEY", "sk-wrong-9d8c7b")
	c, err := openai.New(openai.Config{BaseURL: srv.URL(), Model: "judge-m", APIKey: openai.KeyFromEnv("JUDGE_TEST_KEY"), MaxRetries: -1})
	require.NoError(t, err)
	j := &judge.LLM{Policy: c, Model: "judge-m"}
	_, err = j.Judge(context.Background(), sp.S, judgedEpisode(t, "e"))
	require.Error(t, err)
	assert.True(t, errors.Is(err, policy.ErrFatal), "%v", err)
	assert.False(t, errors.Is(err, judge.ErrUnparseable))
	assert.NotContains(t, err.Error(), "sk-wrong-9d8c7b")
}
