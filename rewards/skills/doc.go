// Package skills computes the least-privilege selection metrics of
// antidrift select runs: per checkpoint, task, domain and setting the
// exact-match rate EM, over-privilege rate OPR, no-action rate NAR, fail
// rate FR = OPR + NAR and the over-privilege share of failures OPR/FR,
// with query-clustered percentile bootstrap intervals; and for the
// executed pipeline EM1, EM2, their product and the measured end-to-end
// rate.
//
// It reads records (rollout/trajectory) and imports rewards/metrics for
// numbers and the bootstrap. It must not import the engine, a policy
// backend, pairs or export.
package skills
