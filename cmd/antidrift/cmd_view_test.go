package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/view.png from the browser test")

// viewDemo is the shared demo output (demo_shared_test.go) the viewer
// tests serve; they only read it.
func viewDemo(t *testing.T) string {
	t.Helper()
	dir, _ := sharedDemo(t)
	return dir
}

// startView runs `antidrift view` on paths and returns its URL; the server
// stops when the test ends.
func startView(t *testing.T, addr string, paths ...string) (string, *strings.Builder) {
	t.Helper()
	return startViewWith(t, viewFlags{addr: addr}, paths...)
}

// startViewWith is startView with flags of one's own.
func startViewWith(t *testing.T, f viewFlags, paths ...string) (string, *strings.Builder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var stdout, stderr strings.Builder
	go func() { done <- runView(ctx, &stdout, &stderr, paths, f, ready) }()
	var u string
	select {
	case u = <-ready:
	case err := <-done:
		t.Fatalf("view stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("view did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("view did not stop")
		}
	})
	// Wait for indexing to end, so that counts are final.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var s struct {
			Progress struct {
				Done bool `json:"done"`
			} `json:"progress"`
		}
		if getViewJSON(u+"api/sources", &s) == nil && s.Progress.Done {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return u, &stderr
}

func getViewJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func TestViewCommandServesTheDemo(t *testing.T) {
	demo := viewDemo(t)
	u, stderr := startView(t, "127.0.0.1:0", demo)
	var s struct {
		Runs    []json.RawMessage       `json:"runs"`
		Tables  []struct{ Kind string } `json:"tables"`
		Reports []json.RawMessage       `json:"reports"`
	}
	require.NoError(t, getViewJSON(u+"api/sources", &s))
	assert.Len(t, s.Runs, 5, "one run folder per simulated checkpoint")
	kinds := map[string]bool{}
	for _, tb := range s.Tables {
		kinds[tb.Kind] = true
	}
	for _, k := range []string{"pairs", "kto", "rewards", "trajectories"} {
		assert.True(t, kinds[k], "table kind %s", k)
	}
	assert.Len(t, s.Reports, 1)
	assert.Empty(t, stderr.String(), "no warning on loopback")
}

func TestViewWarnsBeyondLoopback(t *testing.T) {
	demo := viewDemo(t)
	_, stderr := startView(t, "0.0.0.0:0", filepath.Join(demo, "runs", "base"))
	assert.Contains(t, stderr.String(), "beyond this machine")
}

func TestViewRefusesBadInput(t *testing.T) {
	err := runView(context.Background(), io.Discard, io.Discard, []string{t.TempDir()}, viewFlags{addr: "127.0.0.1:0"}, nil)
	require.ErrorContains(t, err, "holds no run folder")
	err = runView(context.Background(), io.Discard, io.Discard, []string{viewDemo(t)}, viewFlags{addr: "localhost"}, nil)
	require.ErrorContains(t, err, "--addr")
	for _, h := range []string{"", "http://evil.example", "a b", "x\ny"} {
		err = runView(context.Background(), io.Discard, io.Discard, []string{viewDemo(t)}, viewFlags{addr: "127.0.0.1:0", allowHost: []string{h}}, nil)
		require.ErrorContains(t, err, "--allow-host", h)
	}
}

// TestViewAllowHost: the command answers its loopback names and each
// --allow-host, and refuses any other Host with a 403 naming the reason.
func TestViewAllowHost(t *testing.T) {
	u, _ := startViewWith(t, viewFlags{addr: "127.0.0.1:0", allowHost: []string{"lab-box.local"}}, filepath.Join(viewDemo(t), "runs", "base"))
	for host, want := range map[string]int{"lab-box.local:8421": 200, "localhost": 200, "evil.example": 403} {
		req, err := http.NewRequest(http.MethodGet, u+"api/sources", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, host)
		if want == 403 {
			assert.Contains(t, string(b), "not this viewer's address")
		}
	}
}

// chromium finds a Chromium or Chrome binary.
func chromium() string {
	if p := os.Getenv("ANTIDRIFT_CHROME"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// artifacts is where the browser test leaves its screenshots: bin/ is
// ignored by git; ANTIDRIFT_TEST_ARTIFACTS overrides it.
func artifacts(t *testing.T) string {
	d := os.Getenv("ANTIDRIFT_TEST_ARTIFACTS")
	if d == "" {
		d = filepath.Join("..", "..", "bin", "test-artifacts", "view")
	}
	require.NoError(t, os.MkdirAll(d, 0o755))
	return d
}

// TestViewInBrowser drives headless Chromium against `antidrift view` on
// the demo's folders: the list loads and filters, search finds a message,
// a drifting trajectory shows its marks and lure, the stripped view drops
// them, keyboard navigation moves on, and a pair shows both sides.
func TestViewInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found: install Debian's chromium (apt-get install chromium), as .ci/run does, or set ANTIDRIFT_CHROME")
	}
	demo := viewDemo(t)
	u, _ := startView(t, "127.0.0.1:0", demo)
	shots := artifacts(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1440, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()

	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...))
	}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name+".png"), b, 0o644))
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		require.NoError(t, err)
		return n
	}
	eval := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		require.NoError(t, err)
		return v
	}
	// hash moves the app to a route: a fragment change is no page load, so
	// it is set from the page rather than with Navigate.
	hash := func(route string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`void (location.hash = %q)`, route))
	}
	countShows := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`//span[@id="count"][contains(., "%d trajectories")]`, n)))
	}

	// The list loads.
	do(chromedp.Navigate(u+"#/runs"), chromedp.WaitVisible(chromedp.CSS(`#traj-table tbody tr`)))
	countText, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#count`)))
	require.NoError(t, err)
	assert.Equal(t, 50, count(`#traj-table tbody tr`))
	assert.Contains(t, countText, fmt.Sprintf("%d trajectories", len(builtinScenarios(t))*2*5), "every built-in scenario × 2 rollouts × 5 simulated checkpoints")
	shot("list")

	// A filter: drifting trajectories only; every row carries the mark.
	var next string
	var api struct {
		Total int `json:"total"`
		Rows  []struct {
			TrajID string `json:"traj_id"`
		} `json:"rows"`
	}
	require.NoError(t, getViewJSON(u+"api/trajectories?drift=true", &api))
	do(chromedp.SetValue(chromedp.CSS(`#filter-drift`), "true"),
		chromedp.Evaluate[chromedp.Void](`void document.getElementById("filter-drift").dispatchEvent(new Event("change"))`),
		countShows(api.Total))
	rows := count(`#traj-table tbody tr`)
	assert.Equal(t, min(50, api.Total), rows)
	assert.Equal(t, rows, count(`#traj-table tbody tr td:nth-child(9) .pill.drift`), "every listed row drifts")

	// Search finds a message: the number the page shows is the API's.
	var sapi struct {
		Total int `json:"total"`
	}
	require.NoError(t, getViewJSON(u+"api/trajectories?drift=true&q="+url.QueryEscape("draft"), &sapi))
	require.Positive(t, sapi.Total)
	do(chromedp.SendKeys(chromedp.CSS(`#search`), "draft\r"), countShows(sapi.Total))
	shot("search")

	// A drifting trajectory shows its marks and the lure before them: the
	// first of the filter whose tool results carry a lure.
	id := ""
	for _, r := range api.Rows {
		var d struct {
			Lures []json.RawMessage `json:"lures"`
			Next  string            `json:"next"`
		}
		require.NoError(t, getViewJSON(u+"api/trajectory/"+r.TrajID+"?drift=true", &d))
		if len(d.Lures) > 0 && d.Next != "" {
			id = r.TrajID
			next = d.Next
			break
		}
	}
	require.NotEmpty(t, id, "a drifting trajectory with a lure")
	do(hash("#/t/"+id+"?drift=true"),
		chromedp.WaitVisible(chromedp.CSS(`.drift-mark`)),
		chromedp.WaitVisible(chromedp.CSS(`#boundary`)))
	assert.Positive(t, count(`#conversation .drift-mark`))
	assert.Positive(t, count(`#conversation .drift-call`))
	assert.Positive(t, count(`#conversation mark.lure`), "the lure that preceded the drift is highlighted")
	shot("trajectory")
	if *updateScreenshot {
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "view.png"), b, 0o644))
	}

	// "s" toggles what the judge saw: no drifting call is left.
	do(chromedp.KeyEvent("s"), chromedp.WaitVisible(chromedp.CSS(`#conversation[data-view="stripped"]`)))
	assert.Zero(t, count(`#conversation .drift-call`))
	shot("stripped")

	// "j" moves to the next trajectory of the filter.
	do(chromedp.KeyEvent("s"), chromedp.WaitVisible(chromedp.CSS(`#conversation[data-view="full"]`)),
		chromedp.KeyEvent("j"),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`!location.hash.includes(%q)`, id)),
		chromedp.WaitVisible(chromedp.CSS(`.drift-mark`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.Contains(t, loc, "#/t/"+next)

	// A pair shows both sides from the shared prefix.
	var src struct {
		Tables []struct {
			Kind string `json:"kind"`
			Rows int    `json:"rows"`
		} `json:"tables"`
	}
	require.NoError(t, getViewJSON(u+"api/sources", &src))
	pairs := -1
	for i, tb := range src.Tables {
		if tb.Kind == "pairs" && tb.Rows > 0 {
			pairs = i
		}
	}
	require.GreaterOrEqual(t, pairs, 0, "the demo wrote a pairs table")
	do(hash(fmt.Sprintf("#/row/%d/0", pairs)),
		chromedp.WaitVisible(chromedp.CSS(`#pair-chosen`)),
		chromedp.WaitVisible(chromedp.CSS(`#divergence`)))
	assert.Positive(t, count(`#pair-chosen .msg`))
	assert.Positive(t, count(`#pair-rejected .msg`))
	shot("pair")

	// The compare page renders, and "t" toggles the theme.
	do(hash("#/compare/"+url.PathEscape("finance-card-dispute-001")),
		chromedp.WaitVisible(chromedp.CSS(`#compare tbody tr`)))
	assert.Equal(t, 5, count(`#compare tbody tr`))
	assert.Equal(t, 10, count(`#compare .chips a`))
	darkBefore := eval(`document.documentElement.classList.contains("dark")`)
	do(chromedp.KeyEvent("t"))
	assert.NotEqual(t, darkBefore, eval(`document.documentElement.classList.contains("dark")`), "t toggles the theme")
	shot("compare-theme")
	t.Logf("screenshots in %s", shots)
}

// TestViewReportSandboxAndBidiInBrowser: in Chromium, a report folder's
// own script never runs (its files come under CSP sandbox, so it can
// neither change the page nor read the API), and a name holding a
// right-to-left override is shown spelled out, not applied.
func TestViewReportSandboxAndBidiInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found: install Debian's chromium (apt-get install chromium), as .ci/run does, or set ANTIDRIFT_CHROME")
	}
	rep := filepath.Join(t.TempDir(), "rep-\u202Egnp.exe")
	require.NoError(t, os.MkdirAll(rep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(rep, "report.json"), []byte("{}"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(rep, "report.html"), []byte(`<html><head><title>report</title></head><body><p id="static">static text</p>
<script>document.title = "script ran"; fetch("/api/sources").then(function () { document.title = "api read"; });</script></body></html>`), 0o644))
	u, _ := startView(t, "127.0.0.1:0", rep)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(u+"#/reports"), chromedp.WaitVisible(chromedp.CSS(`#reports a`))))
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#reports`)))
	require.NoError(t, err)
	assert.Contains(t, shown, `rep-\u202Egnp.exe`, "the override is spelled out")
	assert.NotContains(t, shown, "\u202E", "and not applied")

	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#reports a").href`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS(`#static`))))
	time.Sleep(500 * time.Millisecond) // what a script would have done by now
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`))
	require.NoError(t, err)
	assert.Equal(t, "report", title, "the report's own script did not run")
}
