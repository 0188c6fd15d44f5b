package export

import (
	"encoding/json"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ardanlabs/jinja"

	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/rollout/dataset"
)

// TemplateSample is the least number of rows the per-template lengths
// measure: rows are sampled at a stride that doubles whenever the sample
// reaches twice this, so a table's sample is every row up to 2×
// TemplateSample rows and, past that, between TemplateSample and twice it,
// spread evenly over the file (the rows whose index is a multiple of the
// stride). Rendering every row through every template would slow export by
// as much as writing the files.
const TemplateSample = 256

// TemplateLength is a table's length figure under one chat template: the
// sampled rows' prompt (rendered with the generation prompt) and prompt +
// longest completion, as the template renders them, measured by the
// estimator over the rendered text or by the tokenizer.
type TemplateLength struct {
	Template string `json:"template"`
	// Stride: the rows measured are those whose 0-based index in the
	// table's file order is a multiple of Stride; Rows counts them.
	Stride int64 `json:"stride"`
	Rows   int64 `json:"rows"`
	// Raised counts sampled rows the template raises on (Llama-3.x on a
	// turn with several calls): they cannot be trained with it and are not
	// in the percentiles.
	Raised int64    `json:"raised,omitempty"`
	Prompt [4]int64 `json:"prompt_p50_p90_p99_max"`
	Total  [4]int64 `json:"total_p50_p90_p99_max"`
	// Whole counts the rendered rows within the recipes' max_length
	// (Lengths.MaxLength): neither dropped nor cut under this template
	// (0 for the rewards table, whose GRPO recipe sets no max_length).
	Whole int64 `json:"whole"`
	// prompt and total are the per-row figures, thinned with the stride.
	prompt, total, idx []int64
	raised             []int64
}

// textCounter is a TokenCounter that also counts plain text (hftok).
type textCounter interface {
	Text(s string) (int64, error)
}

// templateMeter measures sampled rows through each template. The sample
// is decided in add, in file order, so the figures do not depend on
// timing; which rows are rendered when does not change them either (a
// row's figures depend on the row alone).
//
// Rendering is deferred: a sampled row waits, copied, until the input
// ends, and most wait for nothing, since each doubling of the stride
// drops half the sample (rendering each row as it came rendered 2,816
// rows for the 457 the card keeps of a 233,835-row rewards table). Only when
// the rows waiting pass pendingBudget bytes is the one likeliest to stay
// (its index divisible by the highest power of two) rendered beside the
// writer. The rest are rendered when the input ends (finishInput),
// overlapping the files' last writes.
type templateMeter struct {
	tc    textCounter // nil: the estimate
	tmpls []*chattemplate.Template
	jobs  chan meterJob
	done  chan struct{}
	once  sync.Once

	mu           sync.Mutex
	stride       int64
	per          []*TemplateLength
	pending      []meterJob // sampled rows not yet rendered, in file order
	pendingBytes int64
	discard      bool // aborted: render nothing more

	rendered atomic.Int64 // rows rendered (through every template), for the tests
}

// pendingBudget bounds the bytes of the sampled rows waiting to be
// rendered (a var for the tests).
var pendingBudget int64 = 16 << 20

// meterChunk and meterChunkBytes bound the waiting rows decoded at once
// at the end (at least one): decoded messages take a few times their
// JSON's memory.
const meterChunk = 64

var meterChunkBytes int64 = 2 << 20 // a var for the tests

type meterJob struct {
	i             int64
	prompt, tools []json.RawMessage
	comps         [][]json.RawMessage
	size          int64
}

func newTemplateMeter(ts []*chattemplate.Template, tc TokenCounter) *templateMeter {
	if len(ts) == 0 {
		return nil
	}
	m := &templateMeter{stride: 1, tmpls: ts, jobs: make(chan meterJob, 4), done: make(chan struct{})}
	if c, ok := tc.(textCounter); ok {
		m.tc = c
	}
	for _, t := range ts {
		m.per = append(m.per, &TemplateLength{Template: t.Name})
	}
	go m.run()
	return m
}

func (m *templateMeter) count(s string) (int64, error) {
	if m.tc != nil {
		return m.tc.Text(s)
	}
	return dataset.EstimateTextTokens(s), nil
}

// convOf is a row's prompt, completions and tools; a trajectory is one
// completion, its whole conversation, with no prompt.
func convOf[R Row](r *R) (prompt []json.RawMessage, comps [][]json.RawMessage, tools []json.RawMessage, ok bool) {
	switch v := any(r).(type) {
	case *dataset.DPORow:
		return v.Prompt, [][]json.RawMessage{v.Chosen, v.Rejected}, v.Tools, true
	case *dataset.KTORow:
		return v.Prompt, [][]json.RawMessage{v.Completion}, v.Tools, true
	case *dataset.RewardRow:
		return v.Prompt, [][]json.RawMessage{v.Completion}, v.Tools, true
	case *dataset.TrajectoryRow:
		return nil, [][]json.RawMessage{v.Messages}, v.Tools, true
	}
	return nil, nil, nil, false
}

func decodeAll(raws []json.RawMessage) ([]jinja.Value, error) {
	out := make([]jinja.Value, len(raws))
	for i, r := range raws {
		v, err := chattemplate.Decode(r)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// copyRaws copies raws into one buffer (the row's own may be reused).
func copyRaws(raws []json.RawMessage) ([]json.RawMessage, int64) {
	n := 0
	for _, r := range raws {
		n += len(r)
	}
	buf := make([]byte, 0, n)
	out := make([]json.RawMessage, len(raws))
	for i, r := range raws {
		buf = append(buf, r...)
		out[i] = buf[len(buf)-len(r) : len(buf) : len(buf)]
	}
	return out, int64(n)
}

// add takes row index i (0-based, file order) into the sample when it
// belongs there. The rows sampled so far are the multiples of stride up
// to i; at twice TemplateSample the stride doubles, and the rows kept are
// those at a multiple of it.
func (m *templateMeter) add(i int64, prompt []json.RawMessage, comps [][]json.RawMessage, tools []json.RawMessage) {
	m.mu.Lock()
	stride := m.stride
	m.mu.Unlock()
	if i%stride != 0 {
		return
	}
	var j meterJob
	var n int64
	j.prompt, j.size = copyRaws(prompt)
	j.tools, n = copyRaws(tools)
	j.size += n
	for _, c := range comps {
		cc, n := copyRaws(c)
		j.comps, j.size = append(j.comps, cc), j.size+n
	}
	j.i = i
	m.mu.Lock()
	m.pending, m.pendingBytes = append(m.pending, j), m.pendingBytes+j.size
	if i/stride+1 >= 2*TemplateSample {
		m.stride *= 2
		m.prune()
	}
	var eager []meterJob
	for m.pendingBytes > pendingBudget && len(m.pending) > 0 {
		eager = append(eager, m.takeLikeliest())
	}
	m.mu.Unlock()
	for _, j := range eager { // outside the lock: run takes it to store results
		m.jobs <- j
	}
}

// takeLikeliest removes and returns the waiting row likeliest to stay in
// the sample: the one whose index has the most trailing zero bits (row 0
// stays always), the earliest of those (m.mu held).
func (m *templateMeter) takeLikeliest() meterJob {
	best := 0
	for x := 1; x < len(m.pending); x++ {
		if tz(m.pending[x].i) > tz(m.pending[best].i) {
			best = x
		}
	}
	j := m.pending[best]
	m.pending = slices.Delete(m.pending, best, best+1)
	m.pendingBytes -= j.size
	return j
}

func tz(i int64) int {
	if i == 0 {
		return 64
	}
	return bits.TrailingZeros64(uint64(i))
}

// prune drops the measured and the waiting rows off the stride (m.mu
// held).
func (m *templateMeter) prune() {
	for _, tl := range m.per {
		k := 0
		for x := range tl.idx {
			if tl.idx[x]%m.stride == 0 {
				tl.prompt[k], tl.total[k], tl.idx[k] = tl.prompt[x], tl.total[x], tl.idx[x]
				k++
			}
		}
		tl.prompt, tl.total, tl.idx = tl.prompt[:k], tl.total[:k], tl.idx[:k]
		r := tl.raised[:0]
		for _, x := range tl.raised {
			if x%m.stride == 0 {
				r = append(r, x)
			}
		}
		tl.raised = r
	}
	k := 0
	for _, j := range m.pending {
		if j.i%m.stride == 0 {
			m.pending[k] = j
			k++
			continue
		}
		m.pendingBytes -= j.size
	}
	clear(m.pending[k:]) // let the dropped rows' copies go
	m.pending = m.pending[:k]
}

// decodedRow is a row's messages decoded for the templates; err: it did
// not decode, and counts as raised under every template (Write has
// checked the message columns already).
type decodedRow struct {
	i     int64
	p     []jinja.Value
	cs    [][]jinja.Value
	tools jinja.Value
	err   error
}

func decodeRow(j meterJob) decodedRow {
	d := decodedRow{i: j.i, tools: jinja.None()}
	d.p, d.err = decodeAll(j.prompt)
	d.cs = make([][]jinja.Value, len(j.comps))
	for k, c := range j.comps {
		if d.err == nil {
			d.cs[k], d.err = decodeAll(c)
		}
	}
	if d.err == nil && len(j.tools) > 0 {
		var t []jinja.Value
		if t, d.err = decodeAll(j.tools); d.err == nil {
			d.tools = jinja.NewList(t)
		}
	}
	return d
}

// meterResult is one row's figures under one template.
type meterResult struct {
	pn, total int64
	raised    bool
}

// run renders the rows handed over while rows come in, then, once the
// input ends, those still waiting.
func (m *templateMeter) run() {
	defer close(m.done)
	for j := range m.jobs {
		m.render([]meterJob{j})
	}
	m.mu.Lock()
	rest := m.pending
	m.pending, m.pendingBytes = nil, 0
	if m.discard {
		rest = nil
	}
	m.mu.Unlock()
	for len(rest) > 0 {
		n, size := 1, rest[0].size
		for n < min(len(rest), meterChunk) && size+rest[n].size <= meterChunkBytes {
			size += rest[n].size
			n++
		}
		m.render(rest[:n])
		clear(rest[:n])
		rest = rest[n:]
	}
}

// render measures rows through every template, each template on its own
// goroutine (a template renders one row at a time), and records the
// figures of the rows still in the sample.
func (m *templateMeter) render(jobs []meterJob) {
	m.rendered.Add(int64(len(jobs)))
	rows := make([]decodedRow, len(jobs))
	for x, j := range jobs {
		rows[x] = decodeRow(j)
	}
	out := make([][]meterResult, len(m.tmpls))
	var wg sync.WaitGroup
	for k, t := range m.tmpls {
		out[k] = make([]meterResult, len(rows))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x, d := range rows {
				if d.err != nil {
					out[k][x].raised = true
					continue
				}
				r := &out[k][x]
				r.pn, r.total, r.raised = m.measure(t, d.p, d.cs, d.tools)
			}
		}()
	}
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for x, d := range rows {
		if d.i%m.stride != 0 { // dropped from the sample meanwhile
			continue
		}
		for k, tl := range m.per {
			if r := out[k][x]; r.raised {
				tl.raised = append(tl.raised, d.i)
			} else {
				tl.prompt, tl.total, tl.idx = append(tl.prompt, r.pn), append(tl.total, r.total), append(tl.idx, d.i)
			}
		}
	}
}

// finishInput says no more rows come: the waiting rows start rendering.
// Safe to call more than once and on a nil meter.
func (m *templateMeter) finishInput() {
	if m == nil {
		return
	}
	m.once.Do(func() { close(m.jobs) })
}

// finish waits for the sample's rendering; safe to call more than once
// and on a nil meter.
func (m *templateMeter) finish() {
	if m == nil {
		return
	}
	m.finishInput()
	<-m.done
}

// abandon drops the rows not yet rendered and waits for those under way.
func (m *templateMeter) abandon() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.discard = true
	m.mu.Unlock()
	m.finish()
}

// measure renders one row through t: the prompt with the generation
// prompt, and prompt + each completion; raised says the template raised.
// A count error of the tokenizer is treated as raised: hftok counts any
// text.
func (m *templateMeter) measure(t *chattemplate.Template, p []jinja.Value, cs [][]jinja.Value, tools jinja.Value) (prompt, total int64, raised bool) {
	if len(p) > 0 {
		ps, err := t.Render(p, tools, true)
		if err != nil {
			return 0, 0, true
		}
		if prompt, err = m.count(ps); err != nil {
			return 0, 0, true
		}
	}
	total = prompt
	for _, c := range cs {
		f, err := t.Render(append(append([]jinja.Value{}, p...), c...), tools, false)
		if err != nil {
			return 0, 0, true
		}
		n, err := m.count(f)
		if err != nil {
			return 0, 0, true
		}
		total = max(total, n)
	}
	return prompt, total, false
}

// results are the per-template figures, with Whole against maxLength
// (none when 0: the GRPO recipe sets no max_length).
func (m *templateMeter) results(maxLength int64) []TemplateLength {
	if m == nil {
		return nil
	}
	m.finish()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prune()
	out := make([]TemplateLength, 0, len(m.per))
	for _, tl := range m.per {
		r := TemplateLength{Template: tl.Template, Stride: m.stride, Rows: int64(len(tl.idx) + len(tl.raised)), Raised: int64(len(tl.raised))}
		if len(tl.prompt) > 0 {
			r.Prompt, r.Total = percentiles(tl.prompt), percentiles(tl.total)
		}
		for _, n := range tl.total {
			if maxLength > 0 && n <= maxLength {
				r.Whole++
			}
		}
		out = append(out, r)
	}
	return out
}
