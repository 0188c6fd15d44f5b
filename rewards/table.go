package rewards

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/dataset"

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
// checkpoint name and traj_id. Memory holds two scenarios' records at a
// time: the next is read while the rows of one are built and emitted.
// Scores and rows are computed on every core (cfg.Score and opt.Render's
// rendering are safe for concurrent use); opt.Keep and emit are called in
// row order on one goroutine, so the table and the first error returned
// are those of building one row at a time.
func Table(ix *dataset.Index, cfg Config, opt TableOptions, emit func(*dataset.RewardRow) error) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sum := &Summary{Splits: map[string]int{}, byCheckpoint: map[string]*CheckpointSummary{}}
	scenarios := loadAhead(ix)
	defer scenarios.stop()
	for _, sid := range ix.Scenarios() {
		recs, err := scenarios.next()
		if err != nil {
			return nil, err
		}
		pre := prepare(recs, cfg, opt)
		// A GRPO group is the rollouts of one prompt: one scenario under
		// one checkpoint and framework, and the same prompt text and tools
		// (runs of one scenario id may differ in text).
		groups := map[[3]string][]int{}
		prompts := map[[2]string]map[string]bool{}
		var keys [][3]string
		for i, r := range recs {
			if !r.Status.Scored() {
				continue // trajectory.Status.Scored: not the policy's behaviour
			}
			if !pre[i].completion {
				sum.NoCompletion++
				continue
			}
			k := [3]string{r.Checkpoint, r.Framework, pre[i].promptHash}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
				pk := [2]string{k[0], k[1]}
				if prompts[pk] == nil {
					prompts[pk] = map[string]bool{}
				}
				prompts[pk][k[2]] = true
			}
			groups[k] = append(groups[k], i)
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
			for _, i := range groups[k] {
				r, p := recs[i], &pre[i]
				if p.rawArguments {
					sum.RawArguments++
					continue
				}
				if p.err != nil {
					return nil, fmt.Errorf("%s: %w", ix.Where(r.TrajID), p.err)
				}
				row := p.row
				row.GroupID = groupID(sid, ck, k, prompts)
				row.ScenarioID, row.Split, row.Checkpoint, row.BoundaryTools = sid, split, ck, boundary
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

// prepared is what Table needs of one record, computed ahead on every
// core: its prompt's hash, whether anything follows the prompt, and —
// for a scored record with a completion and parsed arguments — its score
// and rendered row (group, split and advantage filled in later), or the
// scoring error, which Table reports only if it reaches the record.
type prepared struct {
	completion   bool
	promptHash   string
	rawArguments bool
	row          *dataset.RewardRow
	err          error
}

func prepare(recs []*trajectory.Record, cfg Config, opt TableOptions) []prepared {
	pre := make([]prepared, len(recs))
	parallelFor(len(recs), func(i int) {
		r, p := recs[i], &pre[i]
		if !r.Status.Scored() {
			return
		}
		prompt, completion := dataset.SplitPrompt(r.Messages)
		if p.completion = len(completion) > 0; !p.completion {
			return
		}
		p.promptHash = promptHash(prompt, r.Tools)
		if dataset.FormatOf(r.Framework) == dataset.ToolsNative && dataset.RawArguments(r.Messages) {
			p.rawArguments = true
			return
		}
		res, err := cfg.Score(r)
		if err != nil {
			p.err = err
			return
		}
		row := &dataset.RewardRow{
			Prompt:         dataset.RenderWith(r, prompt, opt.Render),
			Completion:     dataset.RenderCompletion(r, completion, opt.Render),
			Tools:          dataset.Tools(r),
			Reward:         res.Reward,
			ProcessRewards: res.Process,
			TrajID:         r.TrajID,
			Domain:         r.Domain,
			Framework:      r.Framework,
			ToolFormat:     dataset.FormatOf(r.Framework).String(),
			Success:        r.Success,
			Drift:          r.Drift,
			SchemaVersion:  dataset.SchemaVersion,
		}
		if opt.Render.ToolsInSystem {
			row.Prompt, row.Tools = dataset.ToolsInSystem(row.Prompt, row.Tools)
		}
		row.PromptTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools)
		row.CompletionTokensEst = dataset.EstimateTokens(row.Completion)
		p.row = row
	})
	return pre
}

// parallelFor calls fn(0..n-1) on GOMAXPROCS goroutines.
func parallelFor(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// scenarioLoader reads the scenarios of an index in order, one ahead of
// the one being used.
type scenarioLoader struct {
	loaded chan loadedScenario
	done   chan struct{}
}

type loadedScenario struct {
	recs []*trajectory.Record
	err  error
}

func loadAhead(ix *dataset.Index) *scenarioLoader {
	l := &scenarioLoader{loaded: make(chan loadedScenario), done: make(chan struct{})}
	go func() {
		defer close(l.loaded)
		for _, sid := range ix.Scenarios() {
			recs, err := ix.Load(sid)
			select {
			case l.loaded <- loadedScenario{recs, err}:
			case <-l.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return l
}

// next returns the records of the next scenario.
func (l *scenarioLoader) next() ([]*trajectory.Record, error) {
	s, ok := <-l.loaded
	if !ok {
		return nil, errors.New("rewards: no more scenarios") // unreachable: one per scenario id
	}
	return s.recs, s.err
}

// stop ends the reading and waits for it, so that the index's files are
// no longer read when Table returns.
func (l *scenarioLoader) stop() {
	close(l.done)
	for range l.loaded {
	}
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
