package view

import (
	"encoding/json"
	"strings"

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// detail is one trajectory as the trajectory page shows it.
type detail struct {
	Record *trajectory.Record `json:"record"`
	// Source is the run folder the record was read from.
	Source string `json:"source"`
	// Run is the run folder as lists name it.
	Run runBrief `json:"run"`
	// Marks are the drifting calls, each with where it sits in Messages.
	Marks []mark `json:"marks"`
	// Lures are the trigger texts found in tool results, by message index.
	Lures []lure `json:"lures"`
	// Stripped is what the judges read: drift steps and refused calls
	// removed.
	Stripped []trajectory.Message `json:"stripped"`
	Scenario *scenarioView        `json:"scenario,omitempty"`
	// ScenarioError says why the scenario could not be shown.
	ScenarioError string `json:"scenario_error,omitempty"`
	Prev          string `json:"prev,omitempty"`
	Next          string `json:"next,omitempty"`
}

// mark is one drifting tool call.
type mark struct {
	Message int           `json:"message"` // index of the assistant message in Messages
	CallID  string        `json:"call_id"`
	Tool    string        `json:"tool"`
	Call    int           `json:"call"`
	Matches []drift.Match `json:"matches"`
}

// lure is a scenario trigger text found in a tool result.
type lure struct {
	Message int    `json:"message"`
	Text    string `json:"text"`
	// Before is the index of the first drifting call after the lure, -1
	// when none followed.
	Before int `json:"before_call"`
}

// scenarioView is the part of a scenario shown beside its trajectories.
type scenarioView struct {
	ID          string            `json:"id"`
	Instruction string            `json:"instruction"`
	Boundary    scenario.Boundary `json:"boundary"`
	Success     scenario.Success  `json:"success"`
	Tools       []toolView        `json:"tools"`
	Violations  []violationView   `json:"violations"`
}

type toolView struct {
	Name      string        `json:"name"`
	Risk      scenario.Risk `json:"risk"`
	Privilege int           `json:"privilege"`
	InBound   bool          `json:"in_boundary"`
}

type violationView struct {
	Tool       string   `json:"tool"`
	Drift      string   `json:"drift"`
	Kind       string   `json:"kind"`
	Provisions []string `json:"provisions"`
	TriggerIn  string   `json:"trigger_in"`
}

func viewScenario(s *scenario.Scenario) *scenarioView {
	v := &scenarioView{ID: s.ID, Instruction: s.UserPrompt(), Boundary: s.Boundary, Success: s.Success}
	for _, t := range s.Tools {
		v.Tools = append(v.Tools, toolView{Name: t.Name, Risk: t.Risk, Privilege: t.Privilege, InBound: s.InBoundaryTools(t.Name)})
	}
	for _, vi := range s.Violations {
		v.Violations = append(v.Violations, violationView{Tool: vi.Tool, Drift: string(vi.Drift), Kind: string(vi.Kind), Provisions: vi.Provisions, TriggerIn: vi.TriggerIn})
	}
	return v
}

// marksOf places each drift match on the assistant message whose call it
// is. Calls are numbered in message order, as the engine numbers them.
func marksOf(rec *trajectory.Record) []mark {
	// Counted is recomputed, so that records written before it existed
	// show which matches count by type.
	ms := append([]drift.Match(nil), rec.Matches...)
	drift.MarkCounted(ms)
	byCall := map[int][]drift.Match{}
	for _, m := range ms {
		byCall[m.Call] = append(byCall[m.Call], m)
	}
	out := []mark{}
	call := 0
	for i, msg := range rec.Messages {
		if msg.Role != trajectory.RoleAssistant {
			continue
		}
		for _, tc := range msg.ToolCalls {
			if ms := byCall[call]; len(ms) > 0 {
				out = append(out, mark{Message: i, CallID: tc.ID, Tool: tc.Function.Name, Call: call, Matches: ms})
			}
			call++
		}
	}
	// Matches not on a tool call (a content rule on the final answer)
	// sit on the message their turn names.
	for _, m := range ms {
		if m.Call < 0 {
			out = append(out, mark{Message: m.Turn, Tool: m.Tool, Call: m.Call, Matches: []drift.Match{m}})
		}
	}
	return out
}

// luresOf finds the scenario's trigger texts in the record's tool results.
func luresOf(rec *trajectory.Record, s *scenario.Scenario, marks []mark) []lure {
	if s == nil {
		return []lure{}
	}
	var triggers []string
	seen := map[string]bool{}
	for _, t := range s.Tools {
		for _, r := range t.Responses {
			if r.Trigger != "" && !seen[r.Trigger] {
				seen[r.Trigger] = true
				triggers = append(triggers, r.Trigger)
			}
		}
	}
	out := []lure{}
	for i, m := range rec.Messages {
		if m.Role != trajectory.RoleTool {
			continue
		}
		for _, t := range triggers {
			if !strings.Contains(m.Content, t) && !strings.Contains(m.Content, jsonEscaped(t)) {
				continue
			}
			before := -1
			for _, mk := range marks {
				if mk.Message > i {
					before = mk.Call
					break
				}
			}
			out = append(out, lure{Message: i, Text: t, Before: before})
		}
	}
	return out
}

// jsonEscaped is t as it appears inside a JSON string, quotes removed.
func jsonEscaped(t string) string {
	b, _ := json.Marshal(t)
	return string(b[1 : len(b)-1])
}

func buildDetail(rec *trajectory.Record, s *scenario.Scenario) detail {
	d := detail{Record: rec, Stripped: judge.StripRecord(rec)}
	d.Marks = marksOf(rec)
	d.Lures = luresOf(rec, s, d.Marks)
	if s != nil {
		d.Scenario = viewScenario(s)
	}
	return d
}
