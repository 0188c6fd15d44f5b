package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/envserver"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/cobra"
)

func init() { register(newLabelCmd) }

type labelFlags struct {
	scenarios  []string
	out        string
	framework  string
	maxSteps   int
	seed       int64
	checkpoint string
	run        string
	force      bool
	asJSON     bool
	reward     rewardFlags
}

func newLabelCmd() *cobra.Command {
	var f labelFlags
	cmd := &cobra.Command{
		Use:   "label --scenarios S TRACES.jsonl --out RUN",
		Short: "Label trajectories produced by any agent (OpenAI chat format) by replaying them through the mock environment",
		Long: `Each line of TRACES.jsonl is one trajectory: {"scenario_id", "messages"} in
OpenAI chat format (an antidrift record is one too), with optional "seed" and
"policy". Its assistant turns are replayed through the scenario's mock
environment with rollout's own loop; the labelled records go to --out, and
every tool result that differs from what the mock returns is reported (the
labels then describe the mock's world, not the one the agent saw).
A trace's identity is its line: rerunning skips what the folder holds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLabel(cmd, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.scenarios, "scenarios", []string{"builtin"}, "scenario files or folders, or builtin")
	fl.StringVar(&f.out, "out", "", "run folder")
	fl.StringVar(&f.framework, "framework", engine.FrameworkNormal, "framework the traces are replayed in: "+strings.Join(engine.Frameworks, ", "))
	fl.IntVar(&f.maxSteps, "max-steps", 50, "assistant turns replayed per trajectory")
	fl.Int64Var(&f.seed, "seed", 1, "run seed, for traces without a seed")
	fl.StringVar(&f.checkpoint, "checkpoint", "label", "checkpoint name recorded in every trajectory")
	fl.StringVar(&f.run, "run", "", "run name (default: derived from the configuration)")
	fl.BoolVar(&f.force, "force", false, "start over in a folder holding another run (old trajectories are moved aside)")
	fl.BoolVar(&f.asJSON, "json", false, "one JSON object per trace on stdout (mismatches included)")
	addRewardConfigFlags(fl, &f.reward)
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runLabel(cmd *cobra.Command, f labelFlags, traces string) error {
	if err := engine.CheckFramework(f.framework); err != nil {
		return fmt.Errorf("--framework: %w", err)
	}
	ss, err := loadScenarios(f.scenarios, "")
	if err != nil {
		return err
	}
	rw, rwDesc, err := rewardConfigOf(f.reward, ss)
	if err != nil {
		return err
	}
	// The traces file is part of the plan: a trace's identity is its line,
	// so another file in the same folder is another run, refused unless
	// --force.
	sum, err := fileHash(traces)
	if err != nil {
		return err
	}
	plan := scenarioPlan(f.scenarios, ss)
	plan.Policy, plan.Checkpoint, plan.Framework, plan.Seed, plan.MaxSteps = "label:"+sum, f.checkpoint, f.framework, f.seed, f.maxSteps
	runName := f.run
	if runName == "" {
		runName = planName(plan)
	}
	man := store.Manifest{Version: Version, Run: runName, Created: time.Now().UTC().Format(time.RFC3339), Plan: plan,
		Settings: store.Settings{Command: commandLineIn(f.out), Rewards: rwDesc}}
	run, err := store.Open(f.out, man, f.force)
	if err != nil {
		return err
	}
	defer run.Close()
	cfg := envserver.LabelConfig{Scenarios: ss, Seed: f.seed, Rewards: scorer(rw),
		Engine: engine.Config{Framework: f.framework, Checkpoint: f.checkpoint, Version: Version, Limits: agent.Limits{MaxSteps: f.maxSteps}}}
	stdout := cmd.OutOrStdout()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	if !f.asJSON {
		fmt.Fprintln(tw, "LINE\tTRAJ\tSCENARIO\tSTATUS\tSUCCESS\tDRIFT\tREWARD\tMOCK")
	}
	n, differ := 0, 0
	err = envserver.LabelFile(traces, cfg, run, func(l envserver.Labelled) {
		n++
		if !l.Consistent && !l.Skipped {
			differ++
		}
		if f.asJSON {
			b, _ := json.Marshal(l)
			fmt.Fprintln(stdout, string(b))
			return
		}
		if l.Skipped {
			fmt.Fprintf(tw, "%d\t%s\t%s\t(already labelled)\t\t\t\t\n", l.Line, l.TrajID, l.ScenarioID)
			return
		}
		mock := "same"
		if !l.Consistent {
			mock = fmt.Sprintf("%d result(s) differ", len(l.Mismatches))
			if len(l.Notes) > 0 {
				mock += "; " + strings.Join(l.Notes, "; ")
			}
		}
		reward := ""
		if l.Reward != nil {
			reward = fmt.Sprintf("%.3f", *l.Reward)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%v\t%v\t%s\t%s\n", l.Line, l.TrajID, l.ScenarioID, l.Labels.Status, l.Labels.Success, l.Labels.Drift, reward, mock)
	})
	tw.Flush()
	if err != nil {
		return fmt.Errorf("label: %w (records labelled before it are saved in %s)", err, f.out)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "antidrift: %d trajectories labelled into %s; %d differ from the mock environment (use --json for each difference)\n", n, f.out, differ)
	return nil
}

// fileHash is the first 12 hex digits of a file's SHA-256.
func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
