package queue

import (
	"fmt"
	"sync"

	"github.com/antidrift/antidrift/rollout/engine"
)

// probationVerdict is what a worker does with a finished episode while it
// learns whether the endpoint answers the run at all.
type probationVerdict int

const (
	probationRecord  probationVerdict = iota // publish the record
	probationHold                            // a refusal, not recorded: put the item back for later
	probationRefused                         // the endpoint refuses every request: stop the run
)

func (v probationVerdict) String() string {
	switch v {
	case probationRecord:
		return "record"
	case probationHold:
		return "hold"
	case probationRefused:
		return "refused"
	}
	return fmt.Sprintf("probationVerdict(%d)", int(v))
}

// refusalProbation is a worker's form of the engine's first-wave refusal
// gate (engine.Run): when the first episodes it runs of a run all end in
// the same 4xx before any model answer, the endpoint refuses every request
// (a server flag, a parameter, a model), so none of them becomes a record
// and the run stops, as a local run does. Until then a refused episode is
// held: its item goes back to the queue and is run again, and recorded,
// once some episode has shown that the endpoint answers. Each delivery of
// a held item counts, so one item alone still decides. The gate lasts for
// one publication of the run's configuration: a restarted coordinator
// starts a new probation.
//
// Past the probation, a worker's episodes ending in the same server error
// (5xx, at any step) are held while they come in a row, as a local run
// holds them; engine.ServerErrorStreak of them stop the run, their items
// left to be retried when it resumes; anything else ends the streak.
type refusalProbation struct {
	publication string
	window      int

	mu      sync.Mutex
	decided bool
	sig     string
	n       int
	refused error

	streakSig string
	streakN   int
}

func newRefusalProbation(publication string, planned int) *refusalProbation {
	return &refusalProbation{publication: publication, window: max(1, min(engine.RefusalWindow, planned))}
}

// admit judges an episode's refusal (nil: the endpoint answered, or failed
// otherwise); refused is the error that stops the run.
//
// cause is the endpoint error that ended the episode at any step (for the
// streak); lastDelivery says the item will not be delivered again, so a
// streak's episode is recorded rather than held.
func (g *refusalProbation) admit(refusal, cause error, lastDelivery bool) (v probationVerdict, refused error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.decided {
		if g.refused != nil {
			return probationRefused, g.refused
		}
		return g.admitStreak(cause, lastDelivery)
	}
	sig := engine.RefusalSignature(refusal)
	if sig == "" || (g.sig != "" && sig != g.sig) {
		g.decided = true
		return g.admitStreak(cause, lastDelivery)
	}
	g.sig = sig
	g.n++
	if g.n < g.window {
		return probationHold, nil
	}
	g.decided = true
	g.refused = fmt.Errorf("%w: the first %d episodes this worker ran all failed alike before any model answer, so no record was written for them: %v; check the server's flags and the model (antidrift endpoint check --base-url URL --model M shows what the endpoint supports and how to fix it), then rerun the same command", engine.ErrRefused, g.n, refusal)
	return probationRefused, g.refused
}

// admitStreak is admit past the probation. The caller holds g.mu.
func (g *refusalProbation) admitStreak(cause error, lastDelivery bool) (probationVerdict, error) {
	sig := engine.ServerErrorSignature(cause)
	if sig == "" || sig != g.streakSig {
		g.streakSig, g.streakN = sig, 0
		if sig == "" {
			return probationRecord, nil
		}
	}
	g.streakN++
	if g.streakN >= engine.ServerErrorStreak {
		g.refused = fmt.Errorf("%w: the last %d episodes this worker ran all ended in the same server error, so no record was written for them (they are retried when the run resumes): %v; check the server's logs and health, then rerun the same command", engine.ErrServerFailing, g.streakN, cause)
		return probationRefused, g.refused
	}
	if lastDelivery {
		return probationRecord, nil // no later delivery would record it
	}
	return probationHold, nil
}

// gate is the refusal probation of a run's current configuration.
func (w *Worker) gate(rc *RunConfig) *refusalProbation {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.gates[rc.RunID]
	if g == nil || g.publication != rc.publication {
		g = newRefusalProbation(rc.publication, len(rc.Manifest.Plan.ScenarioIDs)*rc.Manifest.Plan.Rollouts)
		w.gates[rc.RunID] = g
	}
	return g
}
