// Package pairs builds preference pairs from labelled trajectories: clean
// successes against drifting trajectories of the same scenario, at the
// trajectory level and at the drift onset, split by scenario.
//
// Owns: pair selection, step pairs, dedup and pair statistics.
// Builds rows from rollout/dataset; must not import rewards, export or the engine (rollout/engine, agent, policy).
package pairs
