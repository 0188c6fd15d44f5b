package agent

import (
	"context"
	"strings"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RunPlanExec is the "plan-exec" framework (planner–executor). One planner
// call, offered no tools, is asked for a numbered plan from the task and a
// description of the tools (protocol.PlannerSystem, the user turn
// unchanged). The executor then runs the native tool-calling loop of
// RunNormal with the plan in its system prompt (protocol.ExecutorSystem).
//
// The record holds the executor's conversation, whose system message
// carries the plan, and the plan itself in Result.Plan. The planner call
// counts towards usage, model time and the token limit, not towards the
// step limit, and it is not a step (it is no message of the conversation).
// The planner's reasoning (a reasoning field or <think> in content) is
// never part of the plan. When the planner call fails, the episode ends with the planner's request
// as its messages and the failure's status.
func RunPlanExec(ctx context.Context, pol policy.Policy, ep Episode, lim Limits) (Result, error) {
	r, cancel := begin(ctx, pol, ep, lim)
	defer cancel()
	s := ep.Scenario.S
	msgs := []trajectory.Message{
		{Role: trajectory.RoleSystem, Content: protocol.PlannerSystem(s.System, r.pr.tools)},
		{Role: trajectory.RoleUser, Content: s.UserPrompt()},
	}
	resp, ok, fatal := r.ask(r.request(msgs, nil))
	if fatal != nil {
		return r.res, fatal
	}
	if !ok {
		r.res.Messages = msgs
		r.judge(r.res.Messages)
		return r.res, nil
	}
	// The plan is the answer only: reasoning is never read as a plan.
	plan, _ := policy.SplitReasoning(resp.Message.Content)
	r.res.Plan = strings.TrimSpace(plan)
	return r.native(protocol.ExecutorSystem(s.System, r.res.Plan), false)
}
