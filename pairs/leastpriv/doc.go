// Package leastpriv builds least-privilege preference data from antidrift
// select runs: for each query, chosen = an exact-match (minimal) selection,
// rejected = an over-privileged one from the same query. Where no answer
// over-reaches (or none is exact), the missing side is constructed from
// the library — the convenient broader skill or tool path, or the ground
// truth — and marked as constructed. Rows are the dataset layer's DPO and
// KTO rows, so they go through the same writer, checks and cards as the
// trajectory pairs.
//
// Owns: the pairing of selection answers. Must not import rewards, export,
// the engine, the agent or a policy backend.
package leastpriv
