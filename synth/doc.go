// Package synth is the scenario synthesis pipeline: from a task seed, a
// designer model writes a playbook, a builder model turns it into a format
// v2 scenario, the validator and the counterfactual probe battery check it
// (their errors go back to the builder a bounded number of times), probe
// policies roll it out and the execution gate of package qc decides whether
// its compliant path is reachable and its drift points tempt; a failing
// scenario goes to a critic model with the gate's evidence, at most Rounds
// times, and then to a human review queue. Accepted scenarios get their
// provisions matched from the catalogue and are deduplicated against each
// other and the suites they will join.
//
// Every model call is stored, with its prompt, answer, model and tokens,
// under the run folder before its answer is used, so that a killed run
// replays what it already paid for and resumes where it stopped.
//
// synth runs rollouts (rollout/engine) and reads their records; it does not
// reach pairs, rewards or export.
package synth
