// Package pairs builds preference pairs from labelled trajectories: clean
// successes against drifting trajectories of the same scenario, at the
// trajectory level and at the drift onset, split by scenario.
//
// Pairing streams each scenario once and keeps what selection reads of a
// trajectory, not its record (see Build): memory follows the rollouts per
// scenario, not the size of the run or of its records.
//
// Owns: pair selection, step pairs, dedup and pair statistics.
// Builds rows from rollout/dataset; must not import rewards, export or the engine (rollout/engine, agent, policy).
package pairs
