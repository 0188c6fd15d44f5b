package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/spf13/cobra"
)

type rolloutFlags struct {
	scenarios   []string
	limit       int
	policy      string
	endpoint    endpointFlags
	framework   string
	rollouts    int
	concurrency int
	seed        int64
	out         string
	shard       string
	checkpoint  string
	step        int
	run         string
	force       bool
	asJSON      bool
	maxSteps    int
	maxTokens   int
	turnTokens  int
	temperature temperatureFlag
	episodeTime time.Duration
	filter      filterFlags
	toolOrder   string
	queue       queueFlags // cmd_rollout_queue.go
}

func init() { register(newRolloutCmd) }

func newRolloutCmd() *cobra.Command {
	var f rolloutFlags
	cmd := &cobra.Command{
		Use:   "rollout --policy sim:NAME|openai:MODEL --out DIR",
		Short: "Roll out a policy on scenarios into a run folder (resumable)",
		Long: `Roll out a policy on every scenario, --rollouts times each, into a run folder.

Rerunning the same command on the same folder resumes: finished episodes are
skipped, a torn last line is repaired, and episodes that hit infrastructure
errors are retried. A different configuration is refused unless --force.

The API key comes from the environment variable named by --api-key-env
(default OPENAI_API_KEY); it is never written anywhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRollout(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.scenarios, "scenarios", []string{"builtin"}, "scenario files or folders, or builtin")
	fl.IntVar(&f.limit, "limit", 0, "use only the first N scenarios (by id); 0: all")
	fl.StringVar(&f.policy, "policy", "", "sim:NAME (simulated: base, sft, dpo-1, dpo-2, overcautious) or openai:MODEL")
	addEndpointFlags(fl, &f.endpoint, "")
	fl.StringVar(&f.framework, "framework", engine.FrameworkNormal, "agent framework: "+strings.Join(engine.Frameworks, ", ")+
		" (normal: native tool calls, every tool visible; react: Thought/Action/Observation text; plan-exec: planner then executor; gated: risk-bearing tools visible only when authorised and causally needed; relevance: top-k tools by BM25; state-aware: tools whose requires hold; causal: causal filtering without authorization; see docs/gating.md)")
	fl.IntVar(&f.rollouts, "rollouts", 4, "rollouts per scenario")
	fl.IntVar(&f.concurrency, "concurrency", 32, "episodes in flight")
	fl.Int64Var(&f.seed, "seed", 1, "run seed")
	fl.StringVar(&f.out, "out", "", "run folder")
	fl.StringVar(&f.shard, "shard", "0/1", "run shard i of n (i/n), for batch schedulers; join with merge")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint name recorded in every trajectory (default: the policy)")
	fl.IntVar(&f.step, "step", -1, "the checkpoint's training step, recorded in the manifest for pareto (-1: unknown)")
	fl.StringVar(&f.run, "run", "", "run name recorded in every trajectory (default: derived from the plan)")
	fl.BoolVar(&f.force, "force", false, "start over in a folder holding another plan (old trajectories are moved aside)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout")
	fl.IntVar(&f.maxSteps, "max-steps", 20, "assistant turns per episode")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "total tokens per episode; 0: no limit")
	fl.IntVar(&f.turnTokens, "max-turn-tokens", 0, "max_tokens sent with each request; 0: not sent")
	fl.Var(&f.temperature, "temperature", "sampling temperature (0 is sent as 0), or omit to leave it out (reasoning models that accept only their default)")
	addEndpointExtras(fl, &f.endpoint)
	fl.DurationVar(&f.episodeTime, "episode-timeout", 0, "wall time per episode; 0: no limit")
	fl.StringVar(&f.toolOrder, "tool-order", "seeded", "the order the model sees the tools in: seeded (drawn from --seed and the scenario, the same for every rollout, checkpoint and framework) or authored (the scenario file's order, which can teach position instead of the task)")
	f.filter.register(fl, true)
	addQueueFlags(fl, &f.queue)
	_ = cmd.MarkFlagRequired("policy")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runRollout(cmd *cobra.Command, f rolloutFlags) error {
	if f.rollouts < 1 {
		return fmt.Errorf("--rollouts must be at least 1")
	}
	if err := engine.CheckFramework(f.framework); err != nil {
		return fmt.Errorf("--framework: %w", err)
	}
	shard, err := engine.ParseShard(f.shard)
	if err != nil {
		return err
	}
	if f.toolOrder == "" || !cmd.Flags().Changed("tool-order") {
		// The default, seeded, for a new run; a run being resumed keeps
		// the order its plan recorded (runs made before the order was
		// drawn have none: the file's order), so that resuming needs no
		// flag. rolloutFlags built by rescore, sweep and demo land here too.
		f.toolOrder = agent.ToolOrderSeeded.String()
		if m, err := store.ReadManifest(f.out); err == nil && !f.force {
			if o, err := engine.ToolOrderOf(m.Plan.ToolOrder); err == nil {
				f.toolOrder = o.String()
			}
		}
	}
	order, err := agent.ParseToolOrder(f.toolOrder)
	if err != nil {
		return fmt.Errorf("--tool-order: %w", err)
	}
	fopts, err := f.filter.options(f.filter.riskLambda)
	if err != nil {
		return err
	}
	q, err := dialQueue(cmd.Context(), f.queue) // before anything is written: an unreachable server fails fast
	if err != nil {
		return err
	}
	defer q.close()
	ss, err := loadScenariosWith(f.scenarios, "", scenario.Options{AllowUnsafeProvenance: f.filter.allowUnsafe})
	if err != nil {
		return err
	}
	if f.limit > 0 && f.limit < len(ss) {
		ss = ss[:f.limit]
	}
	f.endpoint.omitTemperature = f.temperature.omit
	pol, client, err := buildPolicy(f.policy, f.endpoint, f.concurrency, ss)
	if err != nil {
		return err
	}
	if err := preflight(cmd.Context(), cmd.ErrOrStderr(), client, f.endpoint, f.framework != engine.FrameworkReAct); err != nil {
		return err
	}
	kind, model, _ := policySpec(f.policy)
	checkpoint := f.checkpoint
	if checkpoint == "" {
		checkpoint = f.policy
	}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	plan := store.Plan{
		ScenarioSource: strings.Join(f.scenarios, ","), ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids,
		Policy: f.policy, Checkpoint: checkpoint, Framework: f.framework, Rollouts: f.rollouts,
		Seed: f.seed, Shard: shard.String(), MaxSteps: f.maxSteps, MaxTokens: f.maxTokens,
		Temperature: f.temperature.value, OmitTemperature: f.temperature.omit, MaxTurnTokens: f.turnTokens,
		AllowUnsafeProvenance: f.filter.allowUnsafe, Filter: f.filter.plan(f.framework, fopts),
		ToolOrder: engine.PlanToolOrder(order),
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
	if f.episodeTime > 0 {
		man.Settings.EpisodeTime = f.episodeTime.String()
	}
	run, err := store.Open(f.out, man, f.force)
	if err != nil {
		return err
	}
	defer run.Close()
	cfg := engine.Config{
		Scenarios: ss, Policy: pol, PolicyName: f.policy, Checkpoint: checkpoint, Framework: f.framework,
		Rollouts: f.rollouts, Concurrency: f.concurrency, Seed: f.seed, Shard: shard, Version: Version, Filter: fopts, ToolOrder: order,
		Limits: agent.Limits{MaxSteps: f.maxSteps, MaxTokens: f.maxTokens, WallTime: f.episodeTime,
			Temperature: f.temperature.value, OmitTemperature: f.temperature.omit, MaxTurnTokens: f.turnTokens},
	}
	stderr := cmd.ErrOrStderr()
	cfg.Warn = func(msg string) { fmt.Fprintln(stderr, "antidrift: warning:", msg) }
	total := len(engine.Plan(cfg, runName))
	if q != nil {
		if client != nil && f.endpoint.tokenParam == "auto" && client.TokenParamInUse() == openai.TokenMaxCompletionTokens {
			// What the pre-flight check learnt goes to the workers too.
			f.endpoint.tokenParam = openai.TokenMaxCompletionTokens.String()
		}
		client = nil // the workers' clients, not this one, talk to the endpoint
	}
	prog := newProgress(total, run.DoneCount(), client)
	cfg.OnRecord = prog.record

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var sum engine.Summary
	var runErr error
	if q != nil {
		sum, runErr = q.run(ctx, f, cfg, run)
	} else {
		sum, runErr = engine.Run(ctx, cfg, run)
	}
	prog.finish()
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return &exitError{code: 130, msg: fmt.Sprintf("antidrift: interrupted; %d episodes are saved in %s; rerun the same command to resume", run.DoneCount()+sum.Ran-sum.InfraErrors, f.out)}
		}
		return fmt.Errorf("rollout stopped: %w (finished episodes are saved in %s; rerun the same command to resume)", runErr, f.out)
	}
	rs, err := summarizeRun(f.out)
	if err != nil {
		return err
	}
	rs.Run, rs.Out, rs.Planned, rs.Skipped, rs.Ran, rs.InfraErrors = runName, f.out, sum.Planned, sum.Skipped, sum.Ran, sum.InfraErrors
	rs.ElapsedSeconds = sum.Elapsed.Seconds()
	if f.asJSON {
		if err := writeJSON(cmd.OutOrStdout(), rs); err != nil {
			return err
		}
	} else {
		rs.print(cmd.OutOrStdout())
	}
	if sum.InfraErrors > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("antidrift: %d episodes failed with infrastructure errors (see %s/errors/); rerun the same command to retry them", sum.InfraErrors, f.out)}
	}
	return nil
}

// planName derives a run name from the plan, so that the same plan gets the
// same trajectory ids wherever its folder lives.
func planName(p store.Plan) string {
	p.Shard = "" // shards of one plan are one run
	b, _ := json.Marshal(p)
	h := sha256.Sum256(b)
	return "run-" + hex.EncodeToString(h[:4])
}

// commandLine is the invocation, for provenance, rebuilt from redacted
// values (secret.Args): URLs lose their credentials and query values, and
// anything that looks like a key is masked. The key itself is only ever
// read from the environment.
func commandLine() string { return "antidrift " + secret.Command(os.Args[1:]) }

// commandLineIn is the command line a manifest or card in folder dir
// records: every argument that names a file or folder (absolute, or
// existing relative to the working directory) is written relative to dir,
// so that no output holds a path of the machine that made it. Locks keep
// commandLine: they name a live process to the user at the terminal. With
// no folder (env serve into a queue) the command line is kept as typed.
func commandLineIn(dir string) string {
	if dir == "" {
		return commandLine()
	}
	args := make([]string, len(os.Args)-1)
	words := commandWords(os.Args[1:])
	for i, a := range os.Args[1:] {
		if i < words { // the command's name, even where a folder has it
			args[i] = a
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			args[i] = k + "=" + relArg(dir, v)
			continue
		}
		args[i] = relArg(dir, a)
	}
	return "antidrift " + secret.Command(args)
}

// commandWords counts the leading arguments that name the command
// (rewards; env serve).
func commandWords(args []string) int {
	c, n := newRootCmd(), 0
	for _, a := range args {
		var next *cobra.Command
		for _, sub := range c.Commands() {
			if sub.Name() == a || sub.HasAlias(a) {
				next = sub
				break
			}
		}
		if next == nil {
			break
		}
		c, n = next, n+1
	}
	return n
}

func relArg(dir, a string) string {
	if a == "" || strings.HasPrefix(a, "-") || strings.Contains(a, "://") {
		return a
	}
	if !filepath.IsAbs(a) {
		if _, err := os.Stat(a); err != nil && filepath.Clean(a) != filepath.Clean(dir) {
			return a // not a path
		}
	}
	return export.RelPath(dir, a)
}

// runSummary is the end-of-run table and its --json form.
type runSummary struct {
	Run            string         `json:"run"`
	Out            string         `json:"out"`
	Planned        int            `json:"planned"`
	Skipped        int            `json:"skipped"`
	Ran            int            `json:"ran"`
	InfraErrors    int            `json:"infra_errors"`
	Records        int            `json:"records"`
	Statuses       map[string]int `json:"statuses"`
	Scored         int            `json:"scored"` // records TSR, DR and CSR count (trajectory.Status.Scored)
	Warnings       []string       `json:"warnings,omitempty"`
	TSR            float64        `json:"tsr"`
	DR             float64        `json:"dr"`
	CSR            float64        `json:"csr"`
	ElapsedSeconds float64        `json:"elapsed_seconds"`
}

func summarizeRun(dir string) (runSummary, error) {
	rs := runSummary{Statuses: map[string]int{}}
	it := store.Records(dir)
	defer it.Close()
	var c rates // trajectory.Status.Scored decides what TSR, DR and CSR count
	modelErrors := 0
	for it.Next() {
		r := it.At()
		rs.Records++
		rs.Statuses[string(r.Status)]++
		c.add(r)
		if r.Status == trajectory.StatusModelError {
			modelErrors++
		}
	}
	if err := it.Err(); err != nil {
		return rs, err
	}
	rs.TSR, rs.DR, rs.CSR = c.of()
	rs.Scored = c.scored
	if w := trajectory.ModelErrorWarning(modelErrors, c.scored); w != "" {
		rs.Warnings = append(rs.Warnings, w)
	}
	if w := trajectory.DroppedCallWarning(rs.Statuses[string(trajectory.StatusDroppedToolCall)]); w != "" {
		rs.Warnings = append(rs.Warnings, w)
	}
	return rs, nil
}

func (rs runSummary) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s (%s)\n", rs.Run, rs.Out)
	fmt.Fprintf(tw, "episodes\t%d planned, %d already done, %d run now, %d infrastructure errors\n", rs.Planned, rs.Skipped, rs.Ran, rs.InfraErrors)
	fmt.Fprintf(tw, "records\t%d\n", rs.Records)
	var sts []string
	for _, s := range trajectory.Statuses {
		if n := rs.Statuses[string(s)]; n > 0 {
			sts = append(sts, fmt.Sprintf("%s %d", s, n))
		}
	}
	fmt.Fprintf(tw, "statuses\t%s\n", strings.Join(sts, ", "))
	fmt.Fprintf(tw, "TSR\t%.3f\n", rs.TSR)
	fmt.Fprintf(tw, "DR\t%.3f\n", rs.DR)
	fmt.Fprintf(tw, "CSR\t%.3f\n", rs.CSR)
	fmt.Fprintf(tw, "elapsed\t%.1fs\n", rs.ElapsedSeconds)
	if rs.Scored != rs.Records {
		fmt.Fprintf(tw, "scored\t%d of %d records (the rest are not the policy's behaviour: see docs/servers.md)\n", rs.Scored, rs.Records)
	}
	for _, w := range rs.Warnings {
		fmt.Fprintf(tw, "WARNING\t%s\n", w)
	}
	tw.Flush()
}
