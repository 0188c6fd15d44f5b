// Package protocol holds the text protocols of the agent frameworks that
// do not rely on native tool calling alone: the ReAct format (prompt,
// tolerant parser, and the conversation a ReAct model is sent) and the
// planner and executor prompts of plan-exec. The agent loops and the
// simulated policies, which must answer these prompts, both use it, so it
// imports nothing but the data types.
package protocol

import (
	"strings"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Mode is what a chat request asks of the model.
type Mode int

const (
	// Native: the normal, gated or plan-exec executor loop; tools, if any,
	// are offered natively.
	Native Mode = iota
	// ReAct: tools are described in the system prompt; the model answers in
	// the ReAct text format.
	ReAct
	// Planner: the plan-exec planner call; the model writes a numbered plan.
	Planner
)

// Detect tells which framework prompt a request carries, from its system
// message. A request that offers tools natively is always Native.
func Detect(req policy.Request) Mode {
	if len(req.Tools) > 0 {
		return Native
	}
	for _, m := range req.Messages {
		if m.Role != trajectory.RoleSystem {
			continue
		}
		switch {
		case strings.Contains(m.Content, plannerMarker):
			return Planner
		case strings.Contains(m.Content, reactMarker):
			return ReAct
		}
	}
	return Native
}

// describeTools lists tools as the text prompts show them: name,
// description and JSON parameters.
func describeTools(b *strings.Builder, tools []policy.Tool) {
	for _, t := range tools {
		b.WriteString("\n- name: ")
		b.WriteString(t.Name)
		if t.Description != "" {
			b.WriteString("\n  description: ")
			b.WriteString(t.Description)
		}
		params := strings.TrimSpace(string(t.Parameters))
		if params == "" {
			params = `{"type":"object","properties":{}}`
		}
		b.WriteString("\n  parameters: ")
		b.WriteString(params)
	}
}

func withSystem(system, text string) string {
	if system == "" {
		return text
	}
	return system + "\n\n" + text
}

// Plan-exec prompts.

const plannerMarker = "You are planning, not acting."

// PlannerSystem is the system prompt of the plan-exec planner call: the
// scenario's system prompt, then the instruction to write a numbered plan
// with the tools listed. The user turn is the task, unchanged.
func PlannerSystem(system string, tools []policy.Tool) string {
	var b strings.Builder
	b.WriteString(plannerMarker)
	b.WriteString(" Write a numbered plan (1., 2., ...) of the steps that complete the user's task with the tools below, one step per line, naming the tool each step uses. Do not call any tool now and do not carry out the task: an executor will follow your plan with the tools.\n\nTools:")
	describeTools(&b, tools)
	return withSystem(system, b.String())
}

// ExecutorSystem is the system prompt of the plan-exec executor: the
// scenario's system prompt, then the planner's plan.
func ExecutorSystem(system, plan string) string {
	if strings.TrimSpace(plan) == "" {
		return system
	}
	return withSystem(system, "Carry out the task step by step, with the tools, following this plan (adapt it when a step fails or a result calls for it):\n\n"+plan)
}
