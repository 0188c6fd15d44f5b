package rewards

import (
	"bytes"
	"encoding/hex"
	"fmt"
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

// brief is what Table keeps of a trajectory between its two passes.
type brief struct {
	err    error // the scoring error, reported only if the table reaches the trajectory
	reward float64
	rows   int32   // the rows it gives: 1, or its assistant turns after the prompt
	ckpt   int32   // its checkpoint, an index into scenarioTable.ckpts
	hash   [6]byte // firstRequestSum
	scored, completion, rawArguments,
	success, drift bool
}

// renders reports whether the trajectory gets rows rendered.
func (b *brief) renders() bool {
	return b.scored && b.completion && !b.rawArguments && b.err == nil
}

// groupKey is a GRPO group within a scenario: checkpoint and first request.
type groupKey struct {
	ckpt int32
	hash [6]byte
}

// rowSource calls fn with the rows of the records of ranks ks, in order:
// rendered again from the index (scenarioTable.render) or held.
type rowSource func(ks []int, fn func(k int, rows []*dataset.RewardRow) error) error

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
	briefs   []brief  // by rank (traj_id order)
	ckpts    []string // checkpoint names, in order of appearance
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
	// A GRPO group is the rollouts of one first request: one checkpoint
	// (one policy's samples) and the same first request — the messages
	// before the first assistant turn and the tools visible at step 0.
	// Nothing that happened later (tools a gate showed, the framework's
	// later turns) can split a group.
	groups := map[groupKey][]int{}
	var keys []groupKey
	for k := range t.briefs {
		b := &t.briefs[k]
		if !b.scored {
			continue // trajectory.Status.Scored: not the policy's behaviour
		}
		if !b.completion {
			t.sum.NoCompletion++
			continue
		}
		key := groupKey{b.ckpt, b.hash}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], k)
	}
	perCkpt := map[int32]int{}
	for _, k := range keys {
		perCkpt[k.ckpt]++
	}
	for _, n := range perCkpt {
		if n > 1 {
			t.sum.SplitPrompts++
		}
	}
	// by name: rows never depend on the order runs are given in
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
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
		for _, key := range keys {
			if err := t.group(key, groups[key], src); err != nil {
				return err
			}
		}
		return nil
	}
	line := t.ix.Bytes(t.sid) / int64(max(1, t.ix.Count(t.sid)))
	var held []groupKey
	var heldN int64
	flush := func() error {
		if len(held) == 0 {
			return nil
		}
		var ks []int
		for _, key := range held {
			for _, k := range groups[key] {
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
		for _, key := range held {
			if err := t.group(key, groups[key], src); err != nil {
				return err
			}
		}
		held, heldN = held[:0], 0
		return nil
	}
	for _, key := range keys {
		n := int64(len(groups[key])) * line
		if n > holdBytes {
			if err := flush(); err != nil {
				return err
			}
			if err := t.group(key, groups[key], t.render); err != nil {
				return err
			}
			continue
		}
		if heldN+n > holdBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		held, heldN = append(held, key), heldN+n
	}
	return flush()
}

// heldSource gives the rows of rows, by rank.
func (t *scenarioTable) heldSource(rows map[int][]*dataset.RewardRow) rowSource {
	return func(ks []int, fn func(int, []*dataset.RewardRow) error) error {
		for _, k := range ks {
			if err := fn(k, rows[k]); err != nil {
				return err
			}
		}
		return nil
	}
}

// group emits the rows of one GRPO group, members in traj_id order.
func (t *scenarioTable) group(key groupKey, members []int, src rowSource) error {
	ck := t.ckpts[key.ckpt]
	gid := GroupID(t.sid, ck, hex.EncodeToString(key.hash[:]))
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
	var todo []int
	var failed error
	for _, k := range members {
		b := &t.briefs[k]
		if b.rawArguments {
			t.sum.RawArguments++
			continue
		}
		if b.err != nil {
			failed = fmt.Errorf("%s: %w", t.ix.WhereAt(t.sid, k), b.err)
			break
		}
		todo = append(todo, k)
	}
	var kept []int
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
				kept, from = append(kept, k), append(from, at)
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
	rs := make([]float64, len(kept))
	bs := make([]*brief, len(kept))
	for i, k := range kept {
		bs[i] = &t.briefs[k]
		rs[i] = bs[i].reward
	}
	adv := Advantages(rs)
	t.sum.add(ck, bs, rs)
	i := 0
	return src(kept, func(_ int, rows []*dataset.RewardRow) error {
		for j, row := range rows {
			if admitted != nil && !admitted[from[i]+j] {
				continue
			}
			fill(row)
			row.Advantage = adv[i]
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
// computed on every core, and the rows of a scenario within holdBytes.
func (t *scenarioTable) survey() error {
	n := t.ix.Count(t.sid)
	t.briefs = make([]brief, n)
	hold := t.ix.Bytes(t.sid) <= holdBytes
	if hold {
		t.held = map[int][]*dataset.RewardRow{}
	}
	ks := make([]int, n)
	for k := range ks {
		ks[k] = k
	}
	names := map[string]int32{}
	// A held scenario's rows are rendered from these records: they are
	// decoded whole. Otherwise the brief needs the first request's text
	// (its hash) and only the shape and labels of the rest.
	decode := dataset.DecodePrompt
	if hold {
		decode = store.DecodeRecord
	}
	return t.inBatches(ks, decode, func(recs []trajectory.Record, at []int) error {
		rows := make([][]*dataset.RewardRow, len(recs))
		parallelFor(len(recs), func(i int) {
			var res Result
			t.briefs[at[i]], res = t.briefOf(&recs[i])
			if hold && t.briefs[at[i]].renders() {
				rows[i] = t.rowsWith(&recs[i], res)
			}
		})
		for i, k := range at {
			c, ok := names[recs[i].Checkpoint]
			if !ok {
				c = int32(len(t.ckpts))
				names[recs[i].Checkpoint] = c
				t.ckpts = append(t.ckpts, recs[i].Checkpoint)
			}
			t.briefs[k].ckpt = c
			if rows[i] != nil {
				t.held[k] = rows[i]
			}
		}
		return nil
	})
}

// briefOf is the brief of a record, and its score.
func (t *scenarioTable) briefOf(r *trajectory.Record) (brief, Result) {
	var b brief
	if b.scored = r.Status.Scored(); !b.scored {
		return b, Result{}
	}
	_, completion := dataset.SplitPrompt(r.Messages)
	if b.completion = len(completion) > 0; !b.completion {
		return b, Result{}
	}
	b.hash = firstRequestSum(r)
	if dataset.FormatOf(r.Framework) == dataset.ToolsNative && dataset.RawArguments(r.Messages) {
		b.rawArguments = true
		return b, Result{}
	}
	res, err := t.cfg.Score(r)
	if err != nil {
		b.err = err
		return b, Result{}
	}
	b.reward, b.success, b.drift = res.Reward, r.Success, r.Drift
	b.rows = 1
	if t.opt.Render.Completion == dataset.CompletionTurn {
		b.rows = 0 // one row per assistant turn, as dataset.Turns cuts them
		for _, m := range completion {
			if m.Role == trajectory.RoleAssistant {
				b.rows++
			}
		}
	}
	return b, res
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
