package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// endpointFlags are the flags of commands that talk to a model.
type endpointFlags struct {
	baseURL        string
	apiKeyEnv      string
	requestTimeout time.Duration
	maxRetries     int
	tokenParam     string        // --token-param
	readyWait      time.Duration // --ready-timeout
	skipCheck      bool          // --skip-endpoint-check
	// omitTemperature: the command leaves temperature out (--temperature
	// omit), so the check's refusal of temperature 0 is no obstacle.
	omitTemperature bool
}

// policySpec splits "sim:NAME" or "openai:MODEL".
func policySpec(spec string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(spec, ":")
	if !ok || name == "" || (kind != "sim" && kind != "openai") {
		return "", "", fmt.Errorf("invalid --policy %q: want sim:NAME (simulated) or openai:MODEL (an OpenAI-compatible endpoint)", spec)
	}
	return kind, name, nil
}

// buildPolicy returns the policy for a spec, and the OpenAI client when
// there is one (for retry statistics).
func buildPolicy(spec string, ef endpointFlags, concurrency int, ss []*scenario.Scenario) (policy.Policy, *openai.Client, error) {
	kind, name, err := policySpec(spec)
	if err != nil {
		return nil, nil, err
	}
	if kind == "sim" {
		prof, err := sim.Lookup(name)
		if err != nil {
			return nil, nil, err
		}
		return sim.New(prof, ss), nil, nil
	}
	if ef.baseURL == "" {
		return nil, nil, fmt.Errorf("--policy %s needs --base-url (for example http://localhost:8000/v1)", spec)
	}
	cfg, err := ef.clientConfig(name, concurrency)
	if err != nil {
		return nil, nil, err
	}
	c, err := openai.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, c, nil
}
