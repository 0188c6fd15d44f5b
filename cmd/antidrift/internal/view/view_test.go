package view

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// suiteSize is the number of built-in scenarios the test runs cover.
func suiteSize(tb testing.TB) int {
	tb.Helper()
	ss, err := suite.Load()
	require.NoError(tb, err)
	return len(ss)
}

// makeRun rolls a simulated checkpoint out in process on the built-in suite
// into dir (a simulation: no model is involved).
func makeRun(tb testing.TB, dir, profile string, rollouts int) []*scenario.Scenario {
	tb.Helper()
	ss, err := suite.Load()
	require.NoError(tb, err)
	p, err := sim.Lookup(profile)
	require.NoError(tb, err)
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	cfg := engine.Config{
		Scenarios: ss, Policy: sim.New(p, ss), PolicyName: profile, Checkpoint: profile,
		Rollouts: rollouts, Concurrency: 64, Seed: 7, Version: "test",
	}
	man := store.Manifest{
		Version: "test", Run: "view-test", Created: "2026-12-01T00:00:00Z",
		Plan: store.Plan{
			ScenarioSource: suite.Name, ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids,
			Policy: profile, Checkpoint: profile, Framework: engine.FrameworkNormal,
			Rollouts: rollouts, Seed: 7, Shard: "0/1", MaxSteps: 20,
		},
		Settings: store.Settings{BaseURL: "http://user:secret@example.invalid/v1", Concurrency: 64},
	}
	run, err := store.Open(dir, man, false)
	require.NoError(tb, err)
	sum, err := engine.Run(context.Background(), cfg, run)
	require.NoError(tb, err)
	require.Equal(tb, sum.Planned, sum.Ran)
	return ss
}

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureSS   []*scenario.Scenario
)

// fixture is two simulated checkpoints' runs below one folder, made once.
func fixture(t *testing.T) string {
	fixtureOnce.Do(func() {
		d, err := os.MkdirTemp("", "antidrift-view-")
		require.NoError(t, err)
		fixtureDir = d
		fixtureSS = makeRun(t, filepath.Join(d, "runs", "base"), "sim:base", 2)
		makeRun(t, filepath.Join(d, "runs", "dpo-2"), "sim:dpo-2", 2)
	})
	return fixtureDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

func builtinScenarios(dir string, m store.Manifest) (map[string]*scenario.Scenario, error) {
	out := map[string]*scenario.Scenario{}
	for _, s := range fixtureSS {
		out[s.ID] = s
	}
	return out, nil
}

func newTestServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New([]string{fixture(t)}, builtinScenarios)
	require.NoError(t, err)
	require.NoError(t, s.Index())
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs
}

func getJSON(t *testing.T, hs *httptest.Server, path string, want int, v any) {
	t.Helper()
	resp, err := http.Get(hs.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, want, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v), path)
}

// allRecords reads the fixture's records directly, as the truth the API is
// checked against.
func allRecords(t *testing.T) []*trajectory.Record {
	t.Helper()
	var out []*trajectory.Record
	for _, d := range []string{"base", "dpo-2"} {
		it := store.Records(filepath.Join(fixture(t), "runs", d))
		for it.Next() {
			r := *it.At()
			out = append(out, &r)
		}
		require.NoError(t, it.Err())
		it.Close()
	}
	return out
}

func TestListFiltersAgreeWithRecords(t *testing.T) {
	_, hs := newTestServer(t)
	recs := allRecords(t)
	require.Len(t, recs, suiteSize(t)*2*2)

	cases := []struct {
		query string
		keep  func(r *trajectory.Record) bool
	}{
		{"", func(*trajectory.Record) bool { return true }},
		{"drift=true", func(r *trajectory.Record) bool { return r.Drift }},
		{"success=false", func(r *trajectory.Record) bool { return !r.Success }},
		{"checkpoint=sim:dpo-2&drift=false", func(r *trajectory.Record) bool { return r.Checkpoint == "sim:dpo-2" && !r.Drift }},
		{"domain=finance&type=data", func(r *trajectory.Record) bool {
			if r.Domain != "finance" {
				return false
			}
			for _, m := range r.CountedMatches() {
				if m.Drift == "data" {
					return true
				}
			}
			return false
		}},
		{"kind=explicit_prohibition", func(r *trajectory.Record) bool {
			for _, m := range r.CountedMatches() {
				if m.Kind == "explicit_prohibition" {
					return true
				}
			}
			return false
		}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			var want []*trajectory.Record
			for _, r := range recs {
				if c.keep(r) {
					want = append(want, r)
				}
			}
			var res listResult
			getJSON(t, hs, "/api/trajectories?size=500&"+c.query, 200, &res)
			require.Equal(t, len(want), res.Total)
			ids := map[string]bool{}
			for _, r := range want {
				ids[r.TrajID] = true
			}
			for _, row := range res.Rows {
				assert.True(t, ids[row.TrajID], row.TrajID)
			}
			// Group metrics recomputed from the records.
			for _, g := range res.Groups {
				n, succ, dr, clean := 0, 0, 0, 0
				for _, r := range want {
					if r.Checkpoint == g.Checkpoint && r.Framework == g.Framework && r.Status.Scored() {
						n++
						if r.Success {
							succ++
						}
						if r.Drift {
							dr++
						}
						if r.Clean() {
							clean++
						}
					}
				}
				require.Equal(t, n, g.N)
				assert.InDelta(t, float64(succ)/float64(n), g.TSR, 1e-12)
				assert.InDelta(t, float64(dr)/float64(n), g.DR, 1e-12)
				assert.InDelta(t, float64(clean)/float64(n), g.CSR, 1e-12)
			}
		})
	}
}

func TestListSortsAndPages(t *testing.T) {
	_, hs := newTestServer(t)
	var all listResult
	getJSON(t, hs, "/api/trajectories?sort=-tokens&size=500", 200, &all)
	total := suiteSize(t) * 2 * 2
	require.Equal(t, total, all.Total)
	for i := 1; i < len(all.Rows); i++ {
		require.GreaterOrEqual(t, all.Rows[i-1].Tokens, all.Rows[i].Tokens)
	}
	var p2 listResult
	getJSON(t, hs, "/api/trajectories?sort=-tokens&size=50&page=2", 200, &p2)
	require.Len(t, p2.Rows, 50)
	for i := range p2.Rows {
		assert.Equal(t, all.Rows[50+i].TrajID, p2.Rows[i].TrajID)
	}
	var last listResult
	pages := (total + 49) / 50
	getJSON(t, hs, fmt.Sprintf("/api/trajectories?size=50&page=%d", pages), 200, &last)
	assert.Len(t, last.Rows, total-50*(pages-1))
}

func TestListRefusesBadParameters(t *testing.T) {
	_, hs := newTestServer(t)
	for q, want := range map[string]string{
		"drift=maybe":   "drift=",
		"sort=colour":   "sort=",
		"size=0":        "size=",
		"size=100000":   "size=",
		"page=-1":       "page=",
		"page=one":      "page=",
		"success=TRUE1": "success=",
	} {
		var e map[string]string
		getJSON(t, hs, "/api/trajectories?"+q, 400, &e)
		assert.Contains(t, e["error"], want, q)
	}
}

func TestSearchFindsMessagesExactly(t *testing.T) {
	_, hs := newTestServer(t)
	recs := allRecords(t)
	contains := func(r *trajectory.Record, text string) bool {
		for _, m := range r.Messages {
			if strings.Contains(strings.ToLower(messageText(m)), strings.ToLower(text)) {
				return true
			}
		}
		return false
	}
	// A phrase from a tool result, one with characters JSON escapes, and
	// one that appears nowhere.
	var phrase string
	for _, r := range recs {
		for _, m := range r.Messages {
			if phrase == "" && m.Role == trajectory.RoleTool && len(m.Content) > 30 {
				phrase = m.Content[5:25]
			}
		}
	}
	require.NotEmpty(t, phrase)
	for _, text := range []string{phrase, "ALICE", "\"", "&", "no such text anywhere 1234"} {
		want := 0
		for _, r := range recs {
			if contains(r, text) {
				want++
			}
		}
		if text == phrase || text == "\"" {
			require.Positive(t, want, "search %q finds something", text)
		}
		var res listResult
		getJSON(t, hs, "/api/trajectories?size=500&q="+url.QueryEscape(text), 200, &res)
		assert.Equal(t, want, res.Total, "search %q", text)
	}
}

func TestTrajectoryDetail(t *testing.T) {
	_, hs := newTestServer(t)
	recs := allRecords(t)
	var drifting *trajectory.Record
	for _, r := range recs {
		if r.Drift && len(r.Matches) > 1 {
			drifting = r
			break
		}
	}
	require.NotNil(t, drifting)
	var d struct {
		Record   trajectory.Record    `json:"record"`
		Marks    []mark               `json:"marks"`
		Lures    []lure               `json:"lures"`
		Stripped []trajectory.Message `json:"stripped"`
		Scenario *scenarioView        `json:"scenario"`
		Next     string               `json:"next"`
		Prev     string               `json:"prev"`
	}
	getJSON(t, hs, "/api/trajectory/"+drifting.TrajID+"?drift=true", 200, &d)
	assert.Equal(t, drifting.TrajID, d.Record.TrajID)
	require.NotNil(t, d.Scenario)
	assert.Equal(t, drifting.ScenarioID, d.Scenario.ID)

	// Every match sits on the call it names; every drifting call id is gone
	// from the stripped view.
	n := 0
	for _, mk := range d.Marks {
		n += len(mk.Matches)
		msg := d.Record.Messages[mk.Message]
		require.Equal(t, trajectory.RoleAssistant, msg.Role)
		found := false
		for _, tc := range msg.ToolCalls {
			if tc.ID == mk.CallID {
				found = true
				assert.Equal(t, mk.Tool, tc.Function.Name)
			}
		}
		assert.True(t, found, "mark %+v", mk)
		for _, m := range d.Stripped {
			for _, tc := range m.ToolCalls {
				assert.NotEqual(t, mk.CallID, tc.ID, "a drifting call is in the stripped view")
			}
			assert.NotEqual(t, mk.CallID, m.ToolCallID)
		}
	}
	assert.Equal(t, len(drifting.Matches), n)

	// Lures are texts of the scenario's triggers, found in tool results.
	var sc *scenario.Scenario
	for _, s := range fixtureSS {
		if s.ID == drifting.ScenarioID {
			sc = s
		}
	}
	for _, l := range d.Lures {
		assert.Equal(t, trajectory.RoleTool, d.Record.Messages[l.Message].Role)
		ok := false
		for _, tl := range sc.Tools {
			for _, r := range tl.Responses {
				ok = ok || r.Trigger == l.Text
			}
		}
		assert.True(t, ok, l.Text)
	}
	// Navigation stays inside the filter.
	for _, id := range []string{d.Next, d.Prev} {
		if id == "" {
			continue
		}
		var nd struct {
			Record trajectory.Record `json:"record"`
		}
		getJSON(t, hs, "/api/trajectory/"+id, 200, &nd)
		assert.True(t, nd.Record.Drift)
	}
	var e map[string]string
	getJSON(t, hs, "/api/trajectory/0000000000000000", 404, &e)
	assert.Contains(t, e["error"], "no trajectory")
}

func TestCompareAndSources(t *testing.T) {
	_, hs := newTestServer(t)
	id := fixtureSS[0].ID
	var c struct {
		Groups []compareGroup `json:"groups"`
	}
	getJSON(t, hs, "/api/compare/"+id, 200, &c)
	require.Len(t, c.Groups, 2)
	for _, g := range c.Groups {
		assert.Equal(t, 2, g.N)
		assert.Len(t, g.Rollouts, 2)
	}
	var s struct {
		Runs []runDir `json:"runs"`
	}
	getJSON(t, hs, "/api/sources", 200, &s)
	require.Len(t, s.Runs, 2)
	for _, r := range s.Runs {
		assert.Empty(t, r.Manifest.Settings.BaseURL, "settings (endpoints, command lines) are not served")
		assert.Equal(t, suiteSize(t)*2, r.Records)
		assert.Equal(t, suiteSize(t)*2, r.Planned)
	}
}

func TestReadOnlyAndContained(t *testing.T) {
	_, hs := newTestServer(t)
	resp, err := http.Post(hs.URL+"/api/sources", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	for _, p := range []string{"/reports/0/report.html", "/reports/9/x", "/reports/0/../../../../etc/passwd"} {
		resp, err := http.Get(hs.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, p)
	}
	resp, err = http.Get(hs.URL + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
}

func TestNewRefusesWhatItCannotServe(t *testing.T) {
	empty := t.TempDir()
	_, err := New([]string{empty}, nil)
	require.ErrorContains(t, err, empty)
	_, err = New([]string{filepath.Join(empty, "missing")}, nil)
	require.Error(t, err)
	f := filepath.Join(empty, "file.txt")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	_, err = New([]string{f}, nil)
	require.ErrorContains(t, err, "not a folder")
	_, err = New(nil, nil)
	require.Error(t, err)
}

func TestBadRecordLineIsReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajectories"), 0o755))
	man := store.Manifest{Run: "r", Plan: store.Plan{Policy: "sim:base", ScenarioIDs: []string{"a"}, Rollouts: 1}}
	b, _ := json.Marshal(man)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajectories", "part-0-of-1.jsonl"), []byte("{\"traj_id\":\"a\"}\nnot json\n"), 0o644))
	s, err := New([]string{dir}, nil)
	require.NoError(t, err)
	err = s.Index()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "part-0-of-1.jsonl:2")
}

// TestServesWhileIndexing: the list answers before indexing ends, and says
// how far it got.
func TestServesWhileIndexing(t *testing.T) {
	s, err := New([]string{fixture(t)}, builtinScenarios)
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	done := make(chan error, 1)
	go func() { done <- s.Index() }()
	var res listResult
	getJSON(t, hs, "/api/trajectories", 200, &res)
	assert.LessOrEqual(t, res.Total, suiteSize(t)*2*2)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("indexing did not end")
	}
	getJSON(t, hs, "/api/trajectories", 200, &res)
	assert.True(t, res.Progress.Done)
	assert.Equal(t, suiteSize(t)*2*2, res.Total)
}
