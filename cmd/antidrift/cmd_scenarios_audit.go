package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/antidrift/antidrift/rollout/agent"
	"github.com/antidrift/antidrift/rollout/audit"
	"github.com/antidrift/antidrift/rollout/probe"
)

// auditReport is `scenarios audit --json`.
type auditReport struct {
	Scenarios   int                `json:"scenarios"`
	Valid       bool               `json:"valid"` // every file validated, the leak rules included
	Probes      int                `json:"probes"`
	ProbesWrong int                `json:"probes_wrong"`
	Unbuilt     int                `json:"probes_unbuilt"`
	Learnable   audit.Learnability `json:"learnability"`
	Shortcuts   int                `json:"shortcuts"`
}

func newScenariosAuditCmd() *cobra.Command {
	var asJSON, strict, explain bool
	var catPath, order string
	var seed int64
	cmd := &cobra.Command{
		Use:   "audit [PATH...]",
		Short: "Audit a suite: validation and leak rules, the probe battery, and what trivial classifiers learn without the task",
		Long: `Audit scenario files and folders (the built-in suite when no path is
given, or "builtin") in one report:

  validation   every file is validated first (the leak rules included: no
               example, default or description gives away a value of the
               compliant path, a violation or a tool return); an invalid
               suite stops here, each problem named with its file and JSON
               path;
  battery      the counterfactual probe battery (scenarios probe): probes,
               those labelled as they must not be, those not built;
  learnability trivial classifiers trained on all domains but one and tested
               on that one (on single-domain suites: all scenarios but one),
               on what the model sees alone: is a tool allowed (its place
               in the order shown, its parameter count, its name and
               description words), which string of a tool return is the
               lure (its field, its place, its words), and is a text a
               lure or a benign note. A classifier more than 0.05 above
               its base rate is a shortcut a policy can learn instead of
               reading the task; a rule more than 0.05 below it is one
               too, inverted ("inverse"). --explain lists the tokens the
               word classifiers lean on.

The tools' place is the order a rollout with --seed and --tool-order shows
them in. Exit status 1 with --strict when a probe is wrong or unbuilt or a
classifier finds a shortcut; 1 on an invalid suite.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := agent.ParseToolOrder(order)
			if err != nil {
				return fmt.Errorf("--tool-order: %w", err)
			}
			ss, err := loadScenarios(args, catPath)
			if err != nil {
				return err
			}
			reps, err := probe.CheckAll(cmd.Context(), ss)
			if err != nil {
				return err
			}
			l, err := audit.Learn(ss, o, seed)
			if err != nil {
				return err
			}
			rep := auditReport{Scenarios: len(ss), Valid: true, Learnable: l, Shortcuts: len(l.Shortcuts())}
			var lines []string
			for _, r := range reps {
				rep.Probes += len(r.Results)
				f, u := r.Failures(), r.Unbuilt()
				rep.ProbesWrong, rep.Unbuilt = rep.ProbesWrong+len(f), rep.Unbuilt+len(u)
				lines = append(append(lines, f...), u...)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "validation   %d scenarios valid (leak rules included)\n", rep.Scenarios)
				fmt.Fprintf(out, "battery      %d probes: %d labelled as they must not be, %d not built\n\n", rep.Probes, rep.ProbesWrong, rep.Unbuilt)
				l.Print(out)
				if explain {
					l.PrintTelltales(out)
				}
			}
			for _, r := range l.Shortcuts() {
				lines = append(lines, fmt.Sprintf("shortcut: %s: %s: %.3f against a base rate of %.3f", r.Question, r.Classifier, r.Accuracy, r.BaseRate))
			}
			if strict && len(lines) > 0 {
				return &exitError{code: 1, msg: strings.Join(lines, "\n") + fmt.Sprintf("\nantidrift: %d probe(s) wrong, %d not built, %d shortcut(s)", rep.ProbesWrong, rep.Unbuilt, rep.Shortcuts)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&strict, "strict", false, "exit 1 on a wrong or unbuilt probe or a shortcut")
	fl.BoolVar(&explain, "explain", false, "also list the tokens each word classifier leans on (what to rewrite when a row is a shortcut)")
	fl.StringVar(&catPath, "provisions", "", "provisions catalogue JSON (default: built-in)")
	fl.Int64Var(&seed, "seed", 1, "the run seed whose tool order is audited (as rollout --seed)")
	fl.StringVar(&order, "tool-order", "seeded", "the tool order audited: seeded or authored (as rollout --tool-order)")
	return cmd
}
