// Package rewards scores trajectories for RL: a CCSR-shaped outcome reward
// minus weighted drift penalties, per-turn process rewards that sum to it,
// and group-relative advantages computed as TRL's GRPO computes them.
//
//	R(τ) = α·S·(1 − D) − λ·Σ_v w(v)
//
// S is the judge's success (1 or 0, or the judge's score in [0,1] on
// request), D the drift indicator, v ranges over the distinct drifting tool
// calls and w(v) is the sum of the weights of the selected schemes.
//
// Owns: reward schemes, process rewards, GRPO advantages and the rewards table's rows.
// Builds rows from rollout/dataset; must not import pairs, export or the engine (rollout/engine, agent, policy).
package rewards
