package rewards

import (
	"crypto/sha256"
	"encoding/hex"
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

// GroupID names a GRPO group: the rollouts under one checkpoint whose
// first request was the same (FirstRequestHash), "SCENARIO@CHECKPOINT#HASH".
// The scenario is named for reading; the hash decides the group.
func GroupID(scenarioID, checkpoint, firstRequest string) string {
	return scenarioID + "@" + checkpoint + "#" + firstRequest
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
	// SplitPrompts counts (scenario, checkpoint) pairs whose rollouts were
	// sent more than one first request (frameworks that prompt
	// differently, runs of one scenario id whose text differs): each first
	// request is its own GRPO group.
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
		// A GRPO group is the rollouts of one first request: one
		// checkpoint (one policy's samples) and the same first request —
		// the messages before the first assistant turn and the tools
		// visible at step 0. Nothing that happened later (tools a gate
		// showed, the framework's later turns) can split a group.
		groups := map[[2]string][]int{}
		var keys [][2]string
		for i, r := range recs {
			if !r.Status.Scored() {
				continue // trajectory.Status.Scored: not the policy's behaviour
			}
			if !pre[i].completion {
				sum.NoCompletion++
				continue
			}
			k := [2]string{r.Checkpoint, pre[i].promptHash}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], i)
		}
		perCkpt := map[string]int{}
		for _, k := range keys {
			perCkpt[k[0]]++
		}
		for _, n := range perCkpt {
			if n > 1 {
				sum.SplitPrompts++
			}
		}
		// by name: rows never depend on the order runs are given in
		sort.Slice(keys, func(i, j int) bool {
			if keys[i][0] != keys[j][0] {
				return keys[i][0] < keys[j][0]
			}
			return keys[i][1] < keys[j][1]
		})
		split := dataset.SplitOf(sid, opt.Ratios, opt.Seed)
		boundary := []string{}
		if s := opt.Scenarios[sid]; s != nil {
			boundary = append(boundary, s.Boundary.Tools...)
			sort.Strings(boundary)
		}
		for _, k := range keys {
			ck := k[0]
			// A group's advantages are computed over the rollouts the file
			// keeps (rows with unparsed arguments or over opt.Keep's bound
			// left out first; a rollout stays while one of its rows does),
			// so that they equal TRL's formula over the group's rollouts
			// as a trainer reads them.
			var rows [][]*dataset.RewardRow
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
				var keep []*dataset.RewardRow
				for _, row := range p.rows {
					row.GroupID = GroupID(sid, ck, k[1])
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
					keep = append(keep, row)
				}
				if len(keep) == 0 {
					continue
				}
				rows, kept = append(rows, keep), append(kept, r)
			}
			if len(rows) == 0 {
				if len(groups[k]) > 0 {
					sum.GroupsDropped++
				}
				continue
			}
			rs := make([]float64, len(rows))
			for i, tr := range rows {
				rs[i] = tr[0].Reward
			}
			adv := Advantages(rs)
			sum.add(ck, kept, rs)
			for i, tr := range rows {
				for _, row := range tr {
					row.Advantage = adv[i]
					sum.Rows++
					sum.Splits[split]++
					if err := emit(row); err != nil {
						return nil, err
					}
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
	rows         []*dataset.RewardRow
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
		p.promptHash = FirstRequestHash(r)
		if dataset.FormatOf(r.Framework) == dataset.ToolsNative && dataset.RawArguments(r.Messages) {
			p.rawArguments = true
			return
		}
		res, err := cfg.Score(r)
		if err != nil {
			p.err = err
			return
		}
		base := dataset.RewardRow{
			Tools:         dataset.Tools(r),
			Reward:        res.Reward,
			TrajID:        r.TrajID,
			Domain:        r.Domain,
			Framework:     r.Framework,
			ToolFormat:    dataset.FormatOf(r.Framework).String(),
			Success:       r.Success,
			Drift:         r.Drift,
			SchemaVersion: dataset.SchemaVersion,
		}
		if opt.Render.Completion != dataset.CompletionTurn {
			row := base
			row.Prompt, row.Completion = dataset.RenderWith(r, prompt, opt.Render), dataset.RenderCompletion(r, completion, opt.Render)
			row.ProcessRewards, row.Turn = res.Process, int64(len(prompt))
			row.Prompt, row.Tools = dataset.FinishRow(opt.Render, row.Prompt, row.Tools, &row.Completion)
			row.PromptTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools)
			row.CompletionTokensEst = dataset.EstimateTokens(row.Completion)
			p.rows = []*dataset.RewardRow{&row}
			return
		}
		// one row per assistant turn, with that turn's process reward
		// (res.Process has one per assistant turn of the completion)
		for j, t := range dataset.Turns(r, opt.Render) {
			row := base
			row.Prompt, row.Completion, row.Tools, row.Turn = t.Prompt, t.Completion, t.Tools, int64(t.Index)
			row.ProcessRewards = []float64{0}
			if j < len(res.Process) {
				row.ProcessRewards[0] = res.Process[j]
			}
			row.PromptTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools)
			row.CompletionTokensEst = dataset.EstimateTokens(row.Completion)
			p.rows = append(p.rows, &row)
		}
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

// FirstRequestHash identifies a rollout's first request: its messages up
// to and including the first user message, rendered as the model was sent
// them (the framework's text view for a text protocol), and the tools
// visible at step 0 (dataset.FirstRequestTools), as the request sent them.
// Twelve hex digits of SHA-256 over exactly those bytes, each message and
// tool after a 0 byte and the tools after a 1 byte.
func FirstRequestHash(r *trajectory.Record) string {
	prompt, _ := dataset.SplitPrompt(r.Messages)
	h := sha256.New()
	for _, m := range dataset.RenderWith(r, prompt, dataset.RenderOptions{}) {
		h.Write([]byte{0})
		h.Write(m)
	}
	h.Write([]byte{1})
	for _, t := range dataset.FirstRequestTools(r) {
		h.Write([]byte{0})
		h.Write(t)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
