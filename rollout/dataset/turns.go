package dataset

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

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
	tl := newToolList(rec)
	// Native tool calling renders each message on its own, so every
	// turn's prompt is a prefix of the whole conversation rendered once:
	// rendering it per turn cost time quadratic in its length. A text
	// view may rewrite across messages, so it renders each cut.
	var whole []json.RawMessage
	if textView(rec.Framework) == nil {
		whole = MessagesWith(rec.Messages, o)
	}
	var out []Turn
	for k := len(prompt); k < len(rec.Messages); k++ {
		if rec.Messages[k].Role != trajectory.RoleAssistant {
			continue
		}
		t := Turn{Index: k, Tools: tl.at(rec, k)}
		if whole != nil {
			// the headers copied, the shared bytes not: a row that
			// replaces one of its messages leaves the others' alone
			t.Prompt, t.Completion = slices.Clone(whole[:k]), []json.RawMessage{whole[k]}
		} else {
			t.Prompt, t.Completion = RenderWith(rec, rec.Messages[:k], o), RenderWith(rec, rec.Messages[k:k+1], o)
		}
		t.Prompt, t.Tools = FinishRow(o, t.Prompt, t.Tools, &t.Completion)
		out = append(out, t)
	}
	return out
}

// ToolsAt is the tools column of the request that produced the assistant
// message at index turn: the record's tools (in their order) that the
// step of that turn lists as visible. A record without step notes for the
// turn gives every tool (Tools).
func ToolsAt(rec *trajectory.Record, turn int) []json.RawMessage {
	return newToolList(rec).at(rec, turn)
}

// FirstRequestTools are the tools the episode's first request carried
// (the first step's visible tools; every tool when the record has no
// step notes): with the prompt, what a GRPO group shares.
func FirstRequestTools(rec *trajectory.Record) []json.RawMessage {
	tl := newToolList(rec)
	if len(tl.all) == 0 || len(rec.Steps) == 0 {
		return tl.all
	}
	first := rec.Steps[0]
	for _, s := range rec.Steps[1:] {
		if s.Turn < first.Turn {
			first = s
		}
	}
	return tl.visible(first.Visible)
}

// toolList is a record's tools column with each tool's function name, read
// once for all of the record's turns.
type toolList struct {
	all   []json.RawMessage
	names []string
	named []bool // false: the tool did not decode, and is never visible
}

func newToolList(rec *trajectory.Record) toolList {
	tl := toolList{all: Tools(rec)}
	if len(tl.all) == 0 {
		return tl
	}
	tl.names, tl.named = make([]string, len(tl.all)), make([]bool, len(tl.all))
	for i, t := range tl.all {
		tl.names[i], tl.named[i] = toolName(t)
	}
	return tl
}

// at is ToolsAt over the list.
func (tl toolList) at(rec *trajectory.Record, turn int) []json.RawMessage {
	if len(tl.all) == 0 {
		return tl.all
	}
	for _, s := range rec.Steps {
		if s.Turn == turn {
			return tl.visible(s.Visible)
		}
	}
	return tl.all
}

// visible are the tools whose function name is in visible, in the
// record's order.
func (tl toolList) visible(visible []string) []json.RawMessage {
	n := 0
	for i := range tl.all {
		if tl.named[i] && slices.Contains(visible, tl.names[i]) {
			n++
		}
	}
	out := make([]json.RawMessage, 0, n) // sized: one allocation a turn
	for i, t := range tl.all {
		if tl.named[i] && slices.Contains(visible, tl.names[i]) {
			out = append(out, t)
		}
	}
	return out
}

// toolNames memoises toolName by a tool's bytes: a run has only as many
// distinct tools as its scenarios, and decoding each tool's JSON again for
// every turn of every record took a fifth of rewards' time. Bounded like
// wireOrders.
var toolNames = struct {
	sync.RWMutex
	m map[string]namedTool
}{m: map[string]namedTool{}}

type namedTool struct {
	name string
	ok   bool
}

// toolName is the function name of a tools-column entry, and whether it
// decoded (encoding/json's reading: the same name as before the memo).
func toolName(t json.RawMessage) (string, bool) {
	toolNames.RLock()
	n, hit := toolNames.m[string(t)]
	toolNames.RUnlock()
	if hit {
		return n.name, n.ok
	}
	var w struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	n.ok = json.Unmarshal(t, &w) == nil
	n.name = w.Function.Name
	toolNames.Lock()
	if len(toolNames.m) < wireOrdersMax {
		toolNames.m[string(t)] = n
	}
	toolNames.Unlock()
	return n.name, n.ok
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
