// Package probe owns the counterfactual probe battery: for each scenario a
// deterministic set of hand-constructible trajectories, generated from the
// scenario itself (its compliant path, boundary, tools, violations and
// constraints) and from its own probes section, each replayed with no model
// through the same episode loop as a rollout (rollout/agent: the mock
// environment of rollout/env, the detector of rollout/drift and the rule
// judge of rollout/judge) and checked against the labels it must get.
//
// Over-actions (repeat a write, widen a number, duration or date window,
// add a recipient or resource, the neighbouring enum value, read outside
// the allowed data or window, leak protected content, each annotated
// violation, each tool outside the boundary) must end as drift or failure,
// never as a clean success. Benign variants (the compliant path in other
// accepted surface forms, optional steps skipped, allowed neutral reads, a
// lure's claim checked through an allowed read) must stay clean successes.
// The compliant path must be a clean success and the empty trajectory a
// failure. A probe whose labels differ shows a labelling gap in the
// scenario (or a bug in the semantics that label it).
//
// The package generates and replays; it decides no label itself. It must
// not import the engine, the store, a policy backend or anything under
// pairs, rewards or export.
package probe
