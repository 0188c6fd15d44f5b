package export

import (
	"encoding/json"
	"sync"

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

// templateMeter measures sampled rows through each template. Rendering
// runs on one goroutine beside the writer (rows are handed over copied),
// so that export does not wait for it; the sample is decided in add, in
// file order, so the figures do not depend on timing.
type templateMeter struct {
	tc    textCounter // nil: the estimate
	tmpls []*chattemplate.Template
	jobs  chan meterJob
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	stride int64
	per    []*TemplateLength
}

type meterJob struct {
	i             int64
	prompt, tools []json.RawMessage
	comps         [][]json.RawMessage
}

func newTemplateMeter(ts []*chattemplate.Template, tc TokenCounter) *templateMeter {
	if len(ts) == 0 {
		return nil
	}
	m := &templateMeter{stride: 1, tmpls: ts, jobs: make(chan meterJob, 64), done: make(chan struct{})}
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

func copyRaws(raws []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(raws))
	for i, r := range raws {
		out[i] = append(json.RawMessage(nil), r...)
	}
	return out
}

// add hands row index i (0-based, file order) to the renderer when it is
// in the sample. The rows sampled so far are the multiples of stride up
// to i; at twice TemplateSample the stride doubles, and the rows kept are
// those at a multiple of it.
func (m *templateMeter) add(i int64, prompt []json.RawMessage, comps [][]json.RawMessage, tools []json.RawMessage) {
	m.mu.Lock()
	stride := m.stride
	m.mu.Unlock()
	if i%stride != 0 {
		return
	}
	j := meterJob{i: i, prompt: copyRaws(prompt), tools: copyRaws(tools)}
	for _, c := range comps {
		j.comps = append(j.comps, copyRaws(c))
	}
	m.jobs <- j
	if i/stride+1 >= 2*TemplateSample {
		m.mu.Lock()
		m.stride *= 2
		m.prune()
		m.mu.Unlock()
	}
}

// prune drops the measured rows off the stride (m.mu held).
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
}

// run renders the rows handed over. A row that does not decode counts as
// raised (Write has checked the message columns already).
func (m *templateMeter) run() {
	defer close(m.done)
	for j := range m.jobs {
		p, err := decodeAll(j.prompt)
		cs := make([][]jinja.Value, len(j.comps))
		for k, c := range j.comps {
			if err == nil {
				cs[k], err = decodeAll(c)
			}
		}
		tv := jinja.None()
		if err == nil && len(j.tools) > 0 {
			var t []jinja.Value
			if t, err = decodeAll(j.tools); err == nil {
				tv = jinja.NewList(t)
			}
		}
		type res struct {
			pn, total int64
			raised    bool
		}
		out := make([]res, len(m.tmpls))
		var wg sync.WaitGroup // the templates on their own cores
		for k, t := range m.tmpls {
			if err != nil {
				out[k].raised = true
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[k].pn, out[k].total, out[k].raised = m.measure(t, p, cs, tv)
			}()
		}
		wg.Wait()
		m.mu.Lock()
		if j.i%m.stride == 0 { // still in the sample
			for k, tl := range m.per {
				if out[k].raised {
					tl.raised = append(tl.raised, j.i)
					continue
				}
				tl.prompt, tl.total, tl.idx = append(tl.prompt, out[k].pn), append(tl.total, out[k].total), append(tl.idx, j.i)
			}
		}
		m.mu.Unlock()
	}
}

// finish waits for the rows handed over; safe to call more than once and
// on a nil meter.
func (m *templateMeter) finish() {
	if m == nil {
		return
	}
	m.once.Do(func() { close(m.jobs) })
	<-m.done
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
