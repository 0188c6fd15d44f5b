package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browser starts headless Chromium for a test, or skips it when there is
// none; the browser stops when the test ends.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found: install Debian's chromium (apt-get install chromium), as .ci/run does, or set ANTIDRIFT_CHROME")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1440, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelT(); cancel(); cancelA() })
	return ctx
}

// browserDo runs actions, failing the test on an error.
func browserDo(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

func browserEval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err)
	return v
}

// recordLines are the record lines of a demo run folder, in file order.
func recordLines(t *testing.T, run string) [][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(run, "trajectories", "*.jsonl"))
	require.NoError(t, err)
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(l) > 0 {
				out = append(out, l)
			}
		}
	}
	return out
}

// TestViewFollowsALiveRunInBrowser: a run whose records are being written
// (a writer appending lines, the last one half written at first) shows in
// the list as live and grows there without a reload; once its plan is
// written it says finished.
func TestViewFollowsALiveRunInBrowser(t *testing.T) {
	if chromium() == "" {
		browser(t, 0) // skips, saying how to install one
	}
	src := filepath.Join(viewDemo(t), "runs", "base")
	lines := recordLines(t, src)
	dir := filepath.Join(t.TempDir(), "live-run")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	man, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), man, 0o644))
	f, err := os.Create(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	write := func(b []byte) {
		_, err := f.Write(b)
		require.NoError(t, err)
	}
	for _, l := range lines[:5] {
		write(l)
	}
	write(lines[5][:40])

	u, _ := startView(t, "127.0.0.1:0", dir)
	ctx := browser(t, time.Minute)
	countShows := func(n int) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`//span[@id="count"][contains(., "%d trajectories")]`, n)))
	}
	browserDo(t, ctx, chromedp.Navigate(u+"#/runs"), countShows(5), chromedp.WaitVisible(chromedp.CSS(`#live`)))
	// A marker a reload would wipe.
	browserEval[chromedp.Void](t, ctx, `void (window.notReloaded = true)`)

	write(lines[5][40:])
	for _, l := range lines[6:20] {
		write(l)
	}
	browserDo(t, ctx, countShows(20))
	require.True(t, browserEval[bool](t, ctx, `window.notReloaded === true`), "the list updated itself, without a reload")

	for _, l := range lines[20:] {
		write(l)
	}
	browserDo(t, ctx, countShows(len(lines)),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="progress"][contains(., "1 finished")]`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#live`)))
	require.True(t, browserEval[bool](t, ctx, `window.notReloaded === true`))
}

// pairsTable is the index of the demo's DPO pairs table in the viewer.
func pairsTable(t *testing.T, u string) (int, int) {
	t.Helper()
	var src struct {
		Tables []struct {
			Kind string `json:"kind"`
			Rows int    `json:"rows"`
		} `json:"tables"`
	}
	require.NoError(t, getViewJSON(u+"api/sources", &src))
	for i, tb := range src.Tables {
		if tb.Kind == "pairs" && tb.Rows > 0 {
			return i, tb.Rows
		}
	}
	t.Fatal("the demo wrote no pairs table")
	return -1, 0
}

// TestViewPairDiffInBrowser: a trajectory pair's page shows the steps both
// sides share once, marks where they diverge, and marks the words that
// differ on each side: those the API's word diff names.
func TestViewPairDiffInBrowser(t *testing.T) {
	if chromium() == "" {
		browser(t, 0)
	}
	u, _ := startView(t, "127.0.0.1:0", viewDemo(t))
	ctx := browser(t, time.Minute)
	n, rows := pairsTable(t, u)
	type op struct{ Op, Text string }
	var row struct {
		Diff struct {
			Shared  int `json:"shared"`
			Message int `json:"message"`
			Aligned []struct {
				Same  bool `json:"same"`
				Calls []struct {
					Args []op `json:"arguments"`
				} `json:"calls"`
			} `json:"aligned"`
		} `json:"diff"`
	}
	i := 0
	for ; i < rows; i++ {
		require.NoError(t, getViewJSON(fmt.Sprintf("%sapi/tables/%d/rows/%d", u, n, i), &row))
		d := row.Diff
		if d.Shared > 0 && len(d.Aligned) > 0 && !d.Aligned[0].Same && len(d.Aligned[0].Calls) > 0 {
			break
		}
	}
	require.Less(t, i, rows, "a pair whose sides share steps and then call differently")
	var removed, added []string
	for _, o := range row.Diff.Aligned[0].Calls[0].Args {
		switch o.Op {
		case "-":
			removed = append(removed, o.Text)
		case "+":
			added = append(added, o.Text)
		}
	}
	browserDo(t, ctx, chromedp.Navigate(fmt.Sprintf("%s#/row/%d/%d", u, n, i)),
		chromedp.WaitVisible(chromedp.CSS(`#divergence`)), chromedp.WaitVisible(chromedp.CSS(`#shared`)))
	require.Equal(t, row.Diff.Message, browserEval[int](t, ctx, `+document.getElementById("divergence").dataset.message`))
	require.Contains(t, browserEval[string](t, ctx, `document.getElementById("shared").textContent`), fmt.Sprintf("%d message", row.Diff.Shared))
	// The shared steps are not repeated on the sides: each side starts at
	// the divergence, its first message marked.
	require.True(t, browserEval[bool](t, ctx, `document.querySelector("#pair-chosen .msg").classList.contains("differs")`))
	require.True(t, browserEval[bool](t, ctx, `!!document.querySelector("#pair-chosen .msg .diverge-here")`))
	marked := func(side string) []string {
		return browserEval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#pair-%s .msg:first-of-type .diff-call mark.diff")].map((m) => m.textContent)`, side))
	}
	require.Equal(t, removed, marked("chosen"), "the chosen side marks the words only it has")
	require.Equal(t, added, marked("rejected"), "the rejected side marks the words only it has")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(artifacts(t), "pair-diff.png"), shot, 0o644))
}

// TestViewTableQueryInBrowser: on the demo's DPO pairs table, a filter
// (pair type) and a search (a tool's name) show the rows the file holds,
// counted from the file itself.
func TestViewTableQueryInBrowser(t *testing.T) {
	if chromium() == "" {
		browser(t, 0)
	}
	u, _ := startView(t, "127.0.0.1:0", viewDemo(t))
	ctx := browser(t, time.Minute)
	n, _ := pairsTable(t, u)
	var src struct {
		Tables []struct {
			Path string `json:"path"`
		} `json:"tables"`
	}
	require.NoError(t, getViewJSON(u+"api/sources", &src))
	b, err := os.ReadFile(src.Tables[n].Path)
	require.NoError(t, err)
	type msg struct {
		Content   string `json:"content"`
		ToolCalls []struct {
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	type row struct {
		PairType string `json:"pair_type"`
		Prompt   []msg  `json:"prompt"`
		Chosen   []msg  `json:"chosen"`
		Rejected []msg  `json:"rejected"`
	}
	var rows []row
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r row
		require.NoError(t, json.Unmarshal(l, &r))
		rows = append(rows, r)
	}
	// The word: the first step pair's rejected call.
	word := ""
	for _, r := range rows {
		if r.PairType == "step" && len(r.Rejected) > 0 && len(r.Rejected[0].ToolCalls) > 0 {
			word = r.Rejected[0].ToolCalls[0].Function.Name
			break
		}
	}
	require.NotEmpty(t, word)
	steps, found := 0, 0
	for _, r := range rows {
		if r.PairType != "step" {
			continue
		}
		steps++
		hit := false
		for _, m := range append(append(append([]msg{}, r.Prompt...), r.Chosen...), r.Rejected...) {
			text := m.Content
			for _, c := range m.ToolCalls {
				text += " " + c.Function.Name + " " + string(c.Function.Arguments)
			}
			hit = hit || strings.Contains(strings.ToLower(text), strings.ToLower(word))
		}
		if hit {
			found++
		}
	}
	require.Positive(t, found)
	require.Less(t, found, len(rows), "the search narrows the list")

	rowsShow := func(k int) chromedp.Action[chromedp.Void] {
		return chromedp.WaitVisible(chromedp.Search(fmt.Sprintf(`//span[@class="table-count"][starts-with(., "%d rows")]`, k)))
	}
	browserDo(t, ctx, chromedp.Navigate(fmt.Sprintf("%s#/table/%d", u, n)), rowsShow(len(rows)),
		chromedp.SetValue(chromedp.CSS(`#table-filter-pair_type`), "step"),
		chromedp.Evaluate[chromedp.Void](`void document.getElementById("table-filter-pair_type").dispatchEvent(new Event("change"))`),
		rowsShow(steps),
		chromedp.SendKeys(chromedp.CSS(`#table-search`), word+"\r"),
		rowsShow(found))
	require.Equal(t, min(found, 50), browserEval[int](t, ctx, `document.querySelectorAll("#rows tbody tr").length`))
	// Sorting by the reward gap, descending, orders the shown rows.
	browserDo(t, ctx, chromedp.Click(chromedp.CSS(`#rows th[data-sort="reward_gap"]`)),
		chromedp.WaitVisible(chromedp.Search(`//th[@data-sort="reward_gap"][contains(., "▲")]`)),
		chromedp.Click(chromedp.CSS(`#rows th[data-sort="reward_gap"]`)),
		chromedp.WaitVisible(chromedp.Search(`//th[@data-sort="reward_gap"][contains(., "▼")]`)), rowsShow(found))
	gaps := browserEval[[]float64](t, ctx, `(() => { const i = [...document.querySelectorAll("#rows thead th")].findIndex((th) => th.dataset.sort === "reward_gap");
		return [...document.querySelectorAll("#rows tbody tr")].map((tr) => +tr.children[i].textContent); })()`)
	for i := 1; i < len(gaps); i++ {
		require.GreaterOrEqual(t, gaps[i-1], gaps[i])
	}
}

// TestViewExportInBrowser: `antidrift view --export DIR --filter drift=true`
// writes a site that opens from file:// in Chromium: the list holds the
// drifting trajectories only, a trajectory shows its marks and lure,
// filters and search work in the page, and a pair shows its diff.
func TestViewExportInBrowser(t *testing.T) {
	if chromium() == "" {
		browser(t, 0)
	}
	demo := viewDemo(t)
	site := filepath.Join(t.TempDir(), "site")
	var out strings.Builder
	require.NoError(t, runViewExport(&out, []string{demo}, viewFlags{export: site, filter: []string{"drift=true"}, limit: 60, labeling: "record"}))
	assert.Contains(t, out.String(), "wrote 60 trajectories (the first 60 of")
	require.FileExists(t, filepath.Join(site, "index.html"))
	require.ErrorContains(t, runViewExport(io.Discard, []string{demo}, viewFlags{export: site, limit: 60, labeling: "record"}), "not empty")
	require.ErrorContains(t, runViewExport(io.Discard, []string{demo}, viewFlags{export: filepath.Join(t.TempDir(), "x"), filter: []string{"drift"}, limit: 60}), "--filter")

	ctx := browser(t, time.Minute)
	page := "file://" + filepath.ToSlash(filepath.Join(site, "index.html"))
	browserDo(t, ctx, chromedp.Navigate(page+"#/runs"),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="count"][contains(., "60 trajectories")]`)))
	require.Equal(t, 50, browserEval[int](t, ctx, `document.querySelectorAll("#traj-table tbody tr td:nth-child(9) .pill.drift").length`), "every row drifts")
	require.Contains(t, browserEval[string](t, ctx, `document.getElementById("progress").textContent`), "static export")

	// A drifting trajectory with a lure, as the export's data holds it.
	var id string
	entries, err := os.ReadDir(filepath.Join(site, "data", "t"))
	require.NoError(t, err)
	require.Len(t, entries, 60)
	for k := range 60 {
		b, err := os.ReadFile(filepath.Join(site, "data", "t", fmt.Sprintf("%d.js", k)))
		require.NoError(t, err)
		js := strings.TrimSuffix(strings.TrimPrefix(string(b), fmt.Sprintf(`window.ANTIDRIFT_DATA("t/%d", `, k)), ");\n")
		var d struct {
			Record struct {
				TrajID string `json:"traj_id"`
			} `json:"record"`
			Marks []json.RawMessage `json:"marks"`
			Lures []json.RawMessage `json:"lures"`
		}
		require.NoError(t, json.Unmarshal([]byte(js), &d))
		if len(d.Marks) > 0 && len(d.Lures) > 0 {
			id = d.Record.TrajID
			break
		}
	}
	require.NotEmpty(t, id)
	browserDo(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`void (location.hash = %q)`, "#/t/"+id)),
		chromedp.WaitVisible(chromedp.CSS(`#conversation .drift-mark`)), chromedp.WaitVisible(chromedp.CSS(`#boundary`)))
	require.Positive(t, browserEval[int](t, ctx, `document.querySelectorAll("#conversation .drift-call").length`))
	require.Positive(t, browserEval[int](t, ctx, `document.querySelectorAll("#conversation mark.lure").length`))
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(artifacts(t), "export-trajectory.png"), shot, 0o644))

	// The stripped view and the list's own filter work in the page.
	browserDo(t, ctx, chromedp.KeyEvent("s"), chromedp.WaitVisible(chromedp.CSS(`#conversation[data-view="stripped"]`)))
	require.Zero(t, browserEval[int](t, ctx, `document.querySelectorAll("#conversation .drift-call").length`))
	browserDo(t, ctx, chromedp.Evaluate[chromedp.Void](`void (location.hash = "#/runs?checkpoint=sim:base")`),
		chromedp.WaitVisible(chromedp.CSS(`#traj-table tbody tr`)))
	require.True(t, browserEval[bool](t, ctx, `[...document.querySelectorAll("#traj-table tbody tr td:nth-child(2)")].every((td) => td.textContent.startsWith("sim:base"))`))

	// A pair of the exported DPO table shows its diff.
	var src struct {
		Tables []struct {
			Kind string `json:"kind"`
		} `json:"tables"`
	}
	b, err := os.ReadFile(filepath.Join(site, "data", "index.js"))
	require.NoError(t, err)
	var idx struct {
		Sources json.RawMessage `json:"sources"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimPrefix(string(b), "window.ANTIDRIFT_STATIC = "), ";\n")), &idx))
	require.NoError(t, json.Unmarshal(idx.Sources, &src))
	pairs := -1
	for i, tb := range src.Tables {
		if tb.Kind == "pairs" {
			pairs = i
		}
	}
	require.GreaterOrEqual(t, pairs, 0)
	browserDo(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`void (location.hash = "#/row/%d/0")`, pairs)),
		chromedp.WaitVisible(chromedp.CSS(`#divergence`)), chromedp.WaitVisible(chromedp.CSS(`#pair-rejected .msg`)))
}
