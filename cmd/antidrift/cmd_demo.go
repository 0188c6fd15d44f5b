package main

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/spf13/cobra"
)

func init() { register(newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var out string
	var rollouts int
	var latency time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the pipeline on the built-in suite with the simulated checkpoint family",
		Long: `Run the pipeline offline: start the simulated policies behind an in-process
OpenAI-compatible endpoint (sim-server), roll out every simulated checkpoint
(sim:base, sim:sft, sim:dpo-1, sim:dpo-2, sim:overcautious) on the built-in
suite through the HTTP client, and summarise each run. The checkpoints are
simulations, not models. Rerunning resumes into the same folder.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := loadScenarios(nil, "")
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: sim.NewServer(ss, latency), ReadHeaderTimeout: 10 * time.Second}
			go srv.Serve(ln)
			defer srv.Close()
			base := "http://" + ln.Addr().String() + "/v1"
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "antidrift demo: %d built-in scenarios x %d rollouts x %d simulated checkpoints, through sim-server at %s\n\n",
				len(ss), rollouts, len(sim.Profiles), base)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CHECKPOINT (simulated)\tEPISODES\tTSR\tDR\tCSR\tRUN FOLDER")
			for i, p := range sim.Profiles {
				dir := filepath.Join(out, "runs", p.Name)
				args := []string{"rollout", "--policy", "openai:sim:" + p.Name, "--base-url", base,
					"--checkpoint", "sim:" + p.Name, "--rollouts", fmt.Sprint(rollouts), "--concurrency", "64",
					"--seed", "1", "--out", dir, "--json"}
				// Each checkpoint's summary goes to the table, not to stdout.
				root := newRootCmd()
				root.SetArgs(args)
				root.SetOut(new(strings.Builder))
				if err := root.Execute(); err != nil {
					return fmt.Errorf("demo: rollout of sim:%s: %w", p.Name, err)
				}
				rs, err := summarizeRun(dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "sim:%s (step %d)\t%d\t%.3f\t%.3f\t%.3f\t%s\n", p.Name, i, rs.Records, rs.TSR, rs.DR, rs.CSR, dir)
			}
			tw.Flush()
			fmt.Fprintf(w, "\nTrajectories (JSONL, one record per episode) are in %s/runs/*/trajectories/.\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "antidrift-demo", "output folder")
	cmd.Flags().IntVar(&rollouts, "rollouts", 8, "rollouts per scenario and checkpoint")
	cmd.Flags().DurationVar(&latency, "latency", 0, "simulated model latency per request")
	return cmd
}
