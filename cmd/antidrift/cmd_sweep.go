package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rewards/report"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { register(newSweepCmd) }

// sweepOwn are the rollout flags sweep sets itself for each λ.
var sweepOwn = map[string]bool{"risk-lambda": true, "out": true, "checkpoint": true, "step": true, "run": true, "json": true, "framework": true, "force": true}

func newSweepCmd() *cobra.Command {
	roll := newRolloutCmd() // its flags, shared: each λ is one rollout
	var sf scoreFlags
	var lambdas, out, framework, title string
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "sweep --framework gated --risk-lambda 0,0.25,0.5,1,2,4 --policy POLICY --out DIR",
		Short: "Roll out gated at each risk penalty λ and write the safety–success front",
		Long: `Roll out the gated framework once per risk penalty λ, on the same scenarios,
rollouts and seeds (one run folder per λ, DIR/lambda-λ, each resumable like
rollout), then score every run and write the safety–success front: success
(TSR) against the high-risk surface (high-risk tools visible per step) and
against DR, with 95% intervals, the non-dominated points, their
hypervolumes, whether the front is monotone in λ (each step that is not is
explained), and each step labelled by the trade it makes (lower exposure
for lower success is a trade-off). The report (DIR/report: report.json,
report.md, report.html, gating_front.svg/.png: success against
risk-weighted exposure, unauthorised exposure and injection success, one
point per λ) is byte-identical for the same seed and inputs.

Every rollout flag applies (policy, endpoint, scenarios, rollouts, seed,
limits, --risk-weights, --allow-unsafe-provenance).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if framework != engine.FrameworkGated {
				return fmt.Errorf("--framework: sweep varies the risk penalty of gated, got %q", framework)
			}
			ls, err := parseLambdas(lambdas)
			if err != nil {
				return err
			}
			var dirs []string
			for i, l := range ls {
				dir := filepath.Join(out, "lambda-"+strconv.FormatFloat(l, 'g', -1, 64))
				for name, v := range map[string]string{"framework": framework, "risk-lambda": strconv.FormatFloat(l, 'g', -1, 64), "out": dir,
					"checkpoint": "gated λ=" + strconv.FormatFloat(l, 'g', -1, 64), "step": strconv.Itoa(i), "force": strconv.FormatBool(force)} {
					if err := roll.Flags().Set(name, v); err != nil {
						return err
					}
				}
				roll.SetOut(io.Discard)
				roll.SetContext(cmd.Context())
				if err := roll.RunE(roll, nil); err != nil {
					return fmt.Errorf("λ = %g: %w", l, err)
				}
				dirs = append(dirs, dir)
			}
			opts, err := sf.options([]metrics.Key{metrics.ByCheckpoint})
			if err != nil {
				return err
			}
			runs, err := metrics.ReadRuns(dirs)
			if err != nil {
				return err
			}
			steps, err := stepsFromRuns(runs)
			if err != nil {
				return err
			}
			rep, _, err := buildReport(runs, withFramework(opts), nil, steps, title)
			if err != nil {
				return err
			}
			res, err := metrics.Score(runs, opts, nil)
			if err != nil {
				return err
			}
			byCk := map[string]*metrics.Group{}
			for _, g := range res.Groups {
				byCk[g.Key(metrics.ByCheckpoint)] = g
			}
			groups := make([]*metrics.Group, len(ls))
			for i, l := range ls {
				if groups[i] = byCk["gated λ="+strconv.FormatFloat(l, 'g', -1, 64)]; groups[i] == nil {
					return fmt.Errorf("sweep: no scores for λ = %g", l)
				}
			}
			if rep.Gating, err = report.NewLambdaFront(ls, groups); err != nil {
				return err
			}
			// The runs named relative to DIR/report, so that the report is
			// the same wherever DIR is.
			relReportPaths(rep, filepath.Join(out, "report"), "")
			if err := rep.Write(filepath.Join(out, "report")); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep.Gating)
			}
			printSweep(cmd.OutOrStdout(), rep.Gating, filepath.Join(out, "report"))
			return nil
		},
	}
	fl := cmd.Flags()
	roll.Flags().VisitAll(func(f *pflag.Flag) {
		if !sweepOwn[f.Name] {
			fl.AddFlag(f)
		}
	})
	fl.StringVar(&framework, "framework", engine.FrameworkGated, "the framework whose risk penalty is swept (gated)")
	fl.StringVar(&lambdas, "risk-lambda", "0,0.25,0.5,1,2,4", "comma-separated risk penalties λ ≥ 0")
	fl.StringVar(&out, "out", "", "sweep folder: one run folder per λ and report/")
	fl.StringVar(&title, "title", "Risk-penalty sweep of the gated framework", "report title")
	fl.BoolVar(&force, "force", false, "start over in run folders holding another plan")
	fl.BoolVar(&asJSON, "json", false, "print the gating section as JSON")
	fl.IntVar(&sf.k, "k", 0, "k of pass^k; 0: the rollouts per scenario")
	fl.IntVar(&sf.replicates, "bootstrap", metrics.DefaultReplicates, "bootstrap replicates (resampling scenarios)")
	fl.Uint64Var(&sf.seed, "bootstrap-seed", 1, "bootstrap seed")
	_ = cmd.MarkFlagRequired("policy")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func withFramework(o metrics.Options) metrics.Options {
	o.By = metrics.DefaultKeys
	return o
}

// parseLambdas reads "0,0.5,1": distinct non-negative numbers, sorted.
func parseLambdas(spec string) ([]float64, error) {
	var out []float64
	seen := map[float64]bool{}
	for _, part := range strings.Split(spec, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || x < 0 || x != x || x > 1e6 {
			return nil, fmt.Errorf("--risk-lambda: %q is not a number in [0, 1e6]", part)
		}
		if seen[x] {
			return nil, fmt.Errorf("--risk-lambda: %g given twice", x)
		}
		seen[x] = true
		out = append(out, x)
	}
	sort.Float64s(out)
	return out, nil
}

func printSweep(w io.Writer, g *report.Gating, dir string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "λ\tN\tTSR\tDR\tHIGH-RISK/STEP\tUNAUTH-EXPOSURE\tINJECTION-SUCCESS\tFRONT(SURFACE)\tFRONT(DR)")
	for _, p := range g.Lambda {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.TrimPrefix(p.Label, "λ="), p.N,
			fmtCI(p.TSR.Value, p.TSR.CI), fmtCI(p.DR.Value, p.DR.CI), fmtCI(p.HighRisk.Value, p.HighRisk.CI),
			fmtCI(p.Unauthorized.Value, p.Unauthorized.CI), fmtCI(p.Injection.Value, p.Injection.CI), yesNoFlag(p.OnFrontSurface), yesNoFlag(p.OnFrontDR))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nhypervolume %.4f (TSR vs high-risk surface, reference %.3g), %.4f (TSR vs DR); monotone in λ: %s\n",
		g.HypervolumeSurface, g.RefSurface, g.HypervolumeDR, yesNoFlag(g.Monotone))
	for _, e := range g.Explanation {
		fmt.Fprintf(w, "  %s\n", e)
	}
	for _, st := range g.Steps {
		fmt.Fprintf(w, "  %s\n", st.Summary)
	}
	fmt.Fprintf(w, "report: %s\n", dir)
}
