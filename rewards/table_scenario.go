package rewards

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/internal/extsort"

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

// spillMembers is how many members of a scenario's groups Table holds in
// memory (32 bytes each: 16 MiB); a scenario with more keeps them in
// sorted runs in a temporary file (extsort), so that memory stays bounded
// whatever its rollouts. A variable so that tests force the file.
var spillMembers = 512 << 10

// member is what Table keeps of a trajectory in a GRPO group between its
// two passes: its group (checkpoint and first request), its rank, and
// what the advantages and the Summary need. A scenario's members are
// sorted by group (checkpoint name, then first request), then rank: each
// group's are consecutive, in traj_id order.
type member struct {
	reward float64
	rank   int32
	rows   int32 // the rows it gives: 1, or its assistant turns after the prompt
	ckpt   int32 // index in scenarioTable.ckpts
	hash   [6]byte
	flags  memberFlag
}

// memberFlag is what a member knows of its trajectory, one bit each.
type memberFlag uint8

const (
	memberRawArguments memberFlag = 1 << iota // a tool call's arguments never parsed (tools-native)
	memberFailed                              // scoring failed (scored again to report it)
	memberSuccess
	memberDrift
)

func (m *member) has(f memberFlag) bool { return m.flags&f != 0 }

// renders reports whether the trajectory gets rows rendered.
func (m *member) renders() bool { return !m.has(memberRawArguments) && !m.has(memberFailed) }

// sameGroup reports whether two members are of one group.
func (m *member) sameGroup(o *member) bool { return m.ckpt == o.ckpt && m.hash == o.hash }

// memberCodec writes a member as 27 bytes.
var memberCodec = extsort.Codec[member]{
	Size: 27,
	Put: func(b []byte, m *member) {
		binary.LittleEndian.PutUint64(b, math.Float64bits(m.reward))
		binary.LittleEndian.PutUint32(b[8:], uint32(m.rank))
		binary.LittleEndian.PutUint32(b[12:], uint32(m.rows))
		binary.LittleEndian.PutUint32(b[16:], uint32(m.ckpt))
		copy(b[20:26], m.hash[:])
		b[26] = byte(m.flags)
	},
	Get: func(b []byte, m *member) {
		m.reward = math.Float64frombits(binary.LittleEndian.Uint64(b))
		m.rank = int32(binary.LittleEndian.Uint32(b[8:]))
		m.rows = int32(binary.LittleEndian.Uint32(b[12:]))
		m.ckpt = int32(binary.LittleEndian.Uint32(b[16:]))
		copy(m.hash[:], b[20:26])
		m.flags = memberFlag(b[26])
	},
}

// memberIter returns a group's members one at a time, nil after the
// last; each call of a memberSeq starts again.
type memberIter func() *member

// memberSeq is members of a group read in order, any number of times.
type memberSeq struct {
	n    int               // how many
	iter func() memberIter // a new reading from the first
}

// rowSource calls fn with the rows of the trajectories of seq, in order:
// rendered again from the index (scenarioTable.render) or held.
type rowSource func(seq memberSeq, fn func(k int, rows []*dataset.RewardRow) error) error

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
	ckpts    []string // checkpoint names, in order of appearance
	// members are the trajectories of the scenario's groups, by group
	// then rank (member).
	members *extsort.List[member]
	// noCompletion counts the scored trajectories with nothing after
	// their prompt, added to the Summary when the scenario is written.
	noCompletion int
	// held are the rows of a scenario within holdBytes, by rank,
	// rendered in the first pass; nil for a larger one.
	held map[int][]*dataset.RewardRow
}

// groupRange is a group's members: positions [from, to) of members.
type groupRange struct{ from, to int }

// close removes the scenario's scratch file, if it has one.
func (t *scenarioTable) close() {
	if t.members != nil {
		t.members.Close()
	}
}

// run emits the rows of a scenario whose first pass is done.
func (t *scenarioTable) run() error {
	defer t.close()
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
	// later turns) can split a group. Groups come by checkpoint name,
	// then first request: rows never depend on the order runs are given
	// in. A checkpoint with more than one group is a split prompt.
	var groups []groupRange // held together, or (one) streamed
	var heldN int64
	line := t.ix.Bytes(t.sid) / int64(max(1, t.ix.Count(t.sid)))
	flush := func() error {
		defer func() { groups, heldN = groups[:0], 0 }()
		switch {
		case len(groups) == 0:
			return nil
		case t.held != nil:
			return t.groups(groups, t.heldSource(t.held))
		}
		var ks []int32
		var rows []int32
		for _, g := range groups {
			c := t.members.Cursor(g.from, g.to)
			for m := c.Next(); m != nil; m = c.Next() {
				if m.renders() {
					ks, rows = append(ks, m.rank), append(rows, m.rows)
				}
			}
		}
		held := make(map[int][]*dataset.RewardRow, len(ks))
		seq := memberSeq{n: len(ks), iter: func() memberIter {
			i := 0
			return func() *member {
				if i == len(ks) {
					return nil
				}
				m := &member{rank: ks[i], rows: rows[i]}
				i++
				return m
			}
		}}
		if err := t.render(seq, func(k int, rs []*dataset.RewardRow) error { held[k] = rs; return nil }); err != nil {
			return err
		}
		if holdHook != nil {
			holdHook(len(held))
		}
		return t.groups(groups, t.heldSource(held))
	}
	if t.held != nil && holdHook != nil {
		holdHook(len(t.held))
	}
	c := t.members.Cursor(0, t.members.Len())
	ckpt, perCkpt := int32(-1), 0
	var first member
	from := 0
	for at := 0; ; at++ {
		m := c.Next()
		if m != nil && at > from && m.sameGroup(&first) {
			continue
		}
		if at > from { // a group ends: [from, at)
			if first.ckpt != ckpt {
				ckpt, perCkpt = first.ckpt, 0
			}
			if perCkpt++; perCkpt == 2 {
				t.sum.SplitPrompts++
			}
			g := groupRange{from, at}
			n := int64(g.to-g.from) * line
			switch {
			case t.held != nil:
				groups = append(groups, g)
			case n > holdBytes:
				if err := flush(); err != nil {
					return err
				}
				if err := t.group(g, t.render); err != nil {
					return err
				}
			default:
				if heldN+n > holdBytes {
					if err := flush(); err != nil {
						return err
					}
				}
				groups, heldN = append(groups, g), heldN+n
			}
		}
		if m == nil {
			break
		}
		first, from = *m, at
	}
	return flush()
}

// groups emits the rows of groups whose rows src holds.
func (t *scenarioTable) groups(gs []groupRange, src rowSource) error {
	for _, g := range gs {
		if err := t.group(g, src); err != nil {
			return err
		}
	}
	return nil
}

// heldSource gives the rows of rows, by rank.
func (t *scenarioTable) heldSource(rows map[int][]*dataset.RewardRow) rowSource {
	return func(seq memberSeq, fn func(int, []*dataset.RewardRow) error) error {
		next := seq.iter()
		for m := next(); m != nil; m = next() {
			if err := fn(int(m.rank), rows[int(m.rank)]); err != nil {
				return err
			}
		}
		return nil
	}
}

// filtered is the members of g that a filter accepts, read in order;
// keep makes the filter anew for each reading, so that it may keep state
// (where a member's rows start among the group's).
func (t *scenarioTable) filtered(g groupRange, n int, keep func() func(*member) bool) memberSeq {
	return memberSeq{n: n, iter: func() memberIter {
		c := t.members.Cursor(g.from, g.to)
		ok := keep()
		return func() *member {
			for m := c.Next(); m != nil; m = c.Next() {
				if ok(m) {
					return m
				}
			}
			return nil
		}
	}}
}

// group emits the rows of one GRPO group, members in traj_id order.
func (t *scenarioTable) group(g groupRange, src rowSource) error {
	head := t.members.Cursor(g.from, g.from+1).Next()
	ck := t.ckpts[head.ckpt]
	gid := GroupID(t.sid, ck, hex.EncodeToString(head.hash[:]))
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
	cut, todoN := g.to, 0
	var failed error
	c := t.members.Cursor(g.from, g.to)
	for at, m := g.from, c.Next(); m != nil; at, m = at+1, c.Next() {
		if m.has(memberRawArguments) {
			t.sum.RawArguments++
			continue
		}
		if m.has(memberFailed) {
			cut, failed = at, t.scoringError(int(m.rank))
			break
		}
		todoN++
	}
	todo := t.filtered(groupRange{g.from, cut}, todoN, func() func(*member) bool {
		return func(m *member) bool { return !m.has(memberRawArguments) }
	})
	var kept memberSeq
	var admitted []uint64 // opt.Keep's verdicts, a bit for each row of todo in order
	if t.opt.Keep == nil {
		if failed != nil {
			return failed
		}
		n := 0
		next := todo.iter()
		for m := next(); m != nil; m = next() {
			if m.rows > 0 {
				n++
			}
		}
		kept = t.filtered(groupRange{g.from, cut}, n, func() func(*member) bool {
			return func(m *member) bool { return !m.has(memberRawArguments) && m.rows > 0 }
		})
	} else {
		bit, n := 0, 0
		err := src(todo, func(k int, rows []*dataset.RewardRow) error {
			some := false
			for _, row := range rows {
				fill(row)
				ok, err := t.opt.Keep(row)
				if err != nil {
					return err
				}
				if bit/64 == len(admitted) {
					admitted = append(admitted, 0)
				}
				if ok {
					admitted[bit/64] |= 1 << (bit % 64)
				} else {
					t.sum.Dropped++
				}
				bit, some = bit+1, some || ok
			}
			if some {
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if failed != nil {
			return failed
		}
		kept = t.filtered(groupRange{g.from, cut}, n, func() func(*member) bool {
			bit := 0
			return func(m *member) bool {
				if m.has(memberRawArguments) {
					return false
				}
				from := bit
				bit += int(m.rows)
				return anyBit(admitted, from, bit)
			}
		})
	}
	if kept.n == 0 {
		t.sum.GroupsDropped++
		return nil
	}
	each := func(fn func(m *member)) {
		next := kept.iter()
		for m := next(); m != nil; m = next() {
			fn(m)
		}
	}
	adv := advantagesOf(kept.n, func(fn func(r float64)) { each(func(m *member) { fn(m.reward) }) })
	t.sum.add(ck, each)
	// The rows are emitted as src gives them, a kept member's at a time:
	// its reward from a reading of kept in step, its first row's verdict
	// from a reading of todo (the rows of the members before it).
	nextKept, nextTodo := kept.iter(), todo.iter()
	bit := 0
	return src(kept, func(_ int, rows []*dataset.RewardRow) error {
		m := nextKept()
		if admitted != nil {
			for x := nextTodo(); x != nil && x.rank != m.rank; x = nextTodo() {
				bit += int(x.rows)
			}
		}
		for j, row := range rows {
			if admitted != nil && !anyBit(admitted, bit+j, bit+j+1) {
				continue
			}
			fill(row)
			row.Advantage = adv.of(m.reward)
			t.sum.Rows++
			t.sum.Splits[t.split]++
			if err := t.emit(row); err != nil {
				return err
			}
		}
		bit += len(rows)
		return nil
	})
}

// anyBit reports whether a bit of [from, to) is set in bits.
func anyBit(bits []uint64, from, to int) bool {
	for i := from; i < to; i++ {
		if bits[i/64]&(1<<(i%64)) != 0 {
			return true
		}
	}
	return false
}

// scoringError is the error of scoring the trajectory of rank k again:
// the first pass keeps only that scoring failed, since a scenario may
// hold any number of failures and the table reports the first it reaches.
func (t *scenarioTable) scoringError(k int) error {
	r, err := t.ix.LoadAt(t.sid, k)
	if err == nil {
		if _, err = t.cfg.Score(r); err == nil {
			err = errors.New("changed while being read (a run still writing?)")
		}
	}
	return fmt.Errorf("%s: %w", t.ix.WhereAt(t.sid, k), err)
}

// survey is the first pass: what each trajectory of the scenario gives
// its group, computed on every core, sorted by group then rank, and the
// rows of a scenario within holdBytes.
func (t *scenarioTable) survey() error {
	n := t.ix.Count(t.sid)
	if n > math.MaxInt32 {
		return fmt.Errorf("rewards: scenario %s has %d trajectories, more than a table ranks (%d)", t.sid, n, math.MaxInt32)
	}
	hold := t.ix.Bytes(t.sid) <= holdBytes
	if hold {
		t.held = map[int][]*dataset.RewardRow{}
	}
	names := map[string]int32{}
	sorter := extsort.New(memberCodec, func(a, b *member) int {
		if a.ckpt != b.ckpt {
			if c := strings.Compare(t.ckpts[a.ckpt], t.ckpts[b.ckpt]); c != 0 {
				return c
			}
		}
		if c := bytes.Compare(a.hash[:], b.hash[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.rank, b.rank)
	}, spillMembers, "rewards: scenario "+t.sid+"'s trajectories")
	// A held scenario's rows are rendered from these records: they are
	// decoded whole. Otherwise the first pass needs the first request's
	// text (its hash) and only the shape and labels of the rest.
	decode := dataset.DecodePrompt
	if hold {
		decode = store.DecodeRecord
	}
	k := 0
	err := t.inBatches(n, func() (int, int32, bool) {
		if k == n {
			return 0, 0, false
		}
		k++
		return k - 1, 0, true
	}, decode, func(recs []trajectory.Record, at []int, _ []int32) error {
		rows := make([][]*dataset.RewardRow, len(recs))
		ms := make([]member, len(recs))
		scored, in := make([]bool, len(recs)), make([]bool, len(recs))
		parallelFor(len(recs), func(i int) {
			var res Result
			ms[i], res, scored[i], in[i] = t.memberOf(&recs[i])
			if hold && in[i] && ms[i].renders() {
				rows[i] = t.rowsWith(&recs[i], res)
			}
		})
		for i, k := range at {
			if !in[i] {
				if scored[i] {
					t.noCompletion++ // nothing after its prompt
				}
				continue
			}
			if rows[i] != nil {
				t.held[k] = rows[i]
			}
			c, ok := names[recs[i].Checkpoint]
			if !ok {
				c = int32(len(t.ckpts))
				names[recs[i].Checkpoint] = c
				t.ckpts = append(t.ckpts, recs[i].Checkpoint)
			}
			ms[i].ckpt, ms[i].rank = c, int32(k)
			if err := sorter.Add(ms[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		sorter.Discard()
		return err
	}
	t.members, err = sorter.Sorted()
	return err
}

// memberOf is what a record gives its group (its checkpoint and rank left
// to survey), its score, whether it is scored, and whether it is in a
// group: scored, with something after its prompt.
func (t *scenarioTable) memberOf(r *trajectory.Record) (m member, res Result, scored, in bool) {
	if !r.Status.Scored() {
		return m, res, false, false
	}
	_, completion := dataset.SplitPrompt(r.Messages)
	if len(completion) == 0 {
		return m, res, true, false
	}
	m.hash = firstRequestSum(r)
	if dataset.FormatOf(r.Framework) == dataset.ToolsNative && dataset.RawArguments(r.Messages) {
		m.flags |= memberRawArguments
		return m, res, true, true
	}
	res, err := t.cfg.Score(r)
	if err != nil {
		m.flags |= memberFailed
		return m, Result{}, true, true
	}
	m.reward = res.Reward
	if r.Success {
		m.flags |= memberSuccess
	}
	if r.Drift {
		m.flags |= memberDrift
	}
	m.rows = 1
	if t.opt.Render.Completion == dataset.CompletionTurn {
		m.rows = 0 // one row per assistant turn, as dataset.Turns cuts them
		for _, msg := range completion {
			if msg.Role == trajectory.RoleAssistant {
				m.rows++
			}
		}
	}
	return m, res, true, true
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
