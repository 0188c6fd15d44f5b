package engine

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RefusalWindow is how many first episodes must all be refused alike for
// the run to stop (fewer when the run plans fewer).
const RefusalWindow = 3

// refusalGate holds back the first episodes that ended in the same 4xx
// before any model answer. When the first RefusalWindow episodes of a run
// are all refused alike, the endpoint refuses every request (a server flag,
// a capability, a parameter): the run stops with that error and none of
// those records is written, so a resumed run retries them once the
// endpoint is fixed. Any other outcome first, or a different refusal, ends
// the probation and releases what was held.
type refusalGate struct {
	mu      sync.Mutex
	window  int
	decided bool
	sig     string
	first   error
	held    []*trajectory.Record
	// refused is the refusal once decided: episodes still in flight then
	// belong to the refused wave and are not written either.
	refused error
}

func newRefusalGate(todo int) *refusalGate {
	return &refusalGate{window: min(RefusalWindow, todo)}
}

// admit says what to do with a finished record: hold it back, or write the
// released records and then it; refused is the error that stops the run.
func (g *refusalGate) admit(rec *trajectory.Record, cause error) (hold bool, release []*trajectory.Record, refused error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.decided {
		if g.refused != nil {
			return true, nil, g.refused
		}
		return false, nil, nil
	}
	sig := ""
	if cause != nil {
		sig = RefusalSignature(cause)
	}
	if sig == "" || (g.sig != "" && sig != g.sig) {
		g.decided = true
		release, g.held = g.held, nil
		return false, release, nil
	}
	if g.sig == "" {
		g.sig, g.first = sig, cause
	}
	g.held = append(g.held, rec)
	if len(g.held) >= g.window {
		g.decided = true
		n := len(g.held)
		g.held = nil
		g.refused = fmt.Errorf("%w: the first %d episodes all failed alike before any model answer, so no record was written for them: %v; check the server's flags and the model (antidrift endpoint check --base-url URL --model M shows what the endpoint supports and how to fix it), then rerun the same command", ErrRefused, n, cause)
		return true, nil, g.refused
	}
	return true, nil, nil
}

// RefusalSignature identifies a 4xx answer: status and message without the
// attempt count. "" for anything else (nil, a 408 or 429, a 5xx, no HTTP
// status).
func RefusalSignature(err error) string {
	if err == nil {
		return ""
	}
	var hs policy.HTTPStatuser
	if !errors.As(err, &hs) {
		return ""
	}
	status := hs.HTTPStatus()
	if status < 400 || status >= 500 || status == 408 || status == 429 {
		return ""
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, " [after "); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("%d %s", status, msg)
}
