// Package dataset is the layer every training table is built on: the record
// index over run folders, scenario-hash splits, prompt/completion cutting,
// message rendering for trainers, token-length estimates and the row types
// the tables share (DPO, KTO, rewards, trajectories).
//
// Owns: what a row holds and how a record becomes messages a trainer reads.
// Must not import: pairs, rewards, export, or any rollout package beyond
// rollout/trajectory, rollout/scenario and rollout/store, nor of this module
// beyond those and internal/plainjson (no engine, no HTTP).
package dataset
