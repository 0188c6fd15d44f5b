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
	var addr, storeDir string
	var logs bool
	serve := &cobra.Command{
		Use:   "serve [--store DIR]",
		Short: "Serve an embedded NATS JetStream server (file storage) for rollout --queue and worker",
		Long: `Start an embedded NATS server with JetStream on file storage, for users
without a NATS cluster. Its streams live in --store, so that stopping and
starting it again resumes every queued run. It has no authentication: bind
it to a trusted network only (the default listens on 127.0.0.1).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(storeDir, 0o755); err != nil {
				return fmt.Errorf("--store: %w", err)
			}
			s, err := queue.StartServer(queue.ServerOptions{Addr: addr, StoreDir: storeDir, Log: logs})
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
	cmd.AddCommand(serve)
	return cmd
}
