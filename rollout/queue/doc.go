// Package queue runs a rollout through a NATS JetStream work queue, so that
// many worker processes on many machines share one run folder.
//
// It owns the wire layout of a run on JetStream: a work-queue stream of
// planned episodes keyed by trajectory id (ANTIDRIFT_WORK_<run>), a results
// stream of finished records with de-duplication (ANTIDRIFT_RESULTS_<run>),
// the run's configuration in an object store (ANTIDRIFT_RUNS; plan,
// settings and scenarios, never a secret), and per-endpoint concurrency
// leases in a key-value bucket (ANTIDRIFT_LEASES). The Coordinator plans,
// publishes and is the run folder's only writer (through rollout/store);
// Workers pull items, run each with rollout/engine.RunOne, publish the
// record and only then ack. StartServer embeds a JetStream server with
// file storage for single machines and tests.
//
// Served runs (env serve --queue) use the same results stream: EnvReplica
// publishes each finished episode's record and hands out rollout indices
// from a key-value counter (ANTIDRIFT_ENV_ROLLOUTS), and EnvCollector is
// the run folder's only writer.
//
// It may import the engine, the store, the policies and the data types; it
// must not import cmd/antidrift, pairs, rewards or export, and nothing in
// rollout/ below it may import it.
package queue
