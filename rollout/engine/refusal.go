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

// ServerErrorStreak is how many episodes in a row, past the first wave,
// must end in the same server error (5xx) for the run to stop: the
// endpoint broke mid-run, and recording more episodes would only record its
// failure.
const ServerErrorStreak = 8

// ErrServerFailing is returned (wrapped) when the last ServerErrorStreak
// episodes all ended in the same server error.
var ErrServerFailing = errors.New("the endpoint fails every request")

// refusalGate holds back episodes that may be an endpoint's failure rather
// than the policy's behaviour.
//
// First wave: when the first RefusalWindow episodes of a run all end alike
// in a 4xx or the same 5xx before any model answer, the endpoint refuses
// or fails every request (a server flag, a capability, a parameter, a
// crashed backend): the run stops with that error and none of those
// records is written, so a resumed run retries them once the endpoint is
// fixed. Any other outcome first, or a different refusal, ends the
// probation and releases what was held.
//
// Afterwards: episodes ending in a server error (5xx, at any step) are held
// while they come in a row with the same error; ServerErrorStreak of them
// stop the run (none of them written: they stay to be retried), anything
// else releases them.
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

	streakSig string
	streak    []*trajectory.Record
	streakN   int
}

func newRefusalGate(todo int) *refusalGate {
	return &refusalGate{window: min(RefusalWindow, todo), streakN: ServerErrorStreak}
}

// admit says what to do with a finished record: hold it back, or write the
// released records and then it; refused is the error that stops the run.
// cause is the endpoint error that ended the episode (nil when none).
func (g *refusalGate) admit(rec *trajectory.Record, cause error) (hold bool, release []*trajectory.Record, refused error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused != nil {
		return true, nil, g.refused
	}
	if !g.decided {
		sig := ""
		if cause != nil && len(rec.Steps) == 0 {
			sig = RefusalSignature(cause)
		}
		if sig == "" || (g.sig != "" && sig != g.sig) {
			g.decided = true
			release, g.held = g.held, nil
			hold, more, refused := g.admitStreak(rec, cause)
			return hold, append(release, more...), refused
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
	return g.admitStreak(rec, cause)
}

// admitStreak is admit past the first wave. The caller holds g.mu.
func (g *refusalGate) admitStreak(rec *trajectory.Record, cause error) (hold bool, release []*trajectory.Record, refused error) {
	sig := serverErrorSignature(cause)
	if sig == "" || sig != g.streakSig {
		release, g.streak, g.streakSig = g.streak, nil, sig
		if sig == "" {
			return false, release, nil
		}
	}
	g.streak = append(g.streak, rec)
	if len(g.streak) < g.streakN {
		return true, release, nil
	}
	n := len(g.streak)
	g.streak = nil
	g.refused = fmt.Errorf("%w: the last %d episodes all ended in the same server error, so no record was written for them (they are retried when the run resumes): %v; check the server's logs and health, then rerun the same command", ErrServerFailing, n, cause)
	return true, release, g.refused
}

// flush releases a streak of server errors shorter than the limit when the
// run ends: they are records like any other. (A first wave still held
// can only be one interrupted: it is rerun on resume.)
func (g *refusalGate) flush() []*trajectory.Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused != nil {
		return nil
	}
	out := g.streak
	g.streak = nil
	return out
}

// RefusalSignature identifies an endpoint's failing answer: status and
// message without the attempt count, for a 4xx (but 408 and 429) or a 5xx.
// "" for anything else (nil, a 408 or 429, no HTTP status).
func RefusalSignature(err error) string {
	if err == nil {
		return ""
	}
	var hs policy.HTTPStatuser
	if !errors.As(err, &hs) {
		return ""
	}
	status := hs.HTTPStatus()
	if status < 400 || status >= 600 || status == 408 || status == 429 {
		return ""
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, " [after "); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("%d %s", status, msg)
}

// serverErrorSignature is RefusalSignature for a 5xx only.
// ServerErrorSignature identifies a server error (5xx) as RefusalSignature
// does; "" for anything else. Episodes in a row with one signature are a
// streak that stops a run (ServerErrorStreak).
func ServerErrorSignature(err error) string { return serverErrorSignature(err) }

func serverErrorSignature(err error) string {
	var hs policy.HTTPStatuser
	if err == nil || !errors.As(err, &hs) || hs.HTTPStatus() < 500 {
		return ""
	}
	return RefusalSignature(err)
}
