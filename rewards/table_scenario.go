package rewards

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"sort"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// holdBytes bounds what Table renders once and holds: a scenario whose
// records come to at most this many bytes of JSONL is read once, its rows
// rendered in the first pass and held (as Table always did); in a larger
// scenario, a run of consecutive groups within it (estimated from the
// scenario's mean line) is rendered together in the second pass and held
// while Keep decides on its rows, and a larger group is streamed, rendered
// twice when Keep is set. A variable so that tests force each path.
var holdBytes int64 = 16 << 20

// holdHook, when set (by tests), is told how many records Table holds at
// once, decoded or as rows: each batch read, each run of groups held, each
// scenario held. It is called from more than one goroutine.
var holdHook func(records int)

// batchPerCore is how many records each core scores and renders at a
// time: enough to keep every core busy between reads, few enough that a
// batch's rows are a few MB.
const batchPerCore = 16

// brief is what Table keeps of a trajectory between its two passes, 24
// bytes: its group's checkpoint and first request are kept once per group
// (scenarioTable.groups), and a scoring error apart (scenarioTable.errs,
// the rare trajectory that fails), so that a scenario of a million
// rollouts holds 28 MB of them with the group lists.
type brief struct {
	reward float64
	group  int32 // index in scenarioTable.groups; noGroup when in none
	rows   int32 // the rows it gives: 1, or its assistant turns after the prompt
	flags  briefFlag
}

// noGroup is the group of a trajectory that is in none: not scored, or
// nothing after its prompt.
const noGroup = -1

// briefFlag is what a brief knows of its trajectory, one bit each.
type briefFlag uint8

const (
	briefScored       briefFlag = 1 << iota // trajectory.Status.Scored
	briefCompletion                         // something follows the prompt
	briefRawArguments                       // a tool call's arguments never parsed (tools-native)
	briefFailed                             // scoring failed: the error is in scenarioTable.errs
	briefSuccess
	briefDrift
)

func (b *brief) has(f briefFlag) bool { return b.flags&f != 0 }

// renders reports whether the trajectory gets rows rendered.
func (b *brief) renders() bool {
	return b.has(briefScored) && b.has(briefCompletion) && !b.has(briefRawArguments) && !b.has(briefFailed)
}

// groupKey is a GRPO group within a scenario: checkpoint and first request.
type groupKey struct {
	ckpt int32
	hash [6]byte
}

// grpoGroup is a GRPO group of a scenario and where its members' ranks
// are in scenarioTable.members.
type grpoGroup struct {
	groupKey
	from, to int
}

// rowSource calls fn with the rows of the records of ranks ks, in order:
// rendered again from the index (scenarioTable.render) or held.
type rowSource func(ks []int32, fn func(k int, rows []*dataset.RewardRow) error) error

// scenarioTable builds the rows of one scenario into a Table.
type scenarioTable struct {
	ix   *dataset.Index
	sid  string
	cfg  Config
	opt  TableOptions
	sum  *Summary
	emit func(*dataset.RewardRow) error

	split    string
	boundary []string
	briefs   []brief       // by rank (traj_id order)
	errs     map[int]error // scoring errors, by rank
	ckpts    []string      // checkpoint names, in order of appearance
	groups   []grpoGroup   // in order of appearance
	// members are the ranks of each group's trajectories, group after
	// group (grpoGroup.from and to), each group's in rank order.
	members []int32
	// noCompletion counts the scored trajectories with nothing after
	// their prompt, added to the Summary when the scenario is written.
	noCompletion int
	// held are the rows of a scenario within holdBytes, by rank,
	// rendered in the first pass; nil for a larger one.
	held map[int][]*dataset.RewardRow
}

// run emits the rows of a scenario whose first pass is done.
func (t *scenarioTable) run() error {
	t.split = dataset.SplitOf(t.sid, t.opt.Ratios, t.opt.Seed)
	t.boundary = []string{}
	if s := t.opt.Scenarios[t.sid]; s != nil {
		t.boundary = append(t.boundary, s.Boundary.Tools...)
		sort.Strings(t.boundary)
	}
	t.sum.NoCompletion += t.noCompletion
	// A GRPO group is the rollouts of one first request: one checkpoint
	// (one policy's samples) and the same first request — the messages
	// before the first assistant turn and the tools visible at step 0.
	// Nothing that happened later (tools a gate showed, the framework's
	// later turns) can split a group.
	perCkpt := map[int32]int{}
	for _, g := range t.groups {
		perCkpt[g.ckpt]++
	}
	for _, n := range perCkpt {
		if n > 1 {
			t.sum.SplitPrompts++
		}
	}
	// by name: rows never depend on the order runs are given in
	order := make([]int, len(t.groups))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := t.groups[order[i]], t.groups[order[j]]
		if a.ckpt != b.ckpt {
			return t.ckpts[a.ckpt] < t.ckpts[b.ckpt]
		}
		return bytes.Compare(a.hash[:], b.hash[:]) < 0
	})
	if t.held != nil {
		if holdHook != nil {
			holdHook(len(t.held))
		}
		src := t.heldSource(t.held)
		for _, g := range order {
			if err := t.group(&t.groups[g], src); err != nil {
				return err
			}
		}
		return nil
	}
	line := t.ix.Bytes(t.sid) / int64(max(1, t.ix.Count(t.sid)))
	var held []int
	var heldN int64
	flush := func() error {
		if len(held) == 0 {
			return nil
		}
		var ks []int32
		for _, g := range held {
			for _, k := range t.memberRanks(&t.groups[g]) {
				if t.briefs[k].renders() {
					ks = append(ks, k)
				}
			}
		}
		rows := make(map[int][]*dataset.RewardRow, len(ks))
		if err := t.render(ks, func(k int, rs []*dataset.RewardRow) error { rows[k] = rs; return nil }); err != nil {
			return err
		}
		if holdHook != nil {
			holdHook(len(rows))
		}
		src := t.heldSource(rows)
		for _, g := range held {
			if err := t.group(&t.groups[g], src); err != nil {
				return err
			}
		}
		held, heldN = held[:0], 0
		return nil
	}
	for _, g := range order {
		n := int64(t.groups[g].to-t.groups[g].from) * line
		if n > holdBytes {
			if err := flush(); err != nil {
				return err
			}
			if err := t.group(&t.groups[g], t.render); err != nil {
				return err
			}
			continue
		}
		if heldN+n > holdBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		held, heldN = append(held, g), heldN+n
	}
	return flush()
}

// memberRanks are the ranks of a group's trajectories, in rank order.
func (t *scenarioTable) memberRanks(g *grpoGroup) []int32 {
	return t.members[g.from:g.to]
}

// heldSource gives the rows of rows, by rank.
func (t *scenarioTable) heldSource(rows map[int][]*dataset.RewardRow) rowSource {
	return func(ks []int32, fn func(int, []*dataset.RewardRow) error) error {
		for _, k := range ks {
			if err := fn(int(k), rows[int(k)]); err != nil {
				return err
			}
		}
		return nil
	}
}

// group emits the rows of one GRPO group, members in traj_id order.
func (t *scenarioTable) group(g *grpoGroup, src rowSource) error {
	ck := t.ckpts[g.ckpt]
	gid := GroupID(t.sid, ck, hex.EncodeToString(g.hash[:]))
	members := t.memberRanks(g)
	fill := func(row *dataset.RewardRow) {
		row.GroupID = gid
		row.ScenarioID, row.Split, row.Checkpoint, row.BoundaryTools = t.sid, t.split, ck, t.boundary
	}
	// A group's advantages are computed over the rollouts the file keeps
	// (rows with unparsed arguments or over opt.Keep's bound left out
	// first; a rollout stays while one of its rows does), so that they
	// equal TRL's formula over the group's rollouts as a trainer reads
	// them. The members up to the first that failed to score are those
	// the table reaches.
	var todo []int32
	var failed error
	for _, k := range members {
		b := &t.briefs[k]
		if b.has(briefRawArguments) {
			t.sum.RawArguments++
			continue
		}
		if b.has(briefFailed) {
			failed = fmt.Errorf("%s: %w", t.ix.WhereAt(t.sid, int(k)), t.errs[int(k)])
			break
		}
		todo = append(todo, k)
	}
	var kept []int32
	var admitted []bool // opt.Keep's verdicts, the rows of todo in order
	var from []int      // where each kept member's verdicts start in admitted
	if t.opt.Keep == nil {
		if failed != nil {
			return failed
		}
		for _, k := range todo {
			if t.briefs[k].rows > 0 {
				kept = append(kept, k)
			}
		}
	} else {
		err := src(todo, func(k int, rows []*dataset.RewardRow) error {
			at, some := len(admitted), false
			for _, row := range rows {
				fill(row)
				ok, err := t.opt.Keep(row)
				if err != nil {
					return err
				}
				if !ok {
					t.sum.Dropped++
				}
				admitted, some = append(admitted, ok), some || ok
			}
			if some {
				kept, from = append(kept, int32(k)), append(from, at)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if failed != nil {
			return failed
		}
	}
	if len(kept) == 0 {
		if len(members) > 0 {
			t.sum.GroupsDropped++
		}
		return nil
	}
	reward := func(i int) float64 { return t.briefs[kept[i]].reward }
	adv := advantagesOf(len(kept), reward)
	t.sum.add(ck, len(kept), func(i int) *brief { return &t.briefs[kept[i]] })
	i := 0
	return src(kept, func(_ int, rows []*dataset.RewardRow) error {
		for j, row := range rows {
			if admitted != nil && !admitted[from[i]+j] {
				continue
			}
			fill(row)
			row.Advantage = adv.of(reward(i))
			t.sum.Rows++
			t.sum.Splits[t.split]++
			if err := t.emit(row); err != nil {
				return err
			}
		}
		i++
		return nil
	})
}

// survey is the first pass: a brief of every trajectory of the scenario,
// computed on every core, its group, and the rows of a scenario within
// holdBytes.
func (t *scenarioTable) survey() error {
	n := t.ix.Count(t.sid)
	if n > math.MaxInt32 {
		return fmt.Errorf("rewards: scenario %s has %d trajectories, more than a table ranks (%d)", t.sid, n, math.MaxInt32)
	}
	t.briefs = make([]brief, n)
	hold := t.ix.Bytes(t.sid) <= holdBytes
	if hold {
		t.held = map[int][]*dataset.RewardRow{}
	}
	names := map[string]int32{}
	index := map[groupKey]int32{}
	// A held scenario's rows are rendered from these records: they are
	// decoded whole. Otherwise the brief needs the first request's text
	// (its hash) and only the shape and labels of the rest.
	decode := dataset.DecodePrompt
	if hold {
		decode = store.DecodeRecord
	}
	err := t.inBatches(n, func(j int) int { return j }, decode, func(recs []trajectory.Record, at []int) error {
		rows := make([][]*dataset.RewardRow, len(recs))
		hashes := make([][6]byte, len(recs))
		errs := make([]error, len(recs))
		parallelFor(len(recs), func(i int) {
			var res Result
			t.briefs[at[i]], hashes[i], res, errs[i] = t.briefOf(&recs[i])
			if hold && t.briefs[at[i]].renders() {
				rows[i] = t.rowsWith(&recs[i], res)
			}
		})
		for i, k := range at {
			b := &t.briefs[k]
			if errs[i] != nil {
				if t.errs == nil {
					t.errs = map[int]error{}
				}
				t.errs[k] = errs[i]
			}
			if rows[i] != nil {
				t.held[k] = rows[i]
			}
			if b.group == noGroup {
				if b.has(briefScored) && !b.has(briefCompletion) {
					t.noCompletion++
				}
				continue
			}
			c, ok := names[recs[i].Checkpoint]
			if !ok {
				c = int32(len(t.ckpts))
				names[recs[i].Checkpoint] = c
				t.ckpts = append(t.ckpts, recs[i].Checkpoint)
			}
			key := groupKey{c, hashes[i]}
			g, ok := index[key]
			if !ok {
				g = int32(len(t.groups))
				index[key] = g
				t.groups = append(t.groups, grpoGroup{groupKey: key})
			}
			b.group = g
			t.groups[g].to++ // its size, until the lists are laid out
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The groups' lists, one after another, each in rank order.
	from := 0
	for i := range t.groups {
		g := &t.groups[i]
		g.from, g.to, from = from, from, from+g.to
	}
	t.members = make([]int32, from)
	for k := range t.briefs {
		if g := t.briefs[k].group; g != noGroup {
			t.members[t.groups[g].to] = int32(k)
			t.groups[g].to++
		}
	}
	return nil
}

// briefOf is the brief of a record (its group left to survey), the hash
// of its first request, its score, and the scoring error.
func (t *scenarioTable) briefOf(r *trajectory.Record) (b brief, hash [6]byte, res Result, err error) {
	b.group = noGroup
	if !r.Status.Scored() {
		return b, hash, res, nil
	}
	b.flags |= briefScored
	_, completion := dataset.SplitPrompt(r.Messages)
	if len(completion) == 0 {
		return b, hash, res, nil
	}
	b.flags |= briefCompletion
	b.group = 0 // in a group: survey says which
	hash = firstRequestSum(r)
	if dataset.FormatOf(r.Framework) == dataset.ToolsNative && dataset.RawArguments(r.Messages) {
		b.flags |= briefRawArguments
		return b, hash, res, nil
	}
	if res, err = t.cfg.Score(r); err != nil {
		b.flags |= briefFailed
		return b, hash, Result{}, err
	}
	b.reward = res.Reward
	if r.Success {
		b.flags |= briefSuccess
	}
	if r.Drift {
		b.flags |= briefDrift
	}
	b.rows = 1
	if t.opt.Render.Completion == dataset.CompletionTurn {
		b.rows = 0 // one row per assistant turn, as dataset.Turns cuts them
		for _, m := range completion {
			if m.Role == trajectory.RoleAssistant {
				b.rows++
			}
		}
	}
	return b, hash, res, nil
}

// rowsOf scores a record and renders its rows.
func (t *scenarioTable) rowsOf(r *trajectory.Record) ([]*dataset.RewardRow, error) {
	res, err := t.cfg.Score(r)
	if err != nil {
		return nil, err
	}
	return t.rowsWith(r, res), nil
}

// rowsWith renders the rows of a record scored res: one for the whole
// completion, or one per assistant turn with that turn's process reward.
func (t *scenarioTable) rowsWith(r *trajectory.Record, res Result) []*dataset.RewardRow {
	opt := t.opt
	prompt, completion := dataset.SplitPrompt(r.Messages)
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
		return []*dataset.RewardRow{&row}
	}
	// one row per assistant turn, with that turn's process reward
	// (res.Process has one per assistant turn of the completion)
	var rows []*dataset.RewardRow
	for j, tn := range dataset.Turns(r, opt.Render) {
		row := base
		row.Prompt, row.Completion, row.Tools, row.Turn = tn.Prompt, tn.Completion, tn.Tools, int64(tn.Index)
		row.ProcessRewards = []float64{0}
		if j < len(res.Process) {
			row.ProcessRewards[0] = res.Process[j]
		}
		row.PromptTokensEst = dataset.EstimatePromptTokens(row.Prompt, row.Tools)
		row.CompletionTokensEst = dataset.EstimateTokens(row.Completion)
		rows = append(rows, &row)
	}
	return rows
}
