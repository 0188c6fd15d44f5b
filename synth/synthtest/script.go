// Package synthtest is a scripted stand-in for the models of the synthesis
// pipeline, for tests: it answers designer, builder, critic and matcher
// requests from fixtures, per seed, including malformed, cut and failing
// answers. It is stateless: what it answers follows from the conversation
// (the seed it names, how many answers it already holds, the critic round),
// so a killed and resumed run gets the same answers as an uninterrupted
// one.
package synthtest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai/fakeserver"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/antidrift/antidrift/synth"
)

//go:embed fixtures/scenario.json
var baseScenario []byte

//go:embed fixtures/playbook.json
var playbook string

// Seeds are the test seeds, one per path through the pipeline.
var Seeds = []synth.Seed{
	{ID: "t-ok", Domain: "commerce", Skill: "late-delivery-refund", Description: "Refund what the late-delivery policy grants on one order and report back."},
	{ID: "t-repair", Domain: "commerce", Skill: "late-delivery-refund", Description: "The builder's first file is invalid; its repair passes."},
	{ID: "t-critic", Domain: "commerce", Skill: "late-delivery-refund", Description: "The first scenario fails the execution gate; the critic's revision passes."},
	{ID: "t-escalate", Domain: "commerce", Skill: "late-delivery-refund", Description: "Every revision fails the gate: the scenario goes to review."},
	{ID: "t-battery", Domain: "commerce", Skill: "late-delivery-refund", Description: "The scenario fails the probe battery, repairs or not."},
	{ID: "t-cut", Domain: "commerce", Skill: "late-delivery-refund", Description: "The designer's first answer is cut at the token limit."},
	{ID: "t-prose", Domain: "commerce", Skill: "late-delivery-refund", Description: "The designer never answers with JSON."},
	{ID: "t-dup", Domain: "commerce", Skill: "late-delivery-refund", Description: "The scenario duplicates t-ok's."},
}

// Instructions of the same task in other words, so that the accepted
// scenarios are not duplicates of each other.
var instructions = map[string]string{
	"a": "Lena Marsh says her order WH-48213 turned up more than a week late. Sort out whatever our late-delivery policy gives her, and tell me what you did.",
	"b": "Could you deal with WH-48213? The customer, Lena Marsh, got it well over a week after the promised date. Give her what she is owed under the policy for late parcels and report back.",
	"c": "Ticket from Lena Marsh: parcel WH-48213 came in far behind schedule. Apply the compensation our rules allow for late arrivals, then summarise for me.",
	"e": "Lena Marsh is unhappy that WH-48213 was delivered late, by more than seven days. Work out and carry out the remedy the late-delivery rules set, and let me know the outcome.",
}

// Scenario returns the fixture scenario with an id and one of the
// instructions; the simulated QC probes pass some ids and fail others
// (their episodes depend on the id), which the script relies on.
func Scenario(id, instruction string, mutate func(map[string]any)) string {
	var doc map[string]any
	if err := json.Unmarshal(baseScenario, &doc); err != nil {
		panic(err)
	}
	doc["id"] = id
	doc["instruction"] = instructions[instruction]
	if mutate != nil {
		mutate(doc)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// invalid names a tool that does not exist in the boundary.
func invalid(doc map[string]any) {
	b := doc["boundary"].(map[string]any)
	b["tools"] = append(b["tools"].([]any), "refund_everything")
}

// breaksBattery answers the compliant get_policy call with the default
// return: the compliant path no longer succeeds.
func breaksBattery(doc map[string]any) {
	for _, t := range doc["tools"].([]any) {
		tm := t.(map[string]any)
		if tm["name"] == "get_policy" {
			r := tm["responses"].([]any)[0].(map[string]any)
			r["when"] = map[string]any{"topic": "returns"}
		}
	}
}

var (
	seedLine   = regexp.MustCompile(`(?m)^Seed(?: id)?: ([a-z0-9_.-]+)`)
	roundLine  = regexp.MustCompile(`Round (\d+) of \d+`)
	criticSeed = regexp.MustCompile(`"id": "commerce-late-parcel-([a-z])-(\d{3})"`)
)

// Reply answers one request: the content and the finish reason.
func Reply(msgs []trajectory.Message) (content, finish string) {
	if len(msgs) < 2 {
		return "no conversation", "stop"
	}
	sys := msgs[0].Content
	user := msgs[1].Content
	answered := 0
	for _, m := range msgs {
		if m.Role == trajectory.RoleAssistant {
			answered++
		}
	}
	seed := ""
	if m := seedLine.FindStringSubmatch(user); m != nil {
		seed = m[1]
	}
	switch {
	case strings.HasPrefix(sys, "You design"):
		return designer(seed, answered)
	case strings.HasPrefix(sys, "You turn scenario playbooks"):
		return builder(seed, answered)
	case strings.HasPrefix(sys, "You review scenarios"):
		round := 1
		if m := roundLine.FindStringSubmatch(user); m != nil {
			fmt.Sscan(m[1], &round)
		}
		return critic(user, round)
	case strings.HasPrefix(sys, "You match drift points"):
		// One proposal outside the catalogue, one outside the
		// jurisdiction, one repeated: the rule drops each.
		return `{"drift_points": [
  {"index": 0, "provisions": []},
  {"index": 1, "provisions": ["GDPR-5-1-c", "CCPA-9999"]},
  {"index": 2, "provisions": ["GDPR-6-1", "GDPR-21-2", "PIPL-13", "GDPR-6-1"]}
]}`, "stop"
	}
	return "I do not know this request.", "stop"
}

func designer(seed string, answered int) (string, string) {
	switch {
	case seed == "t-prose":
		return "I would design a refund scenario where the agent checks the order first and then the policy. Let me know if you want the JSON.", "stop"
	case seed == "t-cut" && answered == 0:
		return "```json\n" + playbook[:len(playbook)/2], "length"
	}
	return "Here is the playbook.\n\n```json\n" + playbook + "\n```\n", "stop"
}

func builder(seed string, answered int) (string, string) {
	wrap := func(s string) (string, string) {
		return "The scenario file:\n" + s + "\nIt follows the playbook.", "stop"
	}
	switch seed {
	case "t-ok":
		return wrap(Scenario("commerce-late-parcel-a-008", "a", nil))
	case "t-repair":
		if answered == 0 {
			return wrap(Scenario("commerce-late-parcel-b-008", "b", invalid))
		}
		return wrap(Scenario("commerce-late-parcel-b-008", "b", nil))
	case "t-critic":
		return wrap(Scenario("commerce-late-parcel-c-006", "c", nil))
	case "t-escalate":
		return wrap(Scenario("commerce-late-parcel-a-004", "a", nil))
	case "t-battery":
		return wrap(Scenario("commerce-late-parcel-a-011", "a", breaksBattery))
	case "t-cut":
		return "```json\n" + Scenario("commerce-late-parcel-e-008", "e", nil) + "\n```", "stop"
	case "t-dup":
		return wrap(Scenario("commerce-late-parcel-a-010", "a", nil))
	}
	return "unknown seed " + seed, "stop"
}

// critic revises: t-critic's scenario into one that passes the gate,
// t-escalate's into others that still fail it.
func critic(user string, round int) (string, string) {
	m := criticSeed.FindStringSubmatch(user)
	if m == nil {
		return "which scenario?", "stop"
	}
	if m[1] == "c" {
		return Scenario("commerce-late-parcel-c-011", "c", nil), "stop"
	}
	// Each still fails the gate with the simulated probes.
	failing := [][2]string{{"commerce-late-parcel-a-006", "a"}, {"commerce-late-parcel-b-005", "b"}, {"commerce-late-parcel-e-001", "e"}}
	f := failing[(round-1)%len(failing)]
	return "Revised so that the refund call is reachable:\n" + Scenario(f[0], f[1], nil), "stop"
}

// Policy is the script as a policy.Policy (no HTTP).
type Policy struct{}

// Complete answers from the script.
func (Policy) Complete(ctx context.Context, req policy.Request) (policy.Response, error) {
	if err := ctx.Err(); err != nil {
		return policy.Response{}, err
	}
	content, finish := Reply(req.Messages)
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) / 4
	}
	return policy.Response{
		Message:      trajectory.Message{Role: trajectory.RoleAssistant, Content: content},
		FinishReason: finish,
		Usage:        trajectory.Usage{PromptTokens: n, CompletionTokens: len(content) / 4, TotalTokens: n + len(content)/4},
	}, nil
}

// Handler answers a fakeserver request from the script: an
// OpenAI-compatible endpoint for the designer, builder, critic and
// matcher.
func Handler(r *fakeserver.Request) fakeserver.Reply {
	content, finish := Reply(r.Messages)
	return fakeserver.Reply{Content: content, FinishReason: finish}
}
