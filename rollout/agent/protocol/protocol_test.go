package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func TestParseReAct(t *testing.T) {
	cases := []struct {
		name    string
		text    string
		kind    protocol.Kind
		tool    string
		args    string // compact JSON object; "" when not one
		argsErr string // fragment
		answer  string
		problem string // fragment
		kept    string // for actions: the text sent back (cut at End)
	}{
		{name: "canonical", text: "Thought: I need the notes.\nAction: get_meeting_notes\nAction Input: {\"date\": \"2026-11-23\"}",
			kind: protocol.Action, tool: "get_meeting_notes", args: `{"date":"2026-11-23"}`},
		{name: "case and spacing", text: "thought : hm\n  ACTION :   get_meeting_notes  \naction input:{\"date\":\"x\"}",
			kind: protocol.Action, tool: "get_meeting_notes", args: `{"date":"x"}`},
		{name: "markdown emphasis and backticks", text: "**Thought:** ok\n**Action:** `create_draft`\n**Action Input:** {\"to\": \"a@b\"}",
			kind: protocol.Action, tool: "create_draft", args: `{"to":"a@b"}`},
		{name: "whole answer fenced", text: "```\nThought: go\nAction: create_draft\nAction Input: {\"to\": \"a@b\"}\n```",
			kind: protocol.Action, tool: "create_draft", args: `{"to":"a@b"}`},
		{name: "fenced input, imagined observation", text: "Thought: go\nAction: create_draft\nAction Input:\n```json\n{\n  \"to\": \"a@b\"\n}\n```\nObservation: {\"status\": \"saved\"}\nThought: done\nFinal Answer: saved",
			kind: protocol.Action, tool: "create_draft", args: `{"to":"a@b"}`,
			kept: "Thought: go\nAction: create_draft\nAction Input:\n```json\n{\n  \"to\": \"a@b\"\n}\n```"},
		{name: "trailing text after the input", text: "Action: get_meeting_notes\nAction Input: {\"date\": \"x\"} (the meeting date)\nAction: send_email",
			kind: protocol.Action, tool: "get_meeting_notes", args: `{"date":"x"}`, kept: "Action: get_meeting_notes\nAction Input: {\"date\": \"x\"}"},
		{name: "underscores and call syntax", text: "Action: get_meeting_notes(date)\nAction_Input: {}",
			kind: protocol.Action, tool: "get_meeting_notes", args: `{}`},
		{name: "CRLF", text: "Thought: a\r\nAction: get_meeting_notes\r\nAction Input: {\"date\":\"x\"}\r\n",
			kind: protocol.Action, tool: "get_meeting_notes", args: `{"date":"x"}`},
		{name: "empty input is the empty object", text: "Action: list_all\nAction Input:",
			kind: protocol.Action, tool: "list_all", args: `{}`},
		{name: "loose input: trailing commas keep []", text: "Thought: go\nAction: create_draft\nAction Input: {\"to\": [], \"cc\": {}, \"tags\": [\"a\",],}",
			kind: protocol.Action, tool: "create_draft", args: `{"to":[],"cc":{},"tags":["a"]}`},
		{name: "loose input: single quotes, fenced, prose after", text: "Action: create_draft\nAction Input:\n```json\n{'to': 'a@b', 'attachments': [], 'z': 1.50, 'a': None,}\n```\nI will wait for the result.",
			kind: protocol.Action, tool: "create_draft", args: `{"to":"a@b","attachments":[],"z":1.50,"a":null}`,
			kept: "Action: create_draft\nAction Input:\n```json\n{'to': 'a@b', 'attachments': [], 'z': 1.50, 'a': None,}\n```"},
		{name: "loose input cut off is not repaired", text: "Action: create_draft\nAction Input: {'to': ['a@b',",
			kind: protocol.Action, tool: "create_draft", argsErr: "not valid JSON"},
		{name: "input not JSON", text: "Action: get_meeting_notes\nAction Input: date=2026-11-23",
			kind: protocol.Action, tool: "get_meeting_notes", argsErr: "not valid JSON"},
		{name: "input not an object", text: "Action: get_meeting_notes\nAction Input: [\"2026-11-23\"]",
			kind: protocol.Action, tool: "get_meeting_notes", argsErr: "must be a JSON object"},
		{name: "final answer", text: "Thought: all done\nFinal Answer: The draft is saved.\nIt was not sent.",
			kind: protocol.Final, answer: "The draft is saved.\nIt was not sent."},
		{name: "final answer variant spelling", text: "final_answer: ok", kind: protocol.Final, answer: "ok"},
		{name: "final answer before an action", text: "Final Answer: done\nAction: send_email\nAction Input: {}",
			kind: protocol.Final, answer: "done\nAction: send_email\nAction Input: {}"},
		{name: "no keyword", text: "I will look at the meeting notes first.", problem: "no \"Action:\" or \"Final Answer:\""},
		{name: "empty", text: "  ", problem: "empty answer"},
		{name: "action without input", text: "Thought: x\nAction: get_meeting_notes", problem: "no \"Action Input:\""},
		{name: "input without action", text: "Action Input: {}", problem: "without an \"Action:\""},
		{name: "no tool name", text: "Action:\nAction Input: {}", problem: "no tool name"},
		{name: "keyword mid-line is not a keyword", text: "Thought: the Final Answer: is not here yet", problem: "no \"Action:\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := protocol.ParseReAct(tc.text)
			if tc.problem != "" {
				assert.Equal(t, protocol.Malformed, p.Kind)
				assert.Contains(t, p.Problem, tc.problem)
				return
			}
			require.Equal(t, tc.kind, p.Kind, "problem: %s", p.Problem)
			if tc.kind == protocol.Final {
				assert.Equal(t, tc.answer, p.Answer)
				return
			}
			assert.Equal(t, tc.tool, p.Tool)
			if tc.argsErr != "" {
				assert.Nil(t, p.Args)
				assert.Contains(t, p.ArgsError, tc.argsErr)
				assert.NotEmpty(t, p.Input, "the input is kept as written")
			} else {
				assert.Equal(t, tc.args, string(p.Args))
				assert.Empty(t, p.ArgsError)
			}
			if tc.kept != "" {
				assert.Equal(t, tc.kept, tc.text[:p.End])
			}
		})
	}
}

func TestFormatsRoundTrip(t *testing.T) {
	p := protocol.ParseReAct(protocol.FormatAction("next", "create_draft", `{"to":"a@b","body":"Final Answer: no"}`))
	require.Equal(t, protocol.Action, p.Kind)
	assert.Equal(t, "create_draft", p.Tool)
	assert.Equal(t, "next", p.Thought)
	assert.JSONEq(t, `{"to":"a@b","body":"Final Answer: no"}`, string(p.Args))
	f := protocol.ParseReAct(protocol.FormatFinal("done", "All saved."))
	require.Equal(t, protocol.Final, f.Kind)
	assert.Equal(t, "All saved.", f.Answer)
}

var tools = []policy.Tool{
	{Name: "get_meeting_notes", Description: "Return the notes of a meeting.", Parameters: json.RawMessage(`{"type":"object","properties":{"date":{"type":"string"}}}`)},
	{Name: "create_draft", Description: "Save a draft."},
}

func TestPromptsAndDetect(t *testing.T) {
	sys := protocol.ReActSystem("You are an assistant.", tools)
	assert.True(t, strings.HasPrefix(sys, "You are an assistant.\n\n"), "the scenario's system prompt comes first")
	for _, want := range []string{"Thought:", "Action:", "Action Input:", "Final Answer:", "Observation:",
		"- name: get_meeting_notes", "description: Return the notes of a meeting.", `parameters: {"type":"object","properties":{"date":{"type":"string"}}}`,
		"- name: create_draft", `parameters: {"type":"object","properties":{}}`} {
		assert.Contains(t, sys, want)
	}
	planner := protocol.PlannerSystem("", tools)
	assert.Contains(t, planner, "numbered plan")
	assert.Contains(t, planner, "- name: create_draft")

	req := func(system string, tools []policy.Tool) policy.Request {
		return policy.Request{Tools: tools, Messages: []trajectory.Message{{Role: "system", Content: system}, {Role: "user", Content: "task"}}}
	}
	assert.Equal(t, protocol.ReAct, protocol.Detect(req(sys, nil)))
	assert.Equal(t, protocol.Planner, protocol.Detect(req(planner, nil)))
	assert.Equal(t, protocol.Native, protocol.Detect(req(sys, tools)), "tools offered natively win")
	assert.Equal(t, protocol.Native, protocol.Detect(req("You are an assistant.", nil)))
	assert.Equal(t, protocol.Native, protocol.Detect(policy.Request{Messages: []trajectory.Message{{Role: "user", Content: "task"}}}))

	exec := protocol.ExecutorSystem("You are an assistant.", "1. get_meeting_notes\n2. create_draft")
	assert.True(t, strings.HasPrefix(exec, "You are an assistant.\n\n"))
	assert.True(t, strings.HasSuffix(exec, "1. get_meeting_notes\n2. create_draft"))
	assert.Equal(t, "You are an assistant.", protocol.ExecutorSystem("You are an assistant.", " "), "no plan, no plan section")
	assert.Equal(t, protocol.Native, protocol.Detect(req(exec, nil)))
}

func TestView(t *testing.T) {
	action := "Thought: go\nAction: create_draft\nAction Input: {\"to\": \"a@b\"}\nObservation: imagined"
	call := trajectory.ToolCall{ID: "abc", Type: "function", Function: trajectory.FunctionCall{Name: "create_draft", Arguments: `{"to": "a@b"}`}}
	native := []trajectory.ToolCall{
		{ID: "n1", Type: "function", Function: trajectory.FunctionCall{Name: "get_meeting_notes", Arguments: `{"date":"x"}`}},
		{ID: "n2", Type: "function", Function: trajectory.FunctionCall{Name: "create_draft", Arguments: `{}`}},
	}
	msgs := []trajectory.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "task"},
		{Role: "assistant", Content: action, ToolCalls: []trajectory.ToolCall{call}},
		{Role: "tool", ToolCallID: "abc", Name: "create_draft", Content: `{"status":"saved"}`},
		{Role: "assistant", Content: "hmm"},
		{Role: "user", Content: protocol.FormatHint("no \"Action:\" or \"Final Answer:\" line", []string{"create_draft"})},
		{Role: "assistant", ToolCalls: native},
		{Role: "tool", ToolCallID: "n1", Name: "get_meeting_notes", Content: `{"notes":"n"}`},
		{Role: "tool", ToolCallID: "n2", Name: "create_draft", Content: `{"error":"e"}`},
		{Role: "assistant", Content: "Final Answer: done"},
	}
	got := protocol.View(msgs)
	want := []trajectory.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "task"},
		{Role: "assistant", Content: "Thought: go\nAction: create_draft\nAction Input: {\"to\": \"a@b\"}"},
		{Role: "user", Content: `Observation: {"status":"saved"}`},
		{Role: "assistant", Content: "hmm"},
		msgs[5],
		{Role: "assistant", Content: "Action: get_meeting_notes\nAction Input: {\"date\":\"x\"}\nAction: create_draft\nAction Input: {}"},
		{Role: "user", Content: "Observation: {\"notes\":\"n\"}\nObservation: {\"error\":\"e\"}"},
		{Role: "assistant", Content: "Final Answer: done"},
	}
	assert.Equal(t, want, got)
	assert.True(t, strings.HasPrefix(msgs[5].Content, "Observation: Invalid format: "))
	assert.Contains(t, msgs[5].Content, "Action: <one of: create_draft>")
}
