package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/antidrift/antidrift/rollout/queue"
	"github.com/spf13/cobra"
)

func init() { register(newQueueCmd) }

func newQueueCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "The work queue of rollout --queue (NATS JetStream)",
		Args:  cobra.NoArgs,
	}
	var addr, storeDir, authEnv string
	var logs bool
	serve := &cobra.Command{
		Use:   "serve [--store DIR]",
		Short: "Serve an embedded NATS JetStream server (file storage) for rollout --queue and worker",
		Long: `Start an embedded NATS server with JetStream on file storage, for users
without a NATS cluster. Its streams live in --store, so that stopping and
starting it again resumes every queued run. The default listens on
127.0.0.1 only. To let other machines in, require a credential with
--auth-env VAR (VAR holds a token, or USER:PASSWORD) and give workers and
rollout the same variable (worker --auth-env, rollout --queue-auth-env);
without it the server warns, since anyone who reaches it can read and
publish to the queued runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(storeDir, 0o755); err != nil {
				return fmt.Errorf("--store: %w", err)
			}
			auth, err := queue.AuthFromEnv(authEnv)
			if err != nil {
				return err
			}
			if !auth.Set() && queue.OpenToOthers(addr) {
				fmt.Fprintf(cmd.ErrOrStderr(), "antidrift: warning: queue serve listens on %s, beyond this machine, without authentication: anyone who reaches it can read the queued runs and publish to them; pass --auth-env VAR (a token, or USER:PASSWORD) or bind to 127.0.0.1\n", addr)
			}
			s, err := queue.StartServer(queue.ServerOptions{Addr: addr, StoreDir: storeDir, Log: logs, Auth: auth})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "NATS JetStream serving on %s (store %s); stop with Ctrl-C\n", s.URL(), storeDir)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			s.Stop()
			return nil
		},
	}
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:4222", "listen address (0.0.0.0:4222 to let other machines in)")
	serve.Flags().StringVar(&storeDir, "store", "antidrift-queue", "folder of the server's file storage")
	serve.Flags().BoolVar(&logs, "log", false, "print the server's log on stderr")
	serve.Flags().StringVar(&authEnv, "auth-env", "", "environment variable holding the credential clients must present: a token, or USER:PASSWORD (never written anywhere)")
	cmd.AddCommand(serve)
	return cmd
}
