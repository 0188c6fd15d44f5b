package envserver

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var update = flag.Bool("update", false, "rewrite testdata/inspect-log.json from a served episode")

const inspectFixture = "testdata/inspect-log.json"

// toInspect writes a record as inspect-ai's EvalLog JSON
// (src/inspect_ai/log/_log.py, model/_chat_message.py, tool/_tool_call.py):
// content parts on assistant turns, arguments as objects, the tool
// message's function name; a second sample whose first tool result differs
// from the mock's and a third whose tool failed (inspect's "error").
func toInspect(t *testing.T, rec *trajectory.Record) []byte {
	msgs := func(alter func(i int, m map[string]any)) []any {
		var out []any
		for i, m := range rec.Messages {
			o := map[string]any{"role": m.Role, "source": "generate"}
			switch m.Role {
			case trajectory.RoleAssistant:
				o["content"] = []any{map[string]any{"type": "text", "text": m.Content}}
				var calls []any
				for _, c := range m.ToolCalls {
					var args any
					json.Unmarshal(c.Function.Parsed, &args)
					calls = append(calls, map[string]any{"id": c.ID, "function": c.Function.Name, "arguments": args, "type": "function"})
				}
				if calls != nil {
					o["tool_calls"] = calls
				}
			case trajectory.RoleTool:
				o["content"], o["tool_call_id"], o["function"] = m.Content, m.ToolCallID, m.Name
			default:
				o["content"], o["source"] = m.Content, "input"
			}
			if alter != nil {
				alter(i, o)
			}
			out = append(out, o)
		}
		return out
	}
	firstTool := -1
	for i, m := range rec.Messages {
		if m.Role == trajectory.RoleTool {
			firstTool = i
			break
		}
	}
	log := map[string]any{
		"version": 2, "status": "success",
		"eval": map[string]any{"task": "antidrift", "model": "openai/gpt-4o-mini", "created": "2026-12-05T00:00:00+00:00"},
		"samples": []any{
			map[string]any{"id": rec.ScenarioID, "epoch": 1, "messages": msgs(nil)},
			map[string]any{"id": 2, "epoch": 1, "metadata": map[string]any{"scenario_id": rec.ScenarioID}, "messages": msgs(func(i int, o map[string]any) {
				if i == firstTool {
					o["content"] = `{"matches": [{"customer_id": "BC-99999"}]}`
				}
			})},
			map[string]any{"id": 3, "epoch": 1, "metadata": map[string]any{"scenario_id": rec.ScenarioID}, "messages": msgs(func(i int, o map[string]any) {
				if i == firstTool {
					o["content"], o["error"] = "", map[string]any{"type": "timeout", "message": "Command timed out before completing."}
				}
			})},
		},
	}
	b, err := json.MarshalIndent(log, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestLabelInspectLog: an inspect-ai JSON log is labelled sample by sample;
// the faithful sample reproduces the served record, the others are
// reported where their tool results differ from the mock's.
func TestLabelInspectLog(t *testing.T) {
	if *update {
		if err := os.WriteFile(inspectFixture, toInspect(t, served(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(inspectFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !IsInspectLog(b) {
		t.Fatal("the fixture is not recognised as an inspect-ai log")
	}
	s := testScenario(t)
	out := t.TempDir()
	run, err := store.Open(out, manifest([]*scenario.Scenario{s}), false)
	if err != nil {
		t.Fatal(err)
	}
	var got []Labelled
	cfg := LabelConfig{Scenarios: []*scenario.Scenario{s}, Engine: engine.Config{Checkpoint: testCk, Version: "test"}, Seed: testSeed, Rewards: testScorer}
	if err := LabelFile(inspectFixture, cfg, run, func(l Labelled) { got = append(got, l) }); err != nil {
		t.Fatal(err)
	}
	run.Close()
	if len(got) != 3 || !got[0].Consistent || got[1].Consistent || got[2].Consistent {
		t.Fatalf("labelled: %+v", got)
	}
	if m := got[1].Mismatches; len(m) != 1 || m[0].Tool != "search_customers" || m[0].Recorded != `{"matches": [{"customer_id": "BC-99999"}]}` {
		t.Errorf("sample 2 mismatches: %+v", m)
	}
	if m := got[2].Mismatches; len(m) != 1 || m[0].Recorded != `{"error":"Command timed out before completing."}` {
		t.Errorf("sample 3 mismatches: %+v", m)
	}
	recs := readRecords(t, out)
	if len(recs) != 3 || recs[0].Policy != "client:openai-gpt-4o-mini/label" {
		t.Fatalf("%d records, policy %q", len(recs), recs[0].Policy)
	}
	// The faithful sample is the served episode (its seed aside: an
	// inspect log carries none, so the seed is the label run's).
	want := served(t)
	a, w := *recs[0], *want
	a.Seed, w.Seed = 0, 0
	if g, x := identity(t, &a), identity(t, &w); g != x {
		t.Fatalf("labelled inspect sample:\n%s\nwant\n%s", g, x)
	}
}
