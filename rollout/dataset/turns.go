package dataset

import (
	"encoding/json"
	"fmt"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// CompletionTurn is the per-turn layout of the KTO and rewards tables (their
// default): one row per assistant turn after the first user message, the
// prompt being the conversation up to that turn (tool results included) and
// the completion that one turn. Every call in a completion was written after
// the tool results it can draw on, all of which are in its prompt.
const CompletionTurn Completion = "turn"

// PreOnset says how the KTO table labels the turns of a drifting
// trajectory that come before its drift onset (the first drifting turn).
// Those turns were made by a policy that went on to drift, but are not
// drift themselves: nothing in the trajectory says whether they were good.
type PreOnset string

const (
	// PreOnsetDrop leaves them out (the default): only turns the
	// trajectory's labels speak for are kept.
	PreOnsetDrop PreOnset = "drop"
	// PreOnsetDesirable labels them desirable, as the turns of a clean
	// success would be.
	PreOnsetDesirable PreOnset = "desirable"
	// PreOnsetUndesirable labels them undesirable, as the whole trajectory.
	PreOnsetUndesirable PreOnset = "undesirable"
)

// ParsePreOnset reads a --pre-onset value ("" is drop).
func ParsePreOnset(s string) (PreOnset, error) {
	switch p := PreOnset(s); p {
	case "":
		return PreOnsetDrop, nil
	case PreOnsetDrop, PreOnsetDesirable, PreOnsetUndesirable:
		return p, nil
	}
	return "", fmt.Errorf("pre-onset %q: want drop, desirable or undesirable", s)
}

// Describe says in a sentence how the turns before the onset are labelled.
func (p PreOnset) Describe() string {
	switch p {
	case PreOnsetDesirable:
		return "turns of a drifting trajectory before its drift onset are labelled desirable (`--pre-onset desirable`)"
	case PreOnsetUndesirable:
		return "turns of a drifting trajectory before its drift onset are labelled undesirable, like the rest of it (`--pre-onset undesirable`)"
	}
	return "turns of a drifting trajectory before its drift onset are left out (`--pre-onset drop`, the default: the trajectory's labels say nothing about them); `--pre-onset desirable|undesirable` keeps them"
}

// DriftOnset is the message index of a drifting trajectory's first drifting
// turn (the smallest turn among its drift matches), or -1 when it does not
// drift. A record marked drifting without matches drifts from its first
// assistant turn.
func DriftOnset(rec *trajectory.Record) int {
	if !rec.Drift {
		return -1
	}
	onset := -1
	for _, m := range rec.Matches {
		if m.Turn >= 0 && (onset < 0 || m.Turn < onset) {
			onset = m.Turn
		}
	}
	if onset < 0 {
		for i, m := range rec.Messages {
			if m.Role == trajectory.RoleAssistant {
				return i
			}
		}
	}
	return onset
}

// Turn is one assistant turn of a record, cut for a per-turn table.
type Turn struct {
	Index      int // the turn's message index in the record
	Prompt     []json.RawMessage
	Completion []json.RawMessage // the one assistant turn
	Tools      []json.RawMessage // the tools visible at this turn
}

// Turns cuts a record into its assistant turns after the first user
// message (SplitPrompt's cut): each with the conversation before it as the
// prompt, rendered as the model saw it (the framework's text view for a
// text protocol), and the tools the request of that turn carried.
func Turns(rec *trajectory.Record, o RenderOptions) []Turn {
	prompt, _ := SplitPrompt(rec.Messages)
	var out []Turn
	for k := len(prompt); k < len(rec.Messages); k++ {
		if rec.Messages[k].Role != trajectory.RoleAssistant {
			continue
		}
		out = append(out, turnAt(rec, k, o))
	}
	return out
}

// ToolsAt is the tools column of the request that produced the assistant
// message at index turn: the record's tools (in their order) that the
// step of that turn lists as visible. A record without step notes for the
// turn gives every tool (Tools).
func ToolsAt(rec *trajectory.Record, turn int) []json.RawMessage {
	all := Tools(rec)
	if len(all) == 0 {
		return all
	}
	for _, s := range rec.Steps {
		if s.Turn != turn {
			continue
		}
		return visibleTools(all, s.Visible)
	}
	return all
}

// FirstRequestTools are the tools the episode's first request carried
// (the first step's visible tools; every tool when the record has no
// step notes): with the prompt, what a GRPO group shares.
func FirstRequestTools(rec *trajectory.Record) []json.RawMessage {
	all := Tools(rec)
	if len(all) == 0 || len(rec.Steps) == 0 {
		return all
	}
	first := rec.Steps[0]
	for _, s := range rec.Steps[1:] {
		if s.Turn < first.Turn {
			first = s
		}
	}
	return visibleTools(all, first.Visible)
}

func visibleTools(all []json.RawMessage, visible []string) []json.RawMessage {
	names := make(map[string]bool, len(visible))
	for _, v := range visible {
		names[v] = true
	}
	out := []json.RawMessage{}
	for _, t := range all {
		var w struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(t, &w) == nil && names[w.Function.Name] {
			out = append(out, t)
		}
	}
	return out
}

// TurnLabel is the KTO label of the assistant turn at message index turn
// of rec, and whether the turn is kept: a clean success's turns are
// desirable; a drifting trajectory's turns at or after its drift onset are
// undesirable, those before it as pre says; a failure without drift is
// undesirable throughout (the task was not done: the overcautious refusals
// among them are what KTO should push down).
func TurnLabel(rec *trajectory.Record, turn int, pre PreOnset) (label, keep bool) {
	switch {
	case rec.Clean():
		return true, true
	case rec.Drift:
		if turn >= DriftOnset(rec) {
			return false, true
		}
		switch pre {
		case PreOnsetDesirable:
			return true, true
		case PreOnsetUndesirable:
			return false, true
		}
		return false, false
	}
	return false, true
}

// TrainMask marks each rendered message 1 when the model wrote it (an
// assistant turn) and 0 otherwise (tool results, observations): the
// per-message loss mask of a completion that keeps the environment's text.
func TrainMask(msgs []json.RawMessage) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		var r struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(m, &r) == nil && r.Role == trajectory.RoleAssistant {
			out[i] = 1
		}
	}
	return out
}

// KTOTurnRow is the KTO row of the assistant turn at message index turn of
// rec (one of KTOUnits), labelled label.
func KTOTurnRow(rec *trajectory.Record, turn int, label bool, split string, reward float64, o RenderOptions) KTORow {
	t := turnAt(rec, turn, o)
	row := KTORow{
		Prompt: t.Prompt, Completion: t.Completion, Label: label, Tools: t.Tools, Turn: int64(t.Index),
		TrajID: rec.TrajID, ScenarioID: rec.ScenarioID, Domain: rec.Domain, Split: split, Checkpoint: rec.Checkpoint,
		Framework: rec.Framework, ToolFormat: FormatOf(rec.Framework).String(), Success: rec.Success, Drift: rec.Drift, Reward: reward, SchemaVersion: SchemaVersion,
	}
	row.PromptTokensEst, row.CompletionTokensEst = EstimatePromptTokens(row.Prompt, row.Tools), EstimateTokens(row.Completion)
	return row
}

func turnAt(rec *trajectory.Record, k int, o RenderOptions) Turn {
	t := Turn{Index: k, Prompt: RenderWith(rec, rec.Messages[:k], o),
		Completion: RenderWith(rec, rec.Messages[k:k+1], o), Tools: ToolsAt(rec, k)}
	t.Prompt, t.Tools = FinishRow(o, t.Prompt, t.Tools, &t.Completion)
	return t
}
