package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/spf13/cobra"
)

func init() { register(newWorkerCmd) }

type workerFlags struct {
	queue       string
	concurrency int
	endpoints   string
	scenarios   []string
	run         string
	name        string
	idleExit    time.Duration
	authEnv     string
}

func newWorkerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker --queue nats://HOST:PORT",
		Short: "Run the episodes of queued rollouts (rollout --queue) from a NATS JetStream work queue",
		Long: `Pull work items of every queued run (or of --run), run each episode with the
run's configuration (read from the queue; it holds no credential), publish
its record and only then acknowledge the item. Start as many workers on as
many machines as you like, while a run goes on; a killed worker's items go
to another worker after the run's --ack-wait.

API keys come from this worker's environment: the variable the run names
(rollout --api-key-env), or the one --endpoints names for the endpoint.
--endpoints FILE is JSON: {"endpoints": [{"match": "URL as the run records
it", "base_url": "URL this worker dials", "api_key_env": "VAR",
"max_concurrency": N, "lease": "NAME"}]}; max_concurrency caps the episodes
in flight against the endpoint across every worker (default: the run's
--concurrency).

A worker of another toolkit version, or one whose --scenarios do not hash to
the run's scenario suite, refuses the run's items and says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWorker(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.queue, "queue", "", "NATS URL (nats://HOST:PORT) of the queue")
	fl.IntVar(&f.concurrency, "concurrency", 32, "episodes this worker runs at once")
	fl.StringVar(&f.endpoints, "endpoints", "", "JSON file: how this worker reaches each endpoint, its key variable, and the cap shared by all workers")
	fl.StringSliceVar(&f.scenarios, "scenarios", nil, "use this worker's own scenario files (or builtin), refusing runs planned on another suite; default: the scenarios each run carries")
	fl.StringVar(&f.run, "run", "", "take only this run's items (default: every run on the queue)")
	fl.StringVar(&f.name, "name", "", "worker name in messages (default host:pid)")
	fl.StringVar(&f.authEnv, "auth-env", "", "environment variable holding the NATS credential (a token, or USER:PASSWORD), as queue serve --auth-env; never written anywhere")
	fl.DurationVar(&f.idleExit, "idle-exit", 0, "exit after this long without work (for batch jobs); 0: run until interrupted")
	_ = cmd.MarkFlagRequired("queue")
	return cmd
}

func runWorker(cmd *cobra.Command, f workerFlags) error {
	if f.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: must be at least 1", f.concurrency)
	}
	if f.idleExit < 0 {
		return fmt.Errorf("--idle-exit %s: must not be negative", f.idleExit)
	}
	var eps []queue.Endpoint
	if f.endpoints != "" {
		var err error
		if eps, err = queue.LoadEndpoints(f.endpoints); err != nil {
			return err
		}
	}
	var ss []*scenario.Scenario
	if len(f.scenarios) > 0 {
		var err error
		if ss, err = loadScenarios(f.scenarios, ""); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	auth, err := queue.AuthFromEnv(f.authEnv)
	if err != nil {
		return err
	}
	nc, js, err := queue.ConnectAuth(ctx, f.queue, "antidrift worker", auth)
	if err != nil {
		return fmt.Errorf("--queue: %w", err)
	}
	defer nc.Close()
	w := &queue.Worker{NC: nc, JS: js, Name: f.name, Concurrency: f.concurrency, Endpoints: eps,
		Version: Version, Scenarios: ss, Run: f.run, IdleExit: f.idleExit, Log: os.Stderr}
	fmt.Fprintf(os.Stderr, "antidrift: worker taking queued episodes from %s (concurrency %d)\n", secret.URL(f.queue), f.concurrency)
	if err := w.Serve(ctx); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "antidrift: worker stopped after %d episodes\n", w.Episodes())
	return nil
}
