package envserver

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// identity clears what a replay assigns anew: the episode's place in its
// run (traj_id, rollout), the policy's name and the timings.
func identity(t *testing.T, r *trajectory.Record) string {
	c := *r
	c.TrajID, c.Rollout = "", 0
	return comparable(t, &c)
}

// served is one episode served over HTTP, as its record.
func served(t *testing.T) *trajectory.Record {
	s := testScenario(t)
	x := startServer(t, t.TempDir(), nil)
	driveHTTP(t, x, s.ID, script(t, s))
	x.stop()
	recs := readRecords(t, x.dir)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	return recs[0]
}

// TestVerifyReproducesRecord: /verify on a served record replays it to the
// same record (labels included) and finds no difference.
func TestVerifyReproducesRecord(t *testing.T) {
	rec := served(t)
	x := startServer(t, t.TempDir(), nil)
	var v Verdict
	if st := post(t, x.ts.URL+"/verify", rec, &v); st != http.StatusOK {
		t.Fatalf("verify: %d", st)
	}
	if !v.Consistent || len(v.Mismatches) != 0 || len(v.Notes) != 0 {
		t.Fatalf("verdict: consistent %v, %+v, %v", v.Consistent, v.Mismatches, v.Notes)
	}
	if g, w := identity(t, v.Record), identity(t, rec); g != w {
		t.Fatalf("replayed record:\n%s\nwant\n%s", g, w)
	}
	if v.Record.Policy != "client:tester-http/verify" {
		t.Errorf("policy %q", v.Record.Policy)
	}
	if v.Rewards == nil || len(v.Rewards.Process) == 0 {
		t.Errorf("rewards %+v", v.Rewards)
	}
	x.stop()
	if recs := readRecords(t, x.dir); len(recs) != 1 || recs[0].TrajID != v.Record.TrajID {
		t.Errorf("verify wrote %d records", len(recs))
	}
}

// TestVerifyReportsDifferentResults: a trace whose tool results are not
// the mock's is reported, call by call.
func TestVerifyReportsDifferentResults(t *testing.T) {
	rec := served(t)
	i := -1
	for k, m := range rec.Messages {
		if m.Role == trajectory.RoleTool {
			i = k
			break
		}
	}
	rec.Messages[i].Content = `{"customers": []}`
	x := startServer(t, t.TempDir(), nil)
	var v Verdict
	post(t, x.ts.URL+"/verify", map[string]any{"scenario_id": rec.ScenarioID, "messages": rec.Messages, "dry_run": true}, &v)
	if v.Consistent || len(v.Mismatches) != 1 || v.Mismatches[0].Message != i || v.Mismatches[0].Recorded != `{"customers": []}` || v.Mismatches[0].Mock == "" {
		t.Fatalf("verdict: %+v", v)
	}
	var e errorBody
	if st := post(t, x.ts.URL+"/verify", map[string]any{"scenario_id": rec.ScenarioID, "messages": []any{map[string]any{"role": "robot"}}}, &e); st != http.StatusUnprocessableEntity || !strings.Contains(e.Detail, `messages[0].role "robot"`) {
		t.Errorf("bad trace: %d %+v", st, e)
	}
	x.stop()
	if recs := readRecords(t, x.dir); len(recs) != 0 {
		t.Errorf("dry_run wrote %d records", len(recs))
	}
}

// TestLabelFile: label on served records writes records equal to them;
// a rerun skips them; a bad line names the file and line.
func TestLabelFile(t *testing.T) {
	rec := served(t)
	s := testScenario(t)
	in := filepath.Join(t.TempDir(), "traces.jsonl")
	b, _ := json.Marshal(rec)
	openai, _ := json.Marshal(map[string]any{"scenario_id": rec.ScenarioID, "messages": rec.Messages, "policy": "agents-sdk"})
	os.WriteFile(in, []byte(string(b)+"\n\n"+string(openai)+"\n"), 0o644)
	out := t.TempDir()
	m := manifest([]*scenario.Scenario{s})
	cfg := LabelConfig{Scenarios: []*scenario.Scenario{s}, Engine: engine.Config{Checkpoint: testCk, Version: "test"}, Seed: testSeed}
	label := func() []Labelled {
		run, err := store.Open(out, m, false)
		if err != nil {
			t.Fatal(err)
		}
		defer run.Close()
		var got []Labelled
		if err := LabelFile(in, cfg, run, func(l Labelled) { got = append(got, l) }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := label()
	if len(got) != 2 || !got[0].Consistent || !got[1].Consistent || got[0].Line != 1 || got[1].Line != 3 {
		t.Fatalf("labelled: %+v", got)
	}
	recs := readRecords(t, out)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if g, w := identity(t, r), identity(t, rec); g != w && r.Seed == rec.Seed {
			t.Fatalf("labelled record:\n%s\nwant\n%s", g, w)
		}
	}
	if recs[1].Policy != "client:agents-sdk/label" {
		t.Errorf("policy %q", recs[1].Policy)
	}
	if again := label(); !again[0].Skipped || !again[1].Skipped {
		t.Errorf("rerun: %+v", again)
	}
	os.WriteFile(in, []byte(string(b)+"\n{\"scenario_id\": \"nope\", \"messages\": []}\n"), 0o644)
	run, _ := store.Open(t.TempDir(), m, false)
	defer run.Close()
	err := LabelFile(in, cfg, run, func(Labelled) {})
	if err == nil || !strings.Contains(err.Error(), "traces.jsonl:2:") || !strings.Contains(err.Error(), `scenario "nope"`) {
		t.Errorf("bad line: %v", err)
	}
}
