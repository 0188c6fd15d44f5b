// Package export writes the tables trainers consume — DPO/reward pairs,
// KTO examples, rewards/GRPO rows and trajectories — as Parquet, Arrow IPC
// and JSONL, with dataset cards and manifests.
//
// Owns: file formats, column schemas, cards, and reading tables back (inspect).
// Takes rows from rollout/dataset; must not import pairs, rewards or the engine.
package export
