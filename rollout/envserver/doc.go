// Package envserver serves antidrift's scenarios as an environment for
// on-policy training and for agents antidrift does not implement: the
// OpenEnv HTTP and WebSocket protocol (POST /reset, POST /step, GET /state,
// GET /schema, GET /health, /ws), MCP over Streamable HTTP (/mcp/{scenario}),
// and POST /verify, which labels a trajectory produced elsewhere.
//
// A session does not re-implement an episode: it runs the rollout engine's
// own loop (engine.RunOne, hence rollout/agent, rollout/env, rollout/drift
// and rollout/judge) with a policy whose turns are the client's actions
// (bridge). An episode driven through the server is therefore the same
// record, labels included, as an in-process rollout of the same actions;
// rewards are the rewards package's components of that record (a Scorer
// that cmd/antidrift wires in: the rollout floor does not import rewards).
//
// Every finished episode goes to the run folder as rollout writes it; an
// episode whose client left, or that a new reset replaced, goes to errors/
// with status infra_error, so nothing is lost and nothing half-done is
// scored.
// A replica (NewReplica) writes no folder: it hands each finished record
// to a Recorder and takes rollout indices from a Counter shared by the
// replicas of its run (rollout/queue's EnvReplica implements both; its
// EnvCollector is the folder's one writer). This package imports no queue.
//
// Owns: sessions, the wire formats (actions, observations, OpenEnv and MCP
// mappings) and trace replay (OpenAI chat messages, Agents SDK items,
// inspect-ai logs). It must not import pairs, rewards or export, and
// rollout/engine, rollout/agent and the data packages (pairs, rewards,
// export) must not import it.
package envserver
