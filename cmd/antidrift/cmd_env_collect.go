package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/cobra"
)

func newEnvCollectCmd() *cobra.Command {
	var f envFlags
	cmd := &cobra.Command{
		Use:   "collect --queue URL --out RUN [env serve's run flags]",
		Short: "Write the run folder of several env serve --queue replicas: the queue's one writer",
		Long: `Hold the run folder of a run served by several "antidrift env serve --queue
URL" replicas, and append every episode they publish to the queue (the same
results stream, signing and de-duplication as rollout --queue). Start it
first, with the flags the replicas get (scenarios, framework, filter, seed,
checkpoint, run, max steps, reward options): they refuse a run their own
flags plan differently. It runs until interrupted; restarted on the same
folder it resumes, and what replicas published meanwhile is written then.
See docs/environment.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEnvCollect(cmd, f) },
	}
	addEnvPlanFlags(cmd.Flags(), &f)
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagRequired("queue")
	return cmd
}

func runEnvCollect(cmd *cobra.Command, f envFlags) error {
	er, err := planEnv(f)
	if err != nil {
		return err
	}
	auth, err := queue.AuthFromEnv(f.queueAuthEnv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, js, err := queue.ConnectAuth(ctx, f.queue, "antidrift env collect", auth)
	if err != nil {
		return err
	}
	defer nc.Close()
	run, err := store.Open(f.out, er.manifest, f.force)
	if err != nil {
		return err
	}
	defer run.Close()
	stderr := cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "antidrift: env collect: writing run %s into %s from %s; start the replicas with env serve --queue and the same flags\n",
		er.manifest.Run, f.out, secret.URL(f.queue))
	c := &queue.EnvCollector{NC: nc, JS: js, Folder: run, Scenarios: er.scenarios, Log: stderr}
	sum, err := c.Run(ctx)
	fmt.Fprintf(stderr, "antidrift: env collect: %d records written, %d to errors/ (clients that left), %d duplicates dropped, %d refused (%d without the run key)\n",
		sum.Written, sum.Errors, sum.Duplicates, sum.Rejected+sum.Forged, sum.Forged)
	return err
}
