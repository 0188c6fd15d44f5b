package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/skills"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/antidrift/antidrift/rollout/skill/selection"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/spf13/cobra"
)

type selectFlags struct {
	task        string
	library     string
	policy      string
	endpoint    endpointFlags
	rollouts    int
	limit       int
	concurrency int
	seed        int64
	out         string
	shard       string
	checkpoint  string
	step        int
	run         string
	force       bool
	asJSON      bool
	turnTokens  int
	temperature temperatureFlag
}

func init() { register(newSelectCmd) }

func newSelectCmd() *cobra.Command {
	var f selectFlags
	cmd := &cobra.Command{
		Use:   "select --task skill|tools|pipeline --library builtin:NAME|FILE --policy sim:NAME|openai:MODEL --out DIR",
		Short: "Run the least-privilege selection tasks of a skill library into a run folder (resumable)",
		Long: `Run a skill library's queries through a policy, --rollouts times each:

  skill     Task 1: choose one skill from the library for the request
  tools     Task 2: given a skill's SKILL.md and every tool of the domain,
            answer with a JSON list of tool calls
  pipeline  Task 1's choice fed into Task 2 for the same request, and Task
            2's calls executed in a mock environment built from the library,
            labelled by the drift detector

Prompts carry no least-privilege instruction and no privilege label. Each
answer is parsed tolerantly (a malformed answer is recorded as such) and
labelled exact_match, under_privilege, over_privilege or no_action.

Rerunning the same command on the same folder resumes, as rollout does.
Libraries: ` + strings.Join(builtinLibraries(), ", ") + ` or a JSON file in the library format.
Simulated policies (sim:base, sim:sft, sim:dpo-1, sim:dpo-2, sim:overcautious)
are behavioural simulations, not language models. The baselines sim:keyword,
sim:overlap, sim:lowest and sim:highest are reference selectors that need
no model (a verb-class keyword rule, most shared words, and the lowest or
highest privilege on the request's object): run them beside every model, so
that a score is read against what a rule gets on the same library.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSelect(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.task, "task", "skill", "skill (Task 1), tools (Task 2) or pipeline (both, executed)")
	fl.StringVar(&f.library, "library", "builtin:email", "builtin:NAME or a library file")
	fl.StringVar(&f.policy, "policy", "", "sim:NAME (simulated) or openai:MODEL")
	addEndpointFlags(fl, &f.endpoint, "")
	fl.IntVar(&f.rollouts, "rollouts", 1, "answers per query")
	fl.IntVar(&f.limit, "limit", 0, "use only the task's first N queries; 0: all")
	fl.IntVar(&f.concurrency, "concurrency", 32, "episodes in flight")
	fl.Int64Var(&f.seed, "seed", 1, "run seed")
	fl.StringVar(&f.out, "out", "", "run folder")
	fl.StringVar(&f.shard, "shard", "0/1", "run shard i of n (i/n); join with merge")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint name recorded in every record (default: the policy)")
	fl.IntVar(&f.step, "step", -1, "the checkpoint's training step, recorded in the manifest (-1: unknown)")
	fl.StringVar(&f.run, "run", "", "run name (default: derived from the plan)")
	fl.BoolVar(&f.force, "force", false, "start over in a folder holding another plan (old records are moved aside)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout")
	fl.IntVar(&f.turnTokens, "max-turn-tokens", 0, "max_tokens sent with each request; 0: not sent")
	fl.Var(&f.temperature, "temperature", "sampling temperature (0 is sent as 0), or omit to leave it out (reasoning models that accept only their default)")
	addEndpointExtras(fl, &f.endpoint)
	_ = cmd.MarkFlagRequired("policy")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func builtinLibraries() []string {
	var out []string
	for _, n := range skill.BuiltinNames() {
		out = append(out, "builtin:"+n)
	}
	return out
}

// selectPolicy builds the policy of a select run.
func selectPolicy(spec string, ef endpointFlags, concurrency int, lib *skill.Library) (policy.Policy, *openai.Client, error) {
	kind, name, err := policySpec(spec)
	if err != nil {
		return nil, nil, err
	}
	if kind == "sim" {
		prof, err := sim.LookupSelection(name)
		if err != nil {
			return nil, nil, err
		}
		return sim.NewSelection(prof, lib), nil, nil
	}
	return buildPolicy(spec, ef, concurrency, nil)
}

func runSelect(cmd *cobra.Command, f selectFlags) error {
	task, err := skill.ParseTask(f.task)
	if err != nil {
		return fmt.Errorf("--task: %w", err)
	}
	if f.rollouts < 1 {
		return fmt.Errorf("--rollouts must be at least 1")
	}
	shard, err := engine.ParseShard(f.shard)
	if err != nil {
		return err
	}
	lib, err := skill.Open(f.library)
	if err != nil {
		return err
	}
	f.endpoint.omitTemperature = f.temperature.omit
	pol, client, err := selectPolicy(f.policy, f.endpoint, f.concurrency, lib)
	if err != nil {
		return err
	}
	// The selection tasks answer in text: the endpoint need not call tools.
	if err := preflight(cmd.Context(), cmd.ErrOrStderr(), client, f.endpoint, false); err != nil {
		return err
	}
	kind, model, _ := policySpec(f.policy)
	checkpoint := f.checkpoint
	if checkpoint == "" {
		checkpoint = f.policy
	}
	qs := selection.Queries(selection.Config{Library: lib, Task: task, Limit: f.limit})
	ids := make([]string, len(qs))
	for i, q := range qs {
		ids[i] = q.ID
	}
	plan := store.Plan{
		ScenarioSource: f.library, ScenarioHash: skill.Hash(lib), ScenarioIDs: ids,
		Policy: f.policy, Checkpoint: checkpoint, Framework: selection.Framework(task), Rollouts: f.rollouts,
		Seed: f.seed, Shard: shard.String(), Temperature: f.temperature.value, OmitTemperature: f.temperature.omit, MaxTurnTokens: f.turnTokens,
	}
	if kind == "openai" {
		plan.Model = model
	}
	runName := f.run
	if runName == "" {
		runName = planName(plan)
	}
	man := store.Manifest{
		Version: Version, Run: runName, Created: time.Now().UTC().Format(time.RFC3339), Plan: plan,
		Settings: store.Settings{BaseURL: secret.URL(f.endpoint.baseURL), Concurrency: f.concurrency, Command: commandLineIn(f.out)},
	}
	if kind == "openai" {
		man.Settings.APIKeyEnv = f.endpoint.apiKeyEnv
	}
	if f.step >= 0 {
		step := f.step
		man.Step = &step
	}
	run, err := store.Open(f.out, man, f.force)
	if err != nil {
		return err
	}
	cfg := selection.Config{
		Library: lib, Task: task, Policy: pol, PolicyName: f.policy, Checkpoint: checkpoint,
		Rollouts: f.rollouts, Limit: f.limit, Concurrency: f.concurrency, Seed: f.seed, Shard: shard,
		Temperature: f.temperature.value, OmitTemperature: f.temperature.omit, MaxTurnTokens: f.turnTokens, Version: Version,
	}
	prog := newSelectProgress(len(selection.Plan(cfg, runName)), run.DoneCount(), client)
	cfg.OnRecord = prog.record
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, runErr := selection.Run(ctx, cfg, run)
	prog.finish()
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return &exitError{code: 130, msg: fmt.Sprintf("antidrift: interrupted; %d answers are saved in %s; rerun the same command to resume", run.DoneCount()+sum.Ran-sum.InfraErrors, f.out)}
		}
		return fmt.Errorf("select stopped: %w (finished answers are saved in %s; rerun the same command to resume)", runErr, f.out)
	}
	res, n, err := scoreSelection(f.out)
	if err != nil {
		return err
	}
	ss := selectSummary{Run: runName, Out: f.out, Task: string(task), Library: lib.Name, Planned: sum.Planned, Skipped: sum.Skipped,
		Ran: sum.Ran, InfraErrors: sum.InfraErrors, Records: n, ElapsedSeconds: sum.Elapsed.Seconds(), Simulated: kind == "sim"}
	for _, r := range res.Rows {
		if r.Domain == skills.All && r.Setting == skills.All {
			ss.Overall = append(ss.Overall, r)
		}
	}
	for _, r := range res.Pipeline {
		if r.Domain == skills.All && r.Setting == skills.All {
			ss.Pipeline = append(ss.Pipeline, r)
		}
	}
	if f.asJSON {
		if err := writeJSON(cmd.OutOrStdout(), ss); err != nil {
			return err
		}
	} else {
		ss.print(cmd.OutOrStdout())
	}
	if sum.InfraErrors > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("antidrift: %d answers failed with infrastructure errors (see %s/errors/); rerun the same command to retry them", sum.InfraErrors, f.out)}
	}
	return nil
}

// scoreSelection computes the selection metrics of run folders.
func scoreSelection(dirs ...string) (skills.Result, int, error) {
	var recs []*trajectory.Record
	it := store.Records(dirs...)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		recs = append(recs, &r)
	}
	if err := it.Err(); err != nil {
		return skills.Result{}, 0, err
	}
	return skills.Compute(recs, skills.Options{Bootstrap: metrics.Bootstrap{Seed: 1}}), len(recs), nil
}

type selectSummary struct {
	Run            string               `json:"run"`
	Out            string               `json:"out"`
	Task           string               `json:"task"`
	Library        string               `json:"library"`
	Simulated      bool                 `json:"simulated"`
	Planned        int                  `json:"planned"`
	Skipped        int                  `json:"skipped"`
	Ran            int                  `json:"ran"`
	InfraErrors    int                  `json:"infra_errors"`
	Records        int                  `json:"records"`
	Overall        []skills.Row         `json:"overall,omitempty"`
	Pipeline       []skills.PipelineRow `json:"pipeline,omitempty"`
	ElapsedSeconds float64              `json:"elapsed_seconds"`
}

func (s selectSummary) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s (%s)\n", s.Run, s.Out)
	sim := ""
	if s.Simulated {
		sim = " (simulated policy)"
	}
	fmt.Fprintf(tw, "task\t%s on %s%s\n", s.Task, s.Library, sim)
	fmt.Fprintf(tw, "answers\t%d planned, %d already done, %d run now, %d infrastructure errors\n", s.Planned, s.Skipped, s.Ran, s.InfraErrors)
	for _, r := range s.Overall {
		fmt.Fprintf(tw, "%s\tEM %.3f  OPR %.3f  NAR %.3f  FR %.3f  OPR/FR %s  (n %d, malformed %d)\n", r.Checkpoint, r.EM, r.OPR, r.NAR, r.FR, fmtNum(r.OPRShare), r.N, r.Malformed)
	}
	for _, r := range s.Pipeline {
		fmt.Fprintf(tw, "%s\tEM1 %.3f  EM2 %.3f  EM1xEM2 %.3f  measured %.3f  executed DR %.3f  (n %d)\n", r.Checkpoint, r.EM1, r.EM2, r.Product, r.Measured, r.ExecutedDR, r.N)
	}
	fmt.Fprintf(tw, "elapsed\t%.1fs\n", s.ElapsedSeconds)
	tw.Flush()
}
