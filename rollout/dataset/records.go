package dataset

import (
	"sort"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// DecodePrompt decodes a record line with the text of its prompt (as
// SplitPrompt cuts it) and its tools, and only the shape of the rest:
// roles, whether each tool call's arguments parsed as an object, steps'
// turns and visible tools, labels and the judge's score
// (store.DecodeRecordPrompt). It accepts and refuses what
// store.DecodeRecord does. For readers of the first request and the
// labels, such as the rewards table's first pass.
func DecodePrompt(b []byte, r *trajectory.Record) error {
	return store.DecodeRecordPrompt(b, r, func(ms []trajectory.Message) int {
		p, _ := SplitPrompt(ms)
		return len(p)
	})
}

// SplitPrompt cuts a conversation for unpaired and RL tables: the prompt is
// every message up to and including the first user message, the completion
// is the rest. Without a user message the prompt is the leading system
// messages.
func SplitPrompt(ms []trajectory.Message) (prompt, completion []trajectory.Message) {
	cut := -1
	for i, m := range ms {
		if m.Role == trajectory.RoleUser {
			cut = i + 1
			break
		}
	}
	if cut < 0 {
		cut = 0
		for cut < len(ms) && ms[cut].Role == trajectory.RoleSystem {
			cut++
		}
	}
	return ms[:cut], ms[cut:]
}

// DriftLabels returns the distinct drift types, violation kinds and
// provisions of a trajectory's counted drift matches (each drifting call
// once by type: Record.CountedMatches), each sorted.
func DriftLabels(rec *trajectory.Record) (types, kinds, provisions []string) {
	t, k, p := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, m := range rec.CountedMatches() {
		if m.Drift != "" {
			t[string(m.Drift)] = true
		}
		if m.Kind != "" {
			k[string(m.Kind)] = true
		}
		for _, v := range m.Provisions {
			p[v] = true
		}
	}
	return sortedKeys(t), sortedKeys(k), sortedKeys(p)
}

// TrajectoryRowOf is the trajectories-table row of a record.
func TrajectoryRowOf(rec *trajectory.Record, split string) TrajectoryRow {
	return TrajectoryRowWith(rec, split, RenderOptions{})
}

// TrajectoryRowWith is TrajectoryRowOf with rendering options.
func TrajectoryRowWith(rec *trajectory.Record, split string, o RenderOptions) TrajectoryRow {
	types, kinds, provs := DriftLabels(rec)
	steps := make([]int64, len(rec.DriftSteps))
	for i, s := range rec.DriftSteps {
		steps[i] = int64(s)
	}
	msgs, tools := RenderWith(rec, rec.Messages, o), Tools(rec)
	msgs, tools = FinishRow(o, msgs, tools)
	return TrajectoryRow{
		TrajID: rec.TrajID, Run: rec.Run, Checkpoint: rec.Checkpoint, Policy: rec.Policy, Framework: rec.Framework,
		ScenarioID: rec.ScenarioID, Domain: rec.Domain, Split: split, Rollout: rec.Rollout, Seed: rec.Seed,
		Messages: msgs, Tools: tools, ToolFormat: FormatOf(rec.Framework).String(),
		Status: string(rec.Status), Success: rec.Success, Drift: rec.Drift, Clean: rec.Clean(),
		DriftSteps: steps, DriftTypes: types, ViolationKinds: kinds, Provisions: provs,
		JudgeKind: rec.Judge.Kind, JudgeScore: rec.Judge.Score, JudgeReason: rec.Judge.Reason,
		PromptTokens: int64(rec.Usage.PromptTokens), CompletionTokens: int64(rec.Usage.CompletionTokens),
		ToolkitVersion: rec.Version, SchemaVersion: SchemaVersion,
	}
}

// KTORowOf is the KTO row of a record: prompt and completion as SplitPrompt
// cuts them (the completion in the layout of RenderOptions.Completion:
// the model's turns only by default), label = clean (success and no
// drift).
func KTORowOf(rec *trajectory.Record, split string, reward float64) KTORow {
	return KTORowWith(rec, split, reward, RenderOptions{})
}

// KTORowWith is KTORowOf with rendering options.
func KTORowWith(rec *trajectory.Record, split string, reward float64, o RenderOptions) KTORow {
	p, c := SplitPrompt(rec.Messages)
	row := KTORow{
		Prompt: RenderWith(rec, p, o), Completion: RenderCompletion(rec, c, o), Label: rec.Clean(), Tools: Tools(rec), Turn: int64(len(p)),
		TrajID: rec.TrajID, ScenarioID: rec.ScenarioID, Domain: rec.Domain, Split: split, Checkpoint: rec.Checkpoint,
		Framework: rec.Framework, ToolFormat: FormatOf(rec.Framework).String(), Success: rec.Success, Drift: rec.Drift, Reward: reward, SchemaVersion: SchemaVersion,
	}
	row.Prompt, row.Tools = FinishRow(o, row.Prompt, row.Tools, &row.Completion)
	row.PromptTokensEst, row.CompletionTokensEst = EstimatePromptTokens(row.Prompt, row.Tools), EstimateTokens(row.Completion)
	return row
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
