package envserver

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

const agentsFixture = "testdata/agents-items.jsonl"

// toAgentsItems writes a record as an Agents SDK run's input items
// (RunResult.to_input_list(): EasyInputMessage, ResponseOutputMessage with
// output_text parts, function_call, function_call_output), the agent's
// instructions given as a developer message; a second line whose first
// call output differs from the mock's.
func toAgentsItems(t *testing.T, rec *trajectory.Record) []byte {
	items := func(alter bool) []any {
		var out []any
		altered := false
		for _, m := range rec.Messages {
			switch m.Role {
			case trajectory.RoleSystem:
				out = append(out, map[string]any{"role": "developer", "content": m.Content})
			case trajectory.RoleUser:
				out = append(out, map[string]any{"role": "user", "content": m.Content})
			case trajectory.RoleAssistant:
				if m.Content != "" {
					out = append(out, map[string]any{"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
						"content": []any{map[string]any{"type": "output_text", "text": m.Content, "annotations": []any{}}}})
				}
				for _, c := range m.ToolCalls {
					out = append(out, map[string]any{"type": "function_call", "call_id": c.ID, "name": c.Function.Name, "arguments": c.Function.Arguments, "id": "fc_" + c.ID, "status": "completed"})
				}
			case trajectory.RoleTool:
				content := m.Content
				if alter && !altered {
					content, altered = `{"matches": []}`, true
				}
				out = append(out, map[string]any{"type": "function_call_output", "call_id": m.ToolCallID, "output": content})
			}
		}
		return out
	}
	var b strings.Builder
	for _, alter := range []bool{false, true} {
		line, err := json.Marshal(map[string]any{"scenario_id": rec.ScenarioID, "policy": "agents-sdk", "items": items(alter)})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// TestLabelAgentsItems: Agents SDK run items are labelled as the chat
// messages they stand for.
func TestLabelAgentsItems(t *testing.T) {
	if *update {
		if err := os.WriteFile(agentsFixture, toAgentsItems(t, served(t)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := testScenario(t)
	out := t.TempDir()
	run, err := store.Open(out, manifest([]*scenario.Scenario{s}), false)
	if err != nil {
		t.Fatal(err)
	}
	var got []Labelled
	cfg := LabelConfig{Scenarios: []*scenario.Scenario{s}, Engine: engine.Config{Checkpoint: testCk, Version: "test"}, Seed: testSeed}
	if err := LabelFile(agentsFixture, cfg, run, func(l Labelled) { got = append(got, l) }); err != nil {
		t.Fatal(err)
	}
	run.Close()
	if len(got) != 2 || !got[0].Consistent || got[1].Consistent || len(got[1].Mismatches) != 1 || got[1].Mismatches[0].Recorded != `{"matches": []}` {
		t.Fatalf("labelled: %+v", got)
	}
	recs := readRecords(t, out)
	want := served(t)
	a, w := *recs[0], *want
	a.Seed, w.Seed = 0, 0
	if g, x := identity(t, &a), identity(t, &w); g != x {
		t.Fatalf("labelled Agents SDK run:\n%s\nwant\n%s", g, x)
	}
	if _, err := agentsMessages([]json.RawMessage{json.RawMessage(`{"type": "web_search_call"}`)}); err == nil || !strings.Contains(err.Error(), `items[0]: item type "web_search_call" is not read`) {
		t.Errorf("unsupported item: %v", err)
	}
}
