package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
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
	// keyWarned, when set, is shared by the endpoints of one command, so
	// that an unset key variable is warned about once, not once per role.
	keyWarned map[string]bool
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

// apiKey reads the key from the variable --api-key-env names. A value that
// looks like a key itself (the key pasted instead of the variable's name) is
// refused without being echoed; an unset or empty variable is a warning,
// since local servers (vLLM, Ollama, llama.cpp) usually need no key.
func apiKey(ef endpointFlags, stderr io.Writer) (string, error) {
	name := ef.apiKeyEnv
	if name == "" {
		name = openai.DefaultKeyEnv
	}
	if err := secret.CheckEnvName("--api-key-env", name); err != nil {
		return "", err
	}
	key := openai.KeyFromEnv(name)
	if key == "" && ef.keyWarned != nil && ef.keyWarned[name] {
		return key, nil
	}
	if ef.keyWarned != nil {
		ef.keyWarned[name] = true
	}
	if key == "" && !loopbackURL(ef.baseURL) {
		fmt.Fprintf(stderr, "antidrift: warning: --api-key-env %s: the variable is not set or empty; requests are sent without a key\n", name)
	}
	return key, nil
}

// loopbackURL reports whether a base URL names this machine (localhost or
// a loopback address): a local server (vLLM, Ollama, llama.cpp, the demo's
// sim-server) usually needs no key, so no key is no warning there; a
// server that does want one answers 401, which stops the run with its own
// message.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clientRetries is --max-retries as the client takes it: the flag's 0 means
// no retry, which the client spells as a negative number (its 0 selects
// the default).
func (ef endpointFlags) clientRetries() int {
	if ef.maxRetries == 0 {
		return -1
	}
	return ef.maxRetries
}
