package engine

import (
	"context"
	"fmt"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RunOne runs one planned episode of cfg's plan for run runName and returns
// its record, exactly as Run would write it. It is for callers that hand out
// episodes one at a time (the work-queue workers in rollout/queue), so that
// they share the engine's episode code. sc is the prepared scenario of
// p.Scenario (agent.Prepare). The error is non-nil only when the episode has
// no record: a fatal policy error (errors.Is policy.ErrFatal) or ctx
// cancelled mid-episode; an infrastructure failure is a record with status
// infra_error, which Run keeps out of the trajectories and retries.
//
// cause is the endpoint error that ended the episode, at any step (nil when
// none). Run judges an endpoint-wide refusal over a wave of episodes that
// ended in a refusal before any model answer (FirstWaveRefusal), and a
// streak of episodes ending in the same server error
// (ServerErrorSignature), and writes none of them; a caller handing out
// episodes must do the same.
func RunOne(ctx context.Context, cfg Config, runName string, sc *agent.Scenario, p Planned) (rec *trajectory.Record, cause error, err error) {
	if cfg.Framework == "" {
		cfg.Framework = FrameworkNormal
	}
	if err := CheckFramework(cfg.Framework); err != nil {
		return nil, nil, fmt.Errorf("engine: %w", err)
	}
	rec, cause, err = episode(ctx, cfg, runName, sc, p)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("engine: %s rollout %d: interrupted: %w", p.Scenario.ID, p.Rollout, err)
	}
	return rec, cause, nil
}

// FirstWaveRefusal is the endpoint's answer when the episode ended in a
// 4xx or 5xx before any model answer (RefusalSignature names its kind),
// else nil: what the first-wave refusal gate judges.
func FirstWaveRefusal(rec *trajectory.Record, cause error) error {
	if rec == nil || len(rec.Steps) > 0 || RefusalSignature(cause) == "" {
		return nil
	}
	return cause
}
