// Package pareto places checkpoints on the DR–CSR plane: each checkpoint is
// a point (DR, CSR) with cluster intervals; the front is the set of
// points no other point dominates (lower DR and higher CSR are better); the
// hypervolume of the front is taken against the reference point (DR = 1,
// CSR = 0), with a paired scenario-bootstrap interval and each point's
// probability of being on the front; consecutive checkpoints (by training
// step) are compared with paired tests over the scenarios both were scored
// on, Holm-corrected across every change of every move, and each move is
// classified as an improvement, a trade-off, a regression or no significant
// change. A checkpoint whose DR falls while its CCSR falls significantly
// (and its CSR does not rise significantly) is flagged as capability
// collapse: it drifts less because it does less.
//
// Owns: DR–CSR points, the front, hypervolume and movement between checkpoints.
// Reads rewards/metrics results only; must not import pairs, export, rollout/dataset or the engine.
package pareto
