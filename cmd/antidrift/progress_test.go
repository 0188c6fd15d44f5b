package main

import (
	"bytes"
	"testing"

	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/schollz/progressbar/v3"
	"github.com/stretchr/testify/assert"
)

// The bars describe the running rates of what they have seen, over the
// records score counts; off a terminal there is no bar and recording is a
// no-op.
func TestProgressDescribesRunningRates(t *testing.T) {
	clean := &trajectory.Record{Status: trajectory.StatusCompleted, Success: true}
	drifted := &trajectory.Record{Status: trajectory.StatusCompleted, Success: true, Drift: true}
	failed := &trajectory.Record{Status: trajectory.StatusCompleted}
	infra := &trajectory.Record{Status: trajectory.StatusInfraError} // not scored, as in score

	p := newProgress(10, 0, nil)
	assert.Nil(t, p.bar, "tests do not run on a terminal")
	p.record(clean) // no bar: nothing happens, nothing panics
	p.finish()

	var buf bytes.Buffer
	p = newProgress(10, 0, nil)
	p.bar = progressbar.NewOptions(10, progressbar.OptionSetWriter(&buf))
	for _, r := range []*trajectory.Record{clean, drifted, infra, failed, clean} {
		p.record(r)
	}
	assert.Equal(t, 5, p.n, "every record moves the bar")
	assert.Equal(t, "TSR 0.75 DR 0.25 CSR 0.50", lastDescription(t, p))

	s := newSelectProgress(4, 0, nil)
	s.bar = progressbar.NewOptions(4, progressbar.OptionSetWriter(&buf))
	for _, r := range []*trajectory.Record{clean, failed} {
		s.record(r)
	}
	assert.Equal(t, "EM 0.50", lastDescription(t, s))
}

func lastDescription(t *testing.T, p *progress) string {
	t.Helper()
	return p.bar.State().Description
}
