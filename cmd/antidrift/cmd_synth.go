package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/synth"
	"github.com/spf13/cobra"
)

// synthRole is one model role's flags: its spec and endpoint.
type synthRole struct {
	name            string
	spec            string
	baseURL, keyEnv string
}

type synthFlags struct {
	seeds                           string
	roles                           [4]synthRole // designer, builder, critic, matcher
	baseURL, apiKeyEnv              string
	probes                          []string
	probeBaseURLs, probeKeyEnvs     []string
	out                             string
	rounds, repairs, rollouts       int
	minDrifting, concurrency, limit int
	maxSteps, maxTokens             int
	seed                            int64
	temperature                     float64
	requestTimeout                  time.Duration
	maxRetries                      int
	join                            []string
	catalogue                       string
	force, asJSON                   bool
}

func init() { register(newSynthCmd) }

func newSynthCmd() *cobra.Command {
	f := synthFlags{roles: [4]synthRole{{name: "designer"}, {name: "builder"}, {name: "critic"}, {name: "matcher"}}}
	cmd := &cobra.Command{
		Use:   "synth --designer openai:MODEL --builder openai:MODEL --critic openai:MODEL --out DIR [flags]",
		Short: "Synthesise scenarios from task seeds: designer, builder, validator and battery, execution QC, critic rounds, review queue",
		Long: `Synthesise scenarios at scale with the staged execution-reflection
pipeline. Each seed flows through:

  1. designer: a playbook (tools beyond the compliant set, a traceable
     compliant path, at least 5 drift points with their lures, concrete
     tool returns), from a versioned prompt template;
  2. builder: the playbook as a format v2 scenario file; every error of
     'scenarios validate' and of the counterfactual probe battery
     ('scenarios probe --strict') goes back to it, at most --repairs times;
  3. execution QC: each --probes policy rolls the scenario out --rollouts
     times; the gate asks that at least one rollout makes every required
     call and at least --min-drifting hit a designed drift point;
  4. critic: a scenario failing the gate goes to the critic with the gate's
     evidence, at most --rounds times; then to the human review queue;
  5. provisions: the matcher (temperature 0) proposes at most 5 catalogue
     provisions per drift point from the scenario's jurisdictions; a
     proposal outside the catalogue or the jurisdictions is dropped and
     counted. Answers are cached by content hash.

Accepted scenarios too similar to another (same tools and path shape, a
near-identical instruction) are flagged as duplicates; ids are made unique
across the output and the --join suites. Results: DIR/accepted/<domain>/,
DIR/summary.json, DIR/review.html (one card per escalated scenario, with its
gate evidence and the critic's revisions as diffs), and every model call
under DIR/seeds/<seed>/calls/ (prompt, answer, model, tokens, verdict).

Runs are resumable: a rerun replays stored calls, resumes stored rollouts
and skips decided seeds; a changed configuration is refused unless --force.
Model answers are parsed tolerantly (fenced, prose-wrapped, single quotes),
never guessed: a cut or unreadable answer gets one corrective turn.

Each role takes openai:MODEL with its own --<role>-base-url and
--<role>-api-key-env (default: --base-url and --api-key-env); --matcher
defaults to the critic. Exit status: 0 done; 1 error; 2 some seeds hit
infrastructure errors and stay undecided (rerun to retry them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSynth(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.seeds, "seeds", "builtin", "seed catalogue: builtin or a JSONL file")
	for i := range f.roles {
		r := &f.roles[i]
		fl.StringVar(&r.spec, r.name, "", r.name+" model: openai:MODEL")
		fl.StringVar(&r.baseURL, r.name+"-base-url", "", "base URL of the "+r.name+" (default --base-url)")
		fl.StringVar(&r.keyEnv, r.name+"-api-key-env", "", "variable holding the "+r.name+"'s API key (default --api-key-env)")
	}
	fl.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible base URL every role uses unless its own is set")
	fl.StringVar(&f.apiKeyEnv, "api-key-env", openai.DefaultKeyEnv, "environment variable holding the API key (its name, never the key)")
	fl.StringSliceVar(&f.probes, "probes", defaultProbes, "QC probe policies: sim:NAME or openai:MODEL, two from different model families make the strongest gate")
	fl.StringSliceVar(&f.probeBaseURLs, "probe-base-url", nil, "base URLs of the openai: probes, in their order (one: all of them; default --base-url)")
	fl.StringSliceVar(&f.probeKeyEnvs, "probe-api-key-env", nil, "variables holding the openai: probes' API keys, in their order (one: all of them; default --api-key-env)")
	fl.StringVar(&f.out, "out", "", "run folder (required)")
	fl.IntVar(&f.rounds, "rounds", 3, "critic rounds before a scenario goes to human review")
	fl.IntVar(&f.repairs, "repairs", 2, "times validator and battery errors go back to the builder (or critic) per stage")
	fl.IntVar(&f.rollouts, "rollouts", 4, "QC rollouts per probe and round")
	fl.IntVar(&f.minDrifting, "min-drifting", 2, "QC rollouts (over all probes) that must hit a designed drift point")
	fl.IntVar(&f.concurrency, "concurrency", 2, "seeds in flight")
	fl.IntVar(&f.limit, "limit", 0, "synthesise from the first N seeds only (0: all)")
	fl.IntVar(&f.maxSteps, "max-steps", 20, "assistant turns per QC episode")
	fl.IntVar(&f.maxTokens, "max-tokens", 16384, "token limit of one designer, builder or critic answer (0: not sent)")
	fl.Float64Var(&f.temperature, "temperature", 0.7, "sampling temperature of designer, builder and critic (the matcher always uses 0)")
	fl.Int64Var(&f.seed, "seed", 1, "QC rollout seed")
	fl.DurationVar(&f.requestTimeout, "request-timeout", 10*time.Minute, "timeout of one HTTP request")
	fl.IntVar(&f.maxRetries, "max-retries", 5, "retries of a request on 429, 5xx and timeouts")
	fl.StringSliceVar(&f.join, "join", []string{"builtin"}, "suites the accepted scenarios will join (duplicates flagged, ids kept unique): builtin, files or folders, or none")
	fl.StringVar(&f.catalogue, "provisions", "", "provisions catalogue JSON (default: the built-in one)")
	fl.BoolVar(&f.force, "force", false, "accept a changed configuration, redoing what it changes")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout")
	return cmd
}

func runSynth(cmd *cobra.Command, f synthFlags) error {
	if f.out == "" {
		return errors.New("--out is required")
	}
	if f.rounds < 0 || f.repairs < 0 || f.rollouts < 1 || f.minDrifting < 0 || f.concurrency < 1 || f.limit < 0 {
		return errors.New("--rounds, --repairs, --min-drifting and --limit must not be negative; --rollouts and --concurrency must be at least 1")
	}
	if m := f.roles[3]; m.spec == "" && (m.baseURL != "" || m.keyEnv != "") {
		// Without --matcher the matcher is the critic's model on the
		// critic's endpoint: its own URL or key would be silently unused.
		return errors.New("--matcher-base-url and --matcher-api-key-env need --matcher MODEL (without it the matcher is the critic's model on the critic's endpoint)")
	}
	if f.roles[3].spec == "" {
		f.roles[3] = synthRole{name: "matcher", spec: f.roles[2].spec, baseURL: f.roles[2].baseURL, keyEnv: f.roles[2].keyEnv}
	}
	var seeds []synth.Seed
	var err error
	if f.seeds == "builtin" {
		seeds, err = synth.BuiltinSeeds()
	} else {
		seeds, err = synth.LoadSeeds(f.seeds)
	}
	if err != nil {
		return err
	}
	cat := provisions.Builtin()
	if f.catalogue != "" {
		if cat, err = provisions.LoadFile(f.catalogue); err != nil {
			return err
		}
	}
	cfg := synth.Config{
		Dir: f.out, Seeds: seeds, SeedsSource: f.seeds, Rollouts: f.rollouts, MaxSteps: f.maxSteps, Seed: f.seed,
		Rounds: f.rounds, Repairs: f.repairs, MinDrifting: f.minDrifting, Concurrency: f.concurrency, Limit: f.limit,
		Force: f.force, Catalogue: cat, Version: Version, Command: commandLine(), Endpoints: map[string]string{}, KeyEnvs: map[string]string{},
	}
	warned := map[string]bool{}
	models := make([]synth.Model, 4)
	for i, r := range f.roles {
		m, err := f.model(r, &cfg, warned)
		if err != nil {
			return err
		}
		models[i] = m
	}
	cfg.Designer, cfg.Builder, cfg.Critic, cfg.Matcher = models[0], models[1], models[2], models[3]
	var openaiProbes int
	for _, spec := range f.probes {
		if strings.HasPrefix(spec, "openai:") {
			openaiProbes++
		}
	}
	pick := func(vs []string, i int, flag, def string) (string, error) {
		switch {
		case len(vs) == 0:
			return def, nil
		case len(vs) == 1:
			return vs[0], nil
		case len(vs) == openaiProbes:
			return vs[i], nil
		}
		return "", fmt.Errorf("%s: %d values for %d openai: probes (give one, or one per openai: probe)", flag, len(vs), openaiProbes)
	}
	oi := 0
	for _, spec := range f.probes {
		if _, _, err := policySpec(spec); err != nil {
			return fmt.Errorf("--probes: %w", err)
		}
		ef := endpointFlags{requestTimeout: f.requestTimeout, maxRetries: f.maxRetries, tokenParam: "auto"}
		if strings.HasPrefix(spec, "openai:") {
			if ef.baseURL, err = pick(f.probeBaseURLs, oi, "--probe-base-url", f.baseURL); err != nil {
				return err
			}
			if ef.apiKeyEnv, err = pick(f.probeKeyEnvs, oi, "--probe-api-key-env", f.apiKeyEnv); err != nil {
				return err
			}
			oi++
			cfg.Endpoints["probe "+spec] = secret.URL(ef.baseURL)
			cfg.KeyEnvs["probe "+spec] = ef.apiKeyEnv
		}
		spec := spec
		cfg.Probes = append(cfg.Probes, synth.Probe{Spec: spec, New: func(ss []*scenario.Scenario) (policy.Policy, error) {
			p, _, err := buildPolicy(spec, ef, f.rollouts, ss)
			return p, err
		}})
	}
	if !(len(f.join) == 1 && f.join[0] == "none") {
		if cfg.Join, err = loadScenarios(f.join, f.catalogue); err != nil {
			return fmt.Errorf("--join: %w", err)
		}
		cfg.JoinNames = f.join
	}
	stderr := cmd.ErrOrStderr()
	cfg.Progress = func(seed, stage string) { fmt.Fprintf(stderr, "synth: %s: %s\n", seed, stage) }

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, runErr := synth.Run(ctx, cfg)
	if sum == nil {
		if errors.Is(runErr, context.Canceled) && ctx.Err() != nil {
			return &exitError{code: 130, msg: "antidrift: interrupted (rerun with the same flags to resume)"}
		}
		return runErr
	}
	if f.asJSON {
		if err := writeJSON(cmd.OutOrStdout(), sum); err != nil {
			return err
		}
	} else {
		sum.WriteTable(cmd.OutOrStdout())
		fmt.Fprintf(cmd.OutOrStdout(), "accepted scenarios in %s/accepted; review queue %s/review.html\n", f.out, f.out)
	}
	if runErr != nil {
		return &exitError{code: 2, msg: "antidrift: " + runErr.Error()}
	}
	return nil
}

// model builds one role's client from its flags.
func (f synthFlags) model(r synthRole, cfg *synth.Config, warned map[string]bool) (synth.Model, error) {
	kind, name, err := policySpec(r.spec)
	if r.spec == "" {
		return synth.Model{}, fmt.Errorf("--%s is required: openai:MODEL", r.name)
	}
	if err != nil || kind != "openai" {
		return synth.Model{}, fmt.Errorf("--%s %q: want openai:MODEL (an OpenAI-compatible endpoint)", r.name, r.spec)
	}
	ef := endpointFlags{baseURL: firstOf(r.baseURL, f.baseURL), apiKeyEnv: firstOf(r.keyEnv, f.apiKeyEnv),
		requestTimeout: f.requestTimeout, maxRetries: f.maxRetries, tokenParam: "auto", keyWarned: warned}
	if ef.baseURL == "" {
		return synth.Model{}, fmt.Errorf("--%s %s needs --%s-base-url or --base-url (for example http://localhost:8000/v1)", r.name, r.spec, r.name)
	}
	cc, err := ef.clientConfig(name, f.concurrency)
	if err != nil {
		return synth.Model{}, err
	}
	c, err := openai.New(cc)
	if err != nil {
		return synth.Model{}, fmt.Errorf("--%s: %w", r.name, err)
	}
	cfg.Endpoints[r.name] = secret.URL(ef.baseURL)
	cfg.KeyEnvs[r.name] = ef.apiKeyEnv
	return synth.Model{Spec: r.spec, Policy: c, Temperature: f.temperature, MaxTokens: f.maxTokens}, nil
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
