package rewards

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"sort"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TableOptions decide the split column of the rewards table; use the same
// ratios and seed as for pairs so that both tables agree.
type TableOptions struct {
	Ratios dataset.Ratios
	Seed   int64
	// Render chooses what rendered messages carry: the model's reasoning
	// is left out unless Render.Reasoning is set.
	Render dataset.RenderOptions
	// Keep, when set, decides whether a row goes in the table (e.g. a
	// length bound: export.Writer.Admit). Rows it refuses are left out
	// before the group's advantages are computed, so the advantages of
	// the rows kept are TRL's formula over the rows in the file.
	Keep func(*dataset.RewardRow) (bool, error)
	// Scenarios, when set, fill the boundary_tools column.
	Scenarios map[string]*scenario.Scenario
}

// GroupID names a GRPO group: the rollouts of one scenario under one
// checkpoint (and one framework), "SCENARIO@CHECKPOINT", with "[FRAMEWORK]"
// appended for a framework other than normal.
func GroupID(scenarioID, checkpoint, framework string) string {
	id := scenarioID + "@" + checkpoint
	if framework != "" && framework != "normal" {
		id += "[" + framework + "]"
	}
	return id
}

// Summary describes a rewards table.
type Summary struct {
	Rows           int `json:"rows"`
	Groups         int `json:"groups"`
	SingletonGroup int `json:"singleton_groups"` // groups of one, whose advantage is 0
	ZeroStdGroups  int `json:"zero_std_groups"`  // groups of equal rewards: no learning signal
	// NoCompletion counts trajectories left out because nothing follows
	// their prompt (no assistant turn): no row, no group member.
	NoCompletion int `json:"no_completion"`
	// SplitPrompts counts (scenario, checkpoint, framework) groups whose
	// rollouts were sent different prompts (runs of one scenario id whose
	// text differs): each prompt is its own GRPO group, never one.
	SplitPrompts int                 `json:"split_prompt_groups"`
	Checkpoints  []CheckpointSummary `json:"checkpoints"`
	Splits       map[string]int      `json:"splits"`
	// RawArguments counts trajectories left out because a tool call's
	// arguments never parsed as an object (no {"_raw": …} in a training row).
	RawArguments int `json:"unparsed_arguments"`
	// Dropped counts rows TableOptions.Keep refused (e.g. over
	// --max-tokens); GroupsDropped the groups left with no row.
	Dropped       int `json:"dropped_rows"`
	GroupsDropped int `json:"dropped_groups"`
	byCheckpoint  map[string]*CheckpointSummary
}

// CheckpointSummary holds one checkpoint's figures.
type CheckpointSummary struct {
	Checkpoint   string  `json:"checkpoint"`
	Trajectories int     `json:"trajectories"`
	Groups       int     `json:"groups"`
	MeanReward   float64 `json:"mean_reward"`
	MinReward    float64 `json:"min_reward"`
	MaxReward    float64 `json:"max_reward"`
	Successes    int     `json:"successes"`
	Drifting     int     `json:"drifting"`
	Clean        int     `json:"clean"`
}

// Table scores every trajectory of the index and emits one row per
// trajectory (prompt and completion cut by dataset.SplitPrompt, as the KTO
// table does), with its group-relative advantage, ordered by scenario,
// checkpoint name and traj_id. Memory holds one scenario's records at a time.
func Table(ix *dataset.Index, cfg Config, opt TableOptions, emit func(*dataset.RewardRow) error) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sum := &Summary{Splits: map[string]int{}, byCheckpoint: map[string]*CheckpointSummary{}}
	for _, sid := range ix.Scenarios() {
		recs, err := ix.Load(sid)
		if err != nil {
			return nil, err
		}
		// A GRPO group is the rollouts of one prompt: one scenario under
		// one checkpoint and framework, and the same prompt text and tools
		// (runs of one scenario id may differ in text).
		groups := map[[3]string][]*trajectory.Record{}
		prompts := map[[2]string]map[string]bool{}
		var keys [][3]string
		for _, r := range recs {
			if !r.Status.Scored() {
				continue // trajectory.Status.Scored: not the policy's behaviour
			}
			prompt, completion := dataset.SplitPrompt(r.Messages)
			if len(completion) == 0 {
				sum.NoCompletion++
				continue
			}
			k := [3]string{r.Checkpoint, r.Framework, promptHash(prompt, r.Tools)}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
				pk := [2]string{k[0], k[1]}
				if prompts[pk] == nil {
					prompts[pk] = map[string]bool{}
				}
				prompts[pk][k[2]] = true
			}
			groups[k] = append(groups[k], r)
		}
		for _, ps := range prompts {
			if len(ps) > 1 {
				sum.SplitPrompts++
			}
		}
		// by name: rows never depend on the order runs are given in
		sort.Slice(keys, func(i, j int) bool {
			for f := 0; f < 3; f++ {
				if keys[i][f] != keys[j][f] {
					return keys[i][f] < keys[j][f]
				}
			}
			return false
		})
		split := dataset.SplitOf(sid, opt.Ratios, opt.Seed)
		boundary := []string{}
		if s := opt.Scenarios[sid]; s != nil {
			boundary = append(boundary, s.Boundary.Tools...)
			sort.Strings(boundary)
		}
		for _, k := range keys {
			ck := k[0]
			// A group's advantages are computed over the rows the file
			// keeps (rows with unparsed arguments or over opt.Keep's bound
			// left out first), so that they equal TRL's formula over what
			// a trainer reads.
			var rows []*dataset.RewardRow
			var kept []*trajectory.Record
			for _, r := range groups[k] {
				if dataset.FormatOf(r.Framework) == dataset.ToolsNative && dataset.RawArguments(r.Messages) {
					sum.RawArguments++
					continue
				}
				res, err := cfg.Score(r)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", ix.Where(r.TrajID), err)
				}
				prompt, completion := dataset.SplitPrompt(r.Messages)
				row := &dataset.RewardRow{
					Prompt:         dataset.RenderWith(r, prompt, opt.Render),
					Completion:     dataset.RenderCompletion(r, completion, opt.Render),
					Tools:          dataset.Tools(r),
					GroupID:        groupID(sid, ck, k, prompts),
					Reward:         res.Reward,
					ProcessRewards: res.Process,
					TrajID:         r.TrajID,
					ScenarioID:     sid,
					Domain:         r.Domain,
					Split:          split,
					Checkpoint:     ck,
					Framework:      r.Framework,
					ToolFormat:     dataset.FormatOf(r.Framework).String(),
					Success:        r.Success,
					Drift:          r.Drift,
					BoundaryTools:  boundary,
					SchemaVersion:  dataset.SchemaVersion,
				}
				if opt.Render.ToolsInSystem {
					row.Prompt, row.Tools = dataset.ToolsInSystem(row.Prompt, row.Tools)
				}
				row.PromptTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools)
				row.CompletionTokensEst = dataset.EstimateTokens(row.Completion)
				if opt.Keep != nil {
					ok, err := opt.Keep(row)
					if err != nil {
						return nil, err
					}
					if !ok {
						sum.Dropped++
						continue
					}
				}
				rows, kept = append(rows, row), append(kept, r)
			}
			if len(rows) == 0 {
				if len(groups[k]) > 0 {
					sum.GroupsDropped++
				}
				continue
			}
			rs := make([]float64, len(rows))
			for i, row := range rows {
				rs[i] = row.Reward
			}
			adv := Advantages(rs)
			sum.add(ck, kept, rs)
			for i, row := range rows {
				row.Advantage = adv[i]
				sum.Splits[split]++
				if err := emit(row); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, c := range sum.byCheckpoint {
		if c.Trajectories > 0 {
			c.MeanReward /= float64(c.Trajectories)
		}
		sum.Checkpoints = append(sum.Checkpoints, *c)
	}
	sort.Slice(sum.Checkpoints, func(i, j int) bool {
		return ix.LessCheckpoint(sum.Checkpoints[i].Checkpoint, sum.Checkpoints[j].Checkpoint)
	})
	return sum, nil
}

func (s *Summary) add(ck string, g []*trajectory.Record, rs []float64) {
	c := s.byCheckpoint[ck]
	if c == nil {
		c = &CheckpointSummary{Checkpoint: ck, MinReward: rs[0], MaxReward: rs[0]}
		s.byCheckpoint[ck] = c
	}
	s.Rows += len(g)
	s.Groups++
	c.Groups++
	if len(g) == 1 {
		s.SingletonGroup++
	} else {
		same := true
		for _, r := range rs[1:] {
			same = same && r == rs[0]
		}
		if same {
			s.ZeroStdGroups++
		}
	}
	for i, r := range g {
		c.Trajectories++
		c.MeanReward += rs[i]
		if rs[i] < c.MinReward {
			c.MinReward = rs[i]
		}
		if rs[i] > c.MaxReward {
			c.MaxReward = rs[i]
		}
		if r.Success {
			c.Successes++
		}
		if r.Drift {
			c.Drifting++
		}
		if r.Clean() {
			c.Clean++
		}
	}
}

// promptHash identifies what the model was sent before its first turn.
func promptHash(prompt []trajectory.Message, tools []json.RawMessage) string {
	h := sha256.New()
	b, _ := json.Marshal(prompt)
	h.Write(b)
	for _, t := range tools {
		h.Write([]byte{0})
		h.Write(t)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// groupID is GroupID, with "#PROMPTHASH" appended when the rollouts of one
// scenario under one checkpoint were sent more than one prompt.
func groupID(sid, ck string, k [3]string, prompts map[[2]string]map[string]bool) string {
	id := GroupID(sid, ck, k[1])
	if len(prompts[[2]string{k[0], k[1]}]) > 1 {
		id += "#" + k[2]
	}
	return id
}
