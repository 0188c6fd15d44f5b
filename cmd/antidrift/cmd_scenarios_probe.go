package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rollout/probe"
	"github.com/spf13/cobra"
)

func newScenariosProbeCmd() *cobra.Command {
	var asJSON, strict, failures bool
	var catPath string
	cmd := &cobra.Command{
		Use:   "probe [PATH...]",
		Short: "Replay each scenario's counterfactual probe battery and check its labels (no model)",
		Long: `Generate each scenario's counterfactual probe battery and replay it, with no
model, through the episode loop a rollout uses (mock environment, drift
detector, rule judge). The built-in suite when no path is given.

  over-actions     must end as drift or failure, never a clean success:
                   each annotated violation (must match it), each tool outside
                   the boundary (must drift), each write repeated, each amount,
                   quantity and duration doubled, each date window widened,
                   lone dates moved (effects later, reads earlier), the next
                   enum value, one more recipient or resource, an allowed
                   tool reading outside boundary.data, each window constraint
                   crossed, each content rule's protected string written out;
  benign variants  must stay clean successes: the compliant path with numbers
                   and key order rewritten (surface:literal) and every string
                   in another form its normaliser accepts (surface:normalised),
                   each optional step skipped, each allowed neutral read added,
                   a lure's claim checked through an allowed read;
  baselines        the compliant path (clean success), no calls (failure);
  custom           the scenario's probes.cases, with the exact labels they name
                   (a case named like a generated probe replaces it).

The table lists every probe of every scenario (--failures: only those whose
labels differ); --json prints the reports. A probe the battery cannot
build (no known value fits a violation's pattern) is listed as skipped:
write it in probes.cases. Exit status: 0; 1 with --strict when any probe's
labels differ from what it must get or any probe could not be built (each
named on stderr: scenario, probe, the labels it got or why it was not
built), or on invalid scenarios.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ss, err := loadScenarios(args, catPath)
			if err != nil {
				return err
			}
			reps, err := probe.CheckAll(cmd.Context(), ss)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, reps); err != nil {
					return err
				}
			} else {
				printProbeReports(out, reps, failures)
			}
			var lines []string
			failed, unbuilt := 0, 0
			for _, r := range reps {
				f, u := r.Failures(), r.Unbuilt()
				lines = append(append(lines, f...), u...)
				failed, unbuilt = failed+len(f), unbuilt+len(u)
			}
			if strict && len(lines) > 0 {
				return &exitError{code: 1, msg: strings.Join(lines, "\n") + fmt.Sprintf("\nantidrift: %d probe(s) got labels they must not get; %d could not be built (write them in probes.cases)", failed, unbuilt)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the reports as JSON")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when any probe's labels differ from what it must get, or any probe could not be built")
	cmd.Flags().BoolVar(&failures, "failures", false, "list only the probes whose labels differ")
	cmd.Flags().StringVar(&catPath, "provisions", "", "provisions catalogue JSON (default: built-in)")
	return cmd
}

func printProbeReports(w io.Writer, reps []*probe.Report, failuresOnly bool) {
	total, failed, bad, unbuilt := 0, 0, 0, 0
	for _, r := range reps {
		total += len(r.Results)
		failed += r.Failed
		unbuilt += len(r.Skipped)
		if !r.Pass() {
			bad++
		}
		if failuresOnly && r.Pass() && len(r.Skipped) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s\n", r.Summary())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  PROBE\tCLASS\tMUST\tDRIFT\tSUCCESS\tRESULT\tDETAIL\n")
		for _, res := range r.Results {
			if failuresOnly && res.Pass {
				continue
			}
			result, detail := "ok", strings.Join(res.Rules, " ")
			if !res.Pass {
				result, detail = "FAIL", res.Got
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%t\t%t\t%s\t%s\n", res.Name, res.Class, res.Expect, res.Drift, res.Success, result, probe.Oneline(detail, 140))
		}
		tw.Flush()
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  skipped %s\n", s)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d scenarios, %d probes: %d scenarios pass, %d fail (%d probes with labels they must not get)", len(reps), total, len(reps)-bad, bad, failed)
	if unbuilt > 0 {
		fmt.Fprintf(w, "; %d probes not built", unbuilt)
	}
	fmt.Fprintln(w)
}
