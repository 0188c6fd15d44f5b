package rewards

// The one-pass Table that held a scenario's records and rows (before
// Table streamed them), kept as the reference the streaming Table must
// match byte for byte (TestTableStreamsAsOnePass).

import (
	"errors"
	"fmt"
	"sort"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// TableOnePass is the reference Table.
var TableOnePass = tableOnePass

// OnHold sets holdHook for a test, returning a restore.
func OnHold(fn func(records int)) func() {
	holdHook = fn
	return func() { holdHook = nil }
}

// BatchPerCore is batchPerCore.
const BatchPerCore = batchPerCore

// SetHoldBytes sets holdBytes for a test, returning a restore.
func SetHoldBytes(n int64) func() {
	old := holdBytes
	holdBytes = n
	return func() { holdBytes = old }
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
func tableOnePass(ix *dataset.Index, cfg Config, opt TableOptions, emit func(*dataset.RewardRow) error) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sum := &Summary{Splits: map[string]int{}, byCheckpoint: map[string]*CheckpointSummary{}}
	scenarios := refLoadAhead(ix)
	defer scenarios.stop()
	for _, sid := range ix.Scenarios() {
		recs, err := scenarios.next()
		if err != nil {
			return nil, err
		}
		pre := refPrepare(recs, cfg, opt)
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
			refAdd(sum, ck, kept, rs)
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
type refPrepared struct {
	completion   bool
	promptHash   string
	rawArguments bool
	rows         []*dataset.RewardRow
	err          error
}

func refPrepare(recs []*trajectory.Record, cfg Config, opt TableOptions) []refPrepared {
	pre := make([]refPrepared, len(recs))
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

// refLoader reads the scenarios of an index in order, one ahead of
// the one being used.
type refLoader struct {
	loaded chan refLoaded
	done   chan struct{}
}

type refLoaded struct {
	recs []*trajectory.Record
	err  error
}

func refLoadAhead(ix *dataset.Index) *refLoader {
	l := &refLoader{loaded: make(chan refLoaded), done: make(chan struct{})}
	go func() {
		defer close(l.loaded)
		for _, sid := range ix.Scenarios() {
			recs, err := ix.Load(sid)
			select {
			case l.loaded <- refLoaded{recs, err}:
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
func (l *refLoader) next() ([]*trajectory.Record, error) {
	s, ok := <-l.loaded
	if !ok {
		return nil, errors.New("rewards: no more scenarios") // unreachable: one per scenario id
	}
	return s.recs, s.err
}

// stop ends the reading and waits for it, so that the index's files are
// no longer read when Table returns.
func (l *refLoader) stop() {
	close(l.done)
	for range l.loaded {
	}
}

func refAdd(s *Summary, ck string, g []*trajectory.Record, rs []float64) {
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

// SetSpillMembers sets spillMembers for a test, returning a restore.
func SetSpillMembers(n int) func() {
	old := spillMembers
	spillMembers = n
	return func() { spillMembers = old }
}
