package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/envserver"
	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { register(newEnvCmd) }

type envFlags struct {
	scenarios   []string
	out         string
	addr        string
	maxSessions int
	maxSteps    int
	framework   string
	filter      filterFlags
	seed        int64
	checkpoint  string
	run         string
	force       bool
	idle        time.Duration
	reward      rewardFlags
	// queue, queueAuthEnv and attachWait: serving as one of several
	// replicas behind the NATS queue (env serve --queue) and its writer
	// (env collect).
	queue        string
	queueAuthEnv string
	attachWait   time.Duration
}

func newEnvCmd() *cobra.Command {
	env := &cobra.Command{Use: "env", Short: "Serve the scenarios as an environment (OpenEnv HTTP/WebSocket, MCP, /verify)"}
	var f envFlags
	serve := &cobra.Command{
		Use:   "serve --scenarios builtin|PATH (--out RUN | --queue URL)",
		Short: "Serve episodes over OpenEnv HTTP and WebSocket, MCP and /verify, recording each into a run folder",
		Long: `Serve the scenarios as an environment for on-policy training and for any agent:
POST /reset, POST /step, GET /state, GET /schema, GET /health and /ws (the
OpenEnv protocol), MCP over Streamable HTTP at /mcp/{scenario_id}, and
POST /verify (label a trajectory produced elsewhere). Every episode is
recorded into --out as rollout records it; an episode whose client left goes
to errors/. A restarted server resumes the folder's rollout counters.

With --queue URL instead of --out, the server is one of several replicas
writing one run folder: it records nothing itself but publishes each
finished episode to the NATS queue, where "antidrift env collect" (started
first, with the same flags and --out) is the folder's one writer.
See docs/environment.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEnvServe(cmd, f) },
	}
	addEnvPlanFlags(serve.Flags(), &f)
	addEnvServeFlags(serve.Flags(), &f)
	env.AddCommand(serve, newEnvCollectCmd())
	return env
}

// addEnvServeFlags registers env serve's own flags (env collect takes the
// others).
func addEnvServeFlags(fl *pflag.FlagSet, f *envFlags) {
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8000", "listen address (port 0: any free port, printed)")
	fl.IntVar(&f.maxSessions, "max-sessions", 64, "sessions open at once (HTTP and MCP episodes, WebSocket connections); more are refused with CAPACITY_REACHED")
	fl.DurationVar(&f.idle, "session-timeout", 10*time.Minute, "end a session whose client sent nothing for this long (recorded in errors/)")
	fl.DurationVar(&f.attachWait, "attach-timeout", 2*time.Minute, "with --queue: how long to wait for env collect to publish the run")
}

// addEnvPlanFlags registers the flags that make a served run's plan, its
// folder and its queue: env serve's and env collect's alike, so that the
// replicas and their writer are given one list.
func addEnvPlanFlags(fl *pflag.FlagSet, f *envFlags) {
	fl.StringSliceVar(&f.scenarios, "scenarios", []string{"builtin"}, "scenario files or folders, or builtin")
	fl.StringVar(&f.out, "out", "", "run folder")
	fl.IntVar(&f.maxSteps, "max-steps", 20, "assistant turns per episode")
	fl.StringVar(&f.framework, "framework", engine.FrameworkNormal, "agent framework: "+strings.Join(engine.Frameworks, ", "))
	f.filter.register(fl, true)
	fl.Int64Var(&f.seed, "seed", 1, "run seed (episode seeds as rollout derives them, unless a reset names one)")
	fl.StringVar(&f.checkpoint, "checkpoint", "env", "checkpoint name recorded in every trajectory")
	fl.StringVar(&f.run, "run", "", "run name (default: derived from the configuration)")
	fl.BoolVar(&f.force, "force", false, "start over in a folder holding another run (old trajectories are moved aside)")
	fl.StringVar(&f.queue, "queue", "", "NATS URL (nats://HOST:PORT) of the queue behind which several servers share one run folder")
	fl.StringVar(&f.queueAuthEnv, "queue-auth-env", "", "environment variable holding the NATS credential (a token, or USER:PASSWORD), as queue serve --auth-env; never written anywhere")
	addRewardConfigFlags(fl, &f.reward)
}

// addRewardConfigFlags registers the rewards command's reward options
// (rewardFlags.add) but --scenarios, which the caller owns.
func addRewardConfigFlags(fl *pflag.FlagSet, f *rewardFlags) {
	fl.StringVar(&f.schemes, "scheme", "uniform", "drift-step weights, comma-separated and summed: uniform, provision, risk, privilege")
	fl.Float64Var(&f.alpha, "alpha", 1, "α: weight of the outcome term α·S·(1−D)")
	fl.Float64Var(&f.lambda, "lambda", 0.5, "λ: weight of the drift penalty λ·Σw(v)")
	fl.StringVar(&f.provisions, "provisions", "", "provision weights: a catalogue file (replaces the built-in one) or a JSON object {id: weight} (overrides its ids)")
	fl.BoolVar(&f.provisionMax, "provision-max", false, "provision scheme: the largest weight of a call's provisions instead of their sum")
	fl.BoolVar(&f.judgeScore, "judge-score", false, "S = the judge's score in [0,1] instead of the success label")
}

// rewardConfigOf is the reward configuration over loaded scenarios, and
// its description as the rewards command words it.
func rewardConfigOf(f rewardFlags, ss []*scenario.Scenario) (rewards.Config, string, error) {
	c := rewards.Default()
	var err error
	if c.Schemes, err = rewards.ParseSchemes(f.schemes); err != nil {
		return c, "", err
	}
	c.Alpha, c.Lambda, c.ProvisionMax, c.JudgeScore = f.alpha, f.lambda, f.provisionMax, f.judgeScore
	if f.provisions != "" {
		if c.Weights, err = rewards.LoadWeights(f.provisions); err != nil {
			return c, "", err
		}
	}
	c.Scenarios = map[string]*scenario.Scenario{}
	for _, s := range ss {
		c.Scenarios[s.ID] = s
	}
	m := map[string]string{}
	f.settings(m)
	desc := m["reward"]
	for _, k := range []string{"reward_provision_combination", "reward_provisions", "reward_success"} {
		if m[k] != "" {
			desc += "; " + strings.TrimPrefix(k, "reward_") + " " + m[k]
		}
	}
	return c, desc, c.Validate()
}

// scorer wires the rewards package into the served episodes' ends (the
// rollout floor does not import rewards).
func scorer(c rewards.Config) envserver.Scorer {
	return func(r *trajectory.Record) (envserver.Score, error) {
		n, err := c.Named(r)
		return envserver.Score(n), err
	}
}

// scenarioPlan is the plan part naming the scenarios.
func scenarioPlan(src []string, ss []*scenario.Scenario) store.Plan {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return store.Plan{ScenarioSource: strings.Join(src, ","), ScenarioHash: scenario.Hash(ss), ScenarioIDs: ids, Shard: "0/1",
		ToolOrder: engine.PlanToolOrder(agent.ToolOrderSeeded)}
}

// envRun is a served run as the flags plan it.
type envRun struct {
	scenarios []*scenario.Scenario
	manifest  store.Manifest
	config    envserver.Config
}

// planEnv loads the scenarios and plans the served run from the flags;
// env serve and env collect plan alike, so that a replica and its writer
// agree on the run.
func planEnv(f envFlags) (*envRun, error) {
	if err := engine.CheckFramework(f.framework); err != nil {
		return nil, fmt.Errorf("--framework: %w", err)
	}
	fopts, err := f.filter.options(f.filter.riskLambda)
	if err != nil {
		return nil, err
	}
	ss, err := loadScenariosWith(f.scenarios, "", scenario.Options{AllowUnsafeProvenance: f.filter.allowUnsafe})
	if err != nil {
		return nil, err
	}
	rw, rwDesc, err := rewardConfigOf(f.reward, ss)
	if err != nil {
		return nil, err
	}
	plan := scenarioPlan(f.scenarios, ss)
	plan.Policy, plan.Checkpoint, plan.Framework, plan.Seed, plan.MaxSteps = "env-serve", f.checkpoint, f.framework, f.seed, f.maxSteps
	plan.AllowUnsafeProvenance, plan.Filter = f.filter.allowUnsafe, f.filter.plan(f.framework, fopts)
	runName := f.run
	if runName == "" {
		runName = planName(plan)
	}
	man := store.Manifest{Version: Version, Run: runName, Created: time.Now().UTC().Format(time.RFC3339), Plan: plan,
		Settings: store.Settings{Concurrency: f.maxSessions, Command: commandLineIn(f.out), Rewards: rwDesc}}
	cfg := envserver.Config{Scenarios: ss, Framework: f.framework, Filter: fopts,
		Limits: agent.Limits{MaxSteps: f.maxSteps}, Checkpoint: f.checkpoint, Seed: f.seed, MaxSessions: f.maxSessions,
		IdleTimeout: f.idle, Rewards: scorer(rw), RewardsSpec: rwDesc, Version: Version}
	return &envRun{scenarios: ss, manifest: man, config: cfg}, nil
}

func runEnvServe(cmd *cobra.Command, f envFlags) error {
	switch {
	case f.maxSessions < 1:
		return fmt.Errorf("--max-sessions must be at least 1")
	case f.out == "" && f.queue == "":
		return fmt.Errorf("give --out RUN (this server writes the run folder) or --queue URL (one of several replicas; env collect writes the folder)")
	case f.out != "" && f.queue != "":
		return fmt.Errorf("--out and --queue: a replica behind the queue writes no folder; give --out to env collect")
	case f.queue != "" && f.force:
		return fmt.Errorf("--force: give it to env collect, the folder's writer")
	}
	er, err := planEnv(f)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var srv *envserver.Server
	where := "recording into " + f.out
	if f.queue != "" {
		auth, err := queue.AuthFromEnv(f.queueAuthEnv)
		if err != nil {
			return err
		}
		nc, js, err := queue.ConnectAuth(ctx, f.queue, "antidrift env serve", auth)
		if err != nil {
			return err
		}
		defer nc.Close()
		rep := &queue.EnvReplica{NC: nc, JS: js, Manifest: er.manifest, Scenarios: er.scenarios}
		if err := rep.Attach(ctx, f.attachWait); err != nil {
			return err
		}
		if srv, err = envserver.NewReplica(er.config, er.manifest.Run, rep, rep); err != nil {
			return err
		}
		where = "recording through the queue's writer at " + secret.URL(f.queue)
	} else {
		run, err := store.Open(f.out, er.manifest, f.force)
		if err != nil {
			return err
		}
		defer run.Close()
		if srv, err = envserver.New(er.config, run); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("--addr: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.ErrOrStderr(), "antidrift: serving %d scenarios (framework %s) on http://%s; %s (run %s)\n",
		len(er.scenarios), f.framework, ln.Addr(), where, er.manifest.Run)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
	}
	// Open episodes end as abandoned (errors/, or published for the
	// writer's errors/), so nothing started is lost.
	cerr := srv.Close()
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return errors.Join(err, cerr)
}
