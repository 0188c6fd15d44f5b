package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/spf13/cobra"
)

func init() { register(newSimServerCmd) }

func newSimServerCmd() *cobra.Command {
	var addr string
	var latency time.Duration
	var scenarios, libraries []string
	var allowUnsafe bool
	cmd := &cobra.Command{
		Use:   "sim-server",
		Short: "Serve the simulated policies as an OpenAI-compatible endpoint",
		Long: `Serve the simulated policies (sim:base, sim:sft, sim:dpo-1, sim:dpo-2,
sim:overcautious) at /v1/chat/completions, so that the HTTP path is exercised
offline. These are behavioural simulations, not language models; the request's
"model" picks one. Point rollout at it with --policy openai:sim:base
--base-url http://ADDR/v1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := loadScenariosWith(scenarios, "", scenario.Options{AllowUnsafeProvenance: allowUnsafe})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			handler := sim.NewServer(ss, latency)
			for _, spec := range libraries {
				l, err := skill.Open(spec)
				if err != nil {
					return err
				}
				handler.AddLibraries(l) // built-in libraries are always answered
			}
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.OutOrStdout(), "simulated policies serving on http://%s/v1 (%d scenarios, latency %s)\n", ln.Addr(), len(ss), latency)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8089", "listen address")
	cmd.Flags().DurationVar(&latency, "latency", 0, "added latency per completion (stands in for a model server)")
	cmd.Flags().StringSliceVar(&scenarios, "scenarios", []string{"builtin"}, "scenario files or folders, or builtin, or builtin:gating")
	cmd.Flags().StringSliceVar(&libraries, "library", nil, "skill library files whose selection prompts to answer too (the built-in libraries always are)")
	cmd.Flags().BoolVar(&allowUnsafe, "allow-unsafe-provenance", false, "load scenarios in which a content tool sets an authorization variable")
	return cmd
}
