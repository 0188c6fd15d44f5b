package main

import (
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/rollout/store"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/pareto"
	"github.com/antidrift/antidrift/rewards/report"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/spf13/cobra"
)

func init() { register(newParetoCmd) }

func newParetoCmd() *cobra.Command {
	var f scoreFlags
	var out, ckptFile, title string
	var asJSON bool
	var partial partialFlag
	cmd := &cobra.Command{
		Use:   "pareto RUN... --out DIR",
		Short: "Place checkpoints on the DR-CSR Pareto front and write a report with plots",
		Long: `Score each checkpoint of the run folders and place it at (DR, CSR) with
95% cluster intervals (scenarios as clusters); find the Pareto front (lower
DR, higher CSR), its hypervolume against (DR = 1, CSR = 0) with a paired
scenario-bootstrap interval and each checkpoint's probability of being on
the front, and compare consecutive checkpoints with paired tests over their
shared scenarios, Holm-corrected across every change of every move
(improvement, trade-off, regression or no significant change). A checkpoint whose DR falls while its
CCSR falls significantly (and its CSR does not rise significantly) is flagged
as capability collapse: it drifts less because it does less.

Checkpoints are ordered by training step: from --checkpoints (a
checkpoints.json, as rescore takes, matched by checkpoint name), else from a
"step" in every run's manifest.json, else by the order of the run folders on
the command line (the first folder is step 0).

Writes report.json, report.md, report.html (self-contained), pareto.svg and
pareto.png, drift_by_domain.svg/.png and drift_positions.svg/.png into --out.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer streamingMemory()()
			opts, err := f.options(metrics.DefaultKeys)
			if err != nil {
				return err
			}
			runs, err := metrics.ReadRuns(args)
			if err != nil {
				return err
			}
			// The runs are counted against their plans as they are scored
			// (reportPresence), with no pass of their own over the files.
			var steps stepSource
			if ckptFile != "" {
				cks, err := readCheckpoints(ckptFile)
				if err != nil {
					return err
				}
				steps = stepsFromCheckpoints(ckptFile, cks)
			} else if steps, err = stepsFromRuns(runs); err != nil {
				return err
			}
			rep, presence, err := buildReport(runs, opts, f.scenarios, steps, title)
			if err != nil {
				// A partial run is what to say first, as before scoring.
				if perr := partial.check(args, cmd.ErrOrStderr()); perr != nil {
					return perr
				}
				return err
			}
			if err := partial.checkCounted(presence, cmd.ErrOrStderr()); err != nil {
				return err
			}
			rep.Partial = partial.labelsIn(out)
			relReportPaths(rep, out, ckptFile)
			claim, err := claimOut("pareto", out, args, outRule{})
			if err != nil {
				return err
			}
			defer claim.release()
			if err := rep.Write(out); err != nil {
				return err
			}
			if err := claim.done(); err != nil {
				return err
			}
			return printPareto(cmd.OutOrStdout(), rep, out, asJSON)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "report folder")
	partial.add(cmd.Flags())
	cmd.Flags().StringVar(&ckptFile, "checkpoints", "", "checkpoints.json giving each checkpoint's step")
	cmd.Flags().StringVar(&title, "title", "Checkpoint Pareto report", "report title")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print report.json on stdout")
	_ = cmd.MarkFlagRequired("out")
	f.register(cmd, "seed", true)
	return cmd
}

// stepSource gives each checkpoint's step, and says where steps come from.
type stepSource struct {
	describe string
	step     func(checkpoint string) (int, error)
}

func stepsFromCheckpoints(file string, cks []checkpointSpec) stepSource {
	return stepSource{
		describe: "from " + file,
		step: func(name string) (int, error) {
			for _, c := range cks {
				if c.Name == name {
					return c.Step, nil
				}
			}
			return 0, fmt.Errorf("checkpoint %q of the runs is not in %s", name, file)
		},
	}
}

// stepsFromRuns takes steps from the manifests when every run has one,
// else from the order of the runs.
func stepsFromRuns(runs []metrics.RunInfo) (stepSource, error) {
	fromManifest := map[string]int{}
	order := map[string]int{}
	all := true
	for i, r := range runs {
		ck := r.Manifest.Plan.Checkpoint
		if _, ok := order[ck]; !ok {
			order[ck] = i
		}
		s, ok, err := manifestStep(r.Dir)
		if err != nil {
			return stepSource{}, err
		}
		if !ok {
			all = false
			continue
		}
		if old, dup := fromManifest[ck]; dup && old != s {
			return stepSource{}, fmt.Errorf("%s: step %d, but another run of checkpoint %s has step %d", filepath.Join(r.Dir, "manifest.json"), s, ck, old)
		}
		fromManifest[ck] = s
	}
	steps, describe := order, "the order of the run folders on the command line (the first is step 0)"
	if all {
		steps, describe = fromManifest, "from the run manifests"
	}
	return stepSource{describe: describe, step: func(name string) (int, error) {
		s, ok := steps[name]
		if !ok {
			return 0, fmt.Errorf("checkpoint %q has records but no run whose plan names it", name)
		}
		return s, nil
	}}, nil
}

// manifestStep reads a "step" from a manifest, at the top level or in its
// plan, when there is one.
func manifestStep(dir string) (int, bool, error) {
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	var m struct {
		Step *json.Number `json:"step"`
		Plan struct {
			Step *json.Number `json:"step"`
		} `json:"plan"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, false, fmt.Errorf("%s: %w", path, err)
	}
	n, where := m.Step, "step"
	if n == nil {
		n, where = m.Plan.Step, "plan.step"
	}
	if n == nil {
		return 0, false, nil
	}
	s, err := n.Int64()
	if err != nil {
		return 0, false, fmt.Errorf("%s: %s: want an integer, got %s", path, where, n.String())
	}
	return int(s), true, nil
}

// buildReport scores the runs by checkpoint and framework and analyses the
// points.
// presence counts each run's records against its plan, as scoring read
// them.
func buildReport(runs []metrics.RunInfo, opts metrics.Options, scenarios []string, steps stepSource, title string) (rep *report.Report, presence []store.Presence, err error) {
	res, err := metrics.Score(runs, opts, scenarios)
	if err != nil {
		return nil, nil, err
	}
	presence = res.Presence
	var ins []pareto.Input
	for _, g := range res.Groups {
		s, err := steps.step(g.Key(metrics.ByCheckpoint))
		if err != nil {
			return nil, nil, err
		}
		ins = append(ins, pareto.FromGroup(g, s))
	}
	an, err := pareto.Analyze(ins, opts.Bootstrap)
	if err != nil {
		return nil, nil, err
	}
	dirs := make([]string, len(runs))
	for i, r := range runs {
		dirs[i] = r.Dir
	}
	rep, err = report.New(title, dirs, steps.describe, res, an)
	if err != nil {
		return nil, nil, err
	}
	// Several frameworks (exposure filters) among the groups: put them side
	// by side in the report's gating section.
	frameworks := map[string]bool{}
	for _, g := range res.Groups {
		frameworks[g.Key(metrics.ByFramework)] = true
	}
	if len(frameworks) > 1 {
		rows := make([]report.FilterRow, len(res.Groups))
		for i, g := range res.Groups {
			rows[i] = report.Row(g)
		}
		report.SortFilters(rows, engine.Frameworks)
		rep.Gating = &report.Gating{Filters: rows}
	}
	return rep, presence, nil
}

// relReportPaths names the report's run folders, and the checkpoints file
// its steps came from (when one did), relative to the report folder dir, so
// that a report holds no path of the machine that made it and reads the
// same wherever its folders are moved together.
func relReportPaths(rep *report.Report, dir, checkpoints string) {
	for i, r := range rep.Runs {
		rep.Runs[i] = export.RelPath(dir, r)
	}
	if checkpoints != "" {
		rep.StepSource = stepsFromCheckpoints(export.RelPath(dir, checkpoints), nil).describe
	}
}

func printPareto(w io.Writer, rep *report.Report, out string, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rep)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCHECKPOINT\tDR\tCSR\tCCSR\tFRONT\tP(FRONT)\tCOLLAPSE")
	for _, p := range rep.Points {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\n", p.Step, p.Label, fmtCI(p.DR, p.DRCI), fmtCI(p.CSR, p.CSRCI),
			fmtCI(p.CCSR, p.CCSRCI), yesNoFlag(p.OnFront), p.FrontProbability, yesNoFlag(p.Collapse))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nhypervolume %s (reference DR = 1, CSR = 0); front: %s\n", fmtCI(metrics.Num(rep.Hypervolume), rep.HypervolumeCI), rep.FrontText())
	if len(rep.Moves) > 0 {
		fmt.Fprintf(w, "moves: %d comparisons, %s-corrected\n", rep.Comparisons, rep.Correction)
	}
	for _, m := range rep.Moves {
		fmt.Fprintf(w, "  %s\n", m.Summary)
	}
	fmt.Fprintf(w, "\nreport: %s\n", filepath.Join(out, "report.html"))
	return nil
}

func yesNoFlag(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
