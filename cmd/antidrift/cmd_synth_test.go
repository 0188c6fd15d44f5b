package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/synth"
	"github.com/antidrift/antidrift/synth/synthtest"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthSeedsFile writes the scripted pipeline's seeds as JSONL.
func synthSeedsFile(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, s := range synthtest.Seeds {
		line, err := json.Marshal(s)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	name := filepath.Join(t.TempDir(), "seeds.jsonl")
	require.NoError(t, os.WriteFile(name, []byte(b.String()), 0o644))
	return name
}

// synthServer is an OpenAI-compatible endpoint answering as the scripted
// designer, builder, critic and matcher, slowed by delay per answer.
func synthServer(t *testing.T, delay time.Duration) *fakeserver.Server {
	return fakeserver.Start(t, fakeserver.Options{Handler: func(r *fakeserver.Request) fakeserver.Reply {
		rep := synthtest.Handler(r)
		rep.Delay = delay
		return rep
	}})
}

func synthArgs(url, seeds, out string) []string {
	return []string{"synth", "--designer", "openai:designer-model", "--builder", "openai:builder-model",
		"--critic", "openai:critic-model", "--base-url", url, "--seeds", seeds, "--out", out,
		"--join", "none", "--concurrency", "2", "--json"}
}

func TestSynthCommandAgainstAnEndpoint(t *testing.T) {
	srv := synthServer(t, 0)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runScenarios(t, synthArgs(srv.URL(), synthSeedsFile(t), out)...)
	require.Equal(t, 0, code, stderr)
	var sum synth.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, 8, sum.Seeds)
	assert.Equal(t, 4, sum.Accepted)
	assert.Equal(t, 1, sum.Escalated)
	assert.Equal(t, 1, sum.Duplicates)
	assert.Equal(t, map[string]int{"battery": 1, "designer-unparseable": 1}, sum.Failed)
	assert.Empty(t, srv.Violations(), "every request was a valid chat completion")
	// The stored configuration names models and endpoints, never a key.
	cfg, err := os.ReadFile(filepath.Join(out, "synth.json"))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), `"designer": "openai:designer-model"`)
	assert.Contains(t, string(cfg), `"matcher": "openai:critic-model"`, "the matcher defaults to the critic")

	// A changed configuration is refused, naming what changed.
	args := append(synthArgs(srv.URL(), synthSeedsFile(t), out), "--rounds", "1")
	code, _, stderr = runScenarios(t, args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "rounds")
	assert.Contains(t, stderr, "--force")
}

func TestSynthFlagsValidated(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"synth", "--out", out}, "--designer is required"},
		{[]string{"synth", "--designer", "sim:base", "--builder", "openai:b", "--critic", "openai:c", "--base-url", "http://127.0.0.1:1/v1", "--out", out}, "want openai:MODEL"},
		{[]string{"synth", "--designer", "openai:d", "--builder", "openai:b", "--critic", "openai:c", "--out", out}, "needs --designer-base-url or --base-url"},
		{[]string{"synth", "--designer", "openai:d"}, "--out is required"},
		{[]string{"synth", "--designer", "openai:d", "--builder", "openai:b", "--critic", "openai:c", "--base-url", "http://127.0.0.1:1/v1", "--out", out,
			"--probes", "openai:p1,sim:probe-shortcut", "--probe-base-url", "http://127.0.0.1:2/v1,http://127.0.0.1:3/v1"}, "--probe-base-url: 2 values for 1 openai: probes"},
		{[]string{"synth", "--designer", "openai:d", "--builder", "openai:b", "--critic", "openai:c", "--base-url", "http://127.0.0.1:1/v1", "--out", out, "--seeds", filepath.Join(out, "missing.jsonl")}, "missing.jsonl"},
	} {
		code, _, stderr := runScenarios(t, c.args...)
		assert.NotEqual(t, 0, code, c.args)
		assert.Contains(t, stderr, c.want, c.args)
	}
}

// accepted reads a run's accepted scenarios, by file name.
func acceptedSet(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "accepted", "*", "*.json"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, f)
		out[rel] = string(b)
	}
	return out
}

// TestSynthSurvivesSIGKILL kills a real synth process mid-run, reruns the
// same command, and checks it finishes with the accepted set of an
// uninterrupted run.
func TestSynthSurvivesSIGKILL(t *testing.T) {
	bin := antidriftBin(t)
	srv := synthServer(t, 30*time.Millisecond)
	seeds := synthSeedsFile(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := synthArgs(srv.URL(), seeds, dir)

	cmd := exec.Command(bin, args...)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		calls, _ := filepath.Glob(filepath.Join(dir, "seeds", "*", "calls", "*.json"))
		if len(calls) >= 6 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	stored, _ := filepath.Glob(filepath.Join(dir, "seeds", "*", "calls", "*.json"))
	decided, _ := filepath.Glob(filepath.Join(dir, "seeds", "*", "outcome.json"))
	require.Less(t, len(decided), len(synthtest.Seeds), "the kill came too late to test anything")

	code, stdout, stderr := execBin(t, nil, args...)
	require.Equal(t, 0, code, stderr)
	var got synth.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))

	ref := filepath.Join(t.TempDir(), "ref")
	code, stdout, stderr = execBin(t, nil, synthArgs(srv.URL(), seeds, ref)...)
	require.Equal(t, 0, code, stderr)
	var want synth.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &want))

	assert.Equal(t, acceptedSet(t, ref), acceptedSet(t, dir), "the resumed run accepts exactly what an uninterrupted run does")
	status := func(s synth.Summary) []string {
		var out []string
		for _, o := range s.Outcomes {
			out = append(out, o.Seed+" "+o.Status+" "+o.Reason)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, status(want), status(got))
	t.Logf("killed with %d calls stored and %d of %d seeds decided", len(stored), len(decided), len(synthtest.Seeds))
}

// TestSynthReviewPageInBrowser opens the review page a run writes in
// headless Chromium: one card per escalated scenario, its gate evidence
// and the critic's revisions as coloured diffs.
func TestSynthReviewPageInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found: install Debian's chromium (apt-get install chromium), as .ci/run does, or set ANTIDRIFT_CHROME")
	}
	srv := synthServer(t, 0)
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runScenarios(t, synthArgs(srv.URL(), synthSeedsFile(t), out)...)
	require.Equal(t, 0, code, stderr)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+filepath.Join(out, "review.html")),
		chromedp.WaitVisible(chromedp.CSS(`section.card`))))
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 1, count(`section.card`), "one card per escalated scenario")
	assert.Equal(t, 3, count(`section.card pre.diff`), "one diff per critic round")
	assert.Positive(t, count(`pre.diff span.add`))
	assert.Positive(t, count(`pre.diff span.del`))
	assert.Equal(t, 12, count(`section.card table`), "gate, required calls and drift points per round")
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`section.card h2`)))
	require.NoError(t, err)
	assert.Contains(t, title, "t-escalate")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(artifacts(t), "synth-review.png"), shot, 0o644))
}

// TestSynthEndpointFailureLeavesSeedUndecided: a designer endpoint that
// fails every request for one seed leaves that seed undecided (exit 2,
// nothing stored for it), the others decided; a rerun against a healthy
// endpoint decides it and replays the rest.
func TestSynthEndpointFailureLeavesSeedUndecided(t *testing.T) {
	var healthy atomic.Bool
	srv := fakeserver.Start(t, fakeserver.Options{Handler: func(r *fakeserver.Request) fakeserver.Reply {
		if !healthy.Load() && len(r.Messages) > 1 && strings.Contains(r.Messages[1].Content, "Seed id: t-ok\n") {
			return fakeserver.Reply{Status: 500, ErrMessage: "the model crashed", ErrType: "server_error"}
		}
		return synthtest.Handler(r)
	}})
	seeds := synthSeedsFile(t)
	out := filepath.Join(t.TempDir(), "run")
	args := append(synthArgs(srv.URL(), seeds, out), "--max-retries", "0")
	code, stdout, stderr := runScenarios(t, args...)
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "1 seeds undecided")
	assert.Contains(t, stderr, "t-ok")
	var sum synth.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, 1, sum.Undecided)
	assert.Equal(t, 4, sum.Accepted, "t-dup is accepted while the scenario it duplicates is undecided")
	assert.Equal(t, 0, sum.Duplicates)
	assert.NoFileExists(t, filepath.Join(out, "seeds", "t-ok", "outcome.json"))

	healthy.Store(true)
	code, stdout, stderr = runScenarios(t, args...)
	require.Equal(t, 0, code, stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, 0, sum.Undecided)
	assert.Equal(t, 4, sum.Accepted)
	assert.Equal(t, 1, sum.Duplicates)
}
