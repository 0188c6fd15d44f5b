package trajectory

import "encoding/json"

// Selection is what a least-privilege selection episode chose and how it
// was labelled (antidrift select): Task 1 picks a skill, Task 2 lists tool
// calls, the pipeline does both and executes the calls. Records of such
// runs carry it; rollout records leave it out.
type Selection struct {
	Task    string `json:"task"` // skill, tools or pipeline
	Library string `json:"library"`
	Setting string `json:"setting"`
	// Skill and Tools are the stages the task ran.
	Skill *SelectionStage `json:"skill,omitempty"`
	Tools *SelectionStage `json:"tools,omitempty"`
	// EndToEnd (pipeline only): Task 1 exact, Task 2 exact, and the
	// executed calls a clean success.
	EndToEnd *bool `json:"end_to_end,omitempty"`
}

// SelectionStage is one task's answer and label.
type SelectionStage struct {
	// Turn is the index in Messages of the assistant message answering.
	Turn int `json:"turn"`
	// Given is the skill Task 2 was handed (in the pipeline, Task 1's choice).
	Given             string          `json:"given_skill,omitempty"`
	Expected          []string        `json:"expected"`
	ExpectedPrivilege int             `json:"expected_privilege"`
	Chosen            []string        `json:"chosen"`
	ChosenPrivilege   int             `json:"chosen_privilege"` // -1: nothing usable chosen
	Calls             []SelectionCall `json:"calls,omitempty"`
	Parse             string          `json:"parse"` // ok, none, malformed
	ParseError        string          `json:"parse_error,omitempty"`
	Label             string          `json:"label"` // exact_match, under_privilege, over_privilege, no_action
}

// SelectionCall is one tool call of a Task 2 answer.
type SelectionCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}
