package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is a bar on stderr, shown only when stderr is a terminal (the
// zero bar does nothing): one step per finished record, described by the
// running rates of the records seen so far and the client's retry counts.
type progress struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	client   *openai.Client
	describe func(n int, r *trajectory.Record) string // nil: no description
	n        int
}

// newBar is a terminal progress bar of total steps, done already; unit
// names a step ("ep"), or "" for no rate.
func newBar(total, done int, unit, title string) *progressbar.ProgressBar {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	opts := []progressbar.Option{progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100 * time.Millisecond), progressbar.OptionClearOnFinish()}
	if unit != "" {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit), progressbar.OptionSetPredictTime(true))
	}
	if title != "" {
		opts = append(opts, progressbar.OptionSetDescription(title))
	}
	bar := progressbar.NewOptions(total, opts...)
	_ = bar.Set(done)
	return bar
}

// rates counts TSR, DR and CSR over the records trajectory.Status.Scored
// keeps, as score does.
type rates struct{ scored, succ, drift, clean int }

func (c *rates) add(r *trajectory.Record) {
	if !r.Status.Scored() {
		return
	}
	c.scored++
	if r.Success {
		c.succ++
	}
	if r.Drift {
		c.drift++
	}
	if r.Clean() {
		c.clean++
	}
}

// of returns TSR, DR and CSR (zeros before any scored record).
func (c *rates) of() (tsr, dr, csr float64) {
	if c.scored == 0 {
		return 0, 0, 0
	}
	n := float64(c.scored)
	return float64(c.succ) / n, float64(c.drift) / n, float64(c.clean) / n
}

// newProgress is the rollout bar: TSR, DR and CSR so far.
func newProgress(total, done int, client *openai.Client) *progress {
	var c rates
	return &progress{bar: newBar(total, done, "ep", ""), client: client, describe: func(_ int, r *trajectory.Record) string {
		c.add(r)
		tsr, dr, csr := c.of()
		return fmt.Sprintf("TSR %.2f DR %.2f CSR %.2f", tsr, dr, csr)
	}}
}

// newSelectProgress is the selection bar: the exact-match rate so far.
func newSelectProgress(total, done int, client *openai.Client) *progress {
	good := 0
	return &progress{bar: newBar(total, done, "q", ""), client: client, describe: func(n int, r *trajectory.Record) string {
		if r.Success {
			good++
		}
		return fmt.Sprintf("EM %.2f", float64(good)/float64(n))
	}}
}

// record counts a finished record (safe for concurrent use).
func (p *progress) record(r *trajectory.Record) {
	if p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.describe != nil {
		desc := p.describe(p.n, r)
		if p.client != nil {
			st := p.client.Stats()
			desc += fmt.Sprintf(" | retries %d, 429s %d, limit %d", st.Retries, st.RateLimited, st.Limit)
		}
		p.bar.Describe(desc)
	}
	_ = p.bar.Add(1)
}

// add counts one step with no record.
func (p *progress) add() {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
