package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/spf13/pflag"
)

// temperatureFlag is a sampling temperature or "omit" (not sent: reasoning
// models that take only their default).
type temperatureFlag struct {
	value float64
	omit  bool
}

func (t *temperatureFlag) String() string {
	if t.omit {
		return "omit"
	}
	return strconv.FormatFloat(t.value, 'g', -1, 64)
}

func (t *temperatureFlag) Set(v string) error {
	if v == "omit" || v == "none" {
		t.value, t.omit = 0, true
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 2 {
		return fmt.Errorf("want a number from 0 to 2, or omit (not sent)")
	}
	t.value, t.omit = f, false
	return nil
}

func (t *temperatureFlag) Type() string { return "float|omit" }

// addEndpointFlags registers the endpoint flags of a command that runs
// a model: base URL (described by baseURLHelp, "" for the usual words), key
// variable, request timeout and retries, then the fidelity extras.
func addEndpointFlags(fl *pflag.FlagSet, ef *endpointFlags, baseURLHelp string) {
	if baseURLHelp == "" {
		baseURLHelp = "OpenAI-compatible base URL, e.g. http://localhost:8000/v1"
	}
	fl.StringVar(&ef.baseURL, "base-url", "", baseURLHelp)
	fl.StringVar(&ef.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key")
	fl.DurationVar(&ef.requestTimeout, "request-timeout", 5*time.Minute, "timeout of one HTTP request")
	fl.IntVar(&ef.maxRetries, "max-retries", 5, "retries of a request on 429, 5xx and timeouts")
}

// addEndpointExtras registers the endpoint-fidelity flags every command
// that talks to a model shares.
func addEndpointExtras(fl *pflag.FlagSet, ef *endpointFlags) {
	fl.StringVar(&ef.tokenParam, "token-param", "auto", "field of the per-turn token limit: auto (max_tokens, switching to max_completion_tokens when the endpoint refuses it), max_tokens or max_completion_tokens")
	fl.DurationVar(&ef.readyWait, "ready-timeout", openai.DefaultReadyWait, "how long to wait for a server answering 503 \"Loading model\" to become ready (polling /health and /v1/models); 0: do not wait")
	fl.BoolVar(&ef.skipCheck, "skip-endpoint-check", false, "do not probe the endpoint (antidrift endpoint check) before starting")
}

// clientConfig is the openai.Config the endpoint flags describe.
func (ef endpointFlags) clientConfig(model string, concurrency int) (openai.Config, error) {
	tp, err := openai.ParseTokenParam(ef.tokenParam)
	if err != nil {
		return openai.Config{}, fmt.Errorf("--token-param: %w", err)
	}
	ready := ef.readyWait
	if ready == 0 {
		ready = -1 // the flag's 0 means "do not wait"
	}
	key, err := apiKey(ef, os.Stderr)
	if err != nil {
		return openai.Config{}, err
	}
	return openai.Config{
		BaseURL: ef.baseURL, Model: model, APIKey: key,
		Timeout: ef.requestTimeout, MaxRetries: ef.clientRetries(), Concurrency: concurrency,
		TokenParam: tp, ReadyWait: ready,
	}, nil
}

// preflight runs the endpoint check before a command starts work against
// an endpoint. What would make every request fail is an error naming the
// fix; what antidrift works around (markup in content) is a warning on w.
// needTools is false for the judge and the react framework, which send no
// tools.
func preflight(ctx context.Context, w io.Writer, c *openai.Client, ef endpointFlags, needTools bool) error {
	if c == nil || ef.skipCheck {
		return nil
	}
	// The check waits for a loading server as the run would (--ready-timeout),
	// then has its own few minutes for the probes and their retries.
	ctx, cancel := context.WithTimeout(ctx, max(ef.readyWait, 0)+2*time.Minute)
	defer cancel()
	rep, err := c.Check(ctx)
	if err != nil {
		return fmt.Errorf("endpoint check: %w", err)
	}
	c.Learn(rep) // the token parameter and num_ctx, so the run need not rediscover them
	var fatal, warn []string
	for _, cp := range rep.Capabilities {
		if cp.Status != openai.CapNo {
			continue
		}
		line := fmt.Sprintf("%s: %s", cp.Name, cp.Detail)
		if cp.Fix != "" {
			line += " — fix: " + cp.Fix
		}
		switch {
		case cp.Name == "tool calls" && !needTools:
		case cp.Name == "tool calls" && (rep.ToolCalls == "markup_in_content" || rep.ToolCalls == "dropped"):
			warn = append(warn, line)
		case cp.Name == "seed" || cp.Name == "model listed" || cp.Name == "calls to hidden tools":
			warn = append(warn, line)
		case cp.Name == "temperature 0" && ef.omitTemperature:
		default:
			fatal = append(fatal, line)
		}
	}
	for _, l := range warn {
		fmt.Fprintf(w, "antidrift: warning: endpoint %s model %s: %s\n", rep.BaseURL, rep.Model, l)
	}
	if len(fatal) > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("antidrift: endpoint %s model %s is not usable as configured (nothing was written):\n  %s\n(run antidrift endpoint check --base-url URL --model M for the full report; --skip-endpoint-check skips this check)",
			rep.BaseURL, rep.Model, strings.Join(fatal, "\n  "))}
	}
	return nil
}
