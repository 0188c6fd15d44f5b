package main

import (
	"fmt"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/spf13/cobra"
)

// scoreFlags are the flags every scoring command shares.
type scoreFlags struct {
	k          int
	replicates int
	seed       uint64
	scenarios  []string
	provisions string
}

// register adds the flags; seedFlag names the bootstrap seed's flag (rescore
// keeps --seed for the rollouts), and withScenarios adds --scenarios.
func (f *scoreFlags) register(cmd *cobra.Command, seedFlag string, withScenarios bool) {
	fl := cmd.Flags()
	fl.IntVar(&f.k, "k", 0, "k of pass^k; 0: the runs' rollouts per scenario (the smallest, when they differ)")
	fl.IntVar(&f.replicates, "bootstrap", metrics.DefaultReplicates, "bootstrap replicates (resampling scenarios)")
	fl.Uint64Var(&f.seed, seedFlag, 1, "bootstrap seed")
	if withScenarios {
		fl.StringSliceVar(&f.scenarios, "scenarios", nil, "scenario files or folders the runs used (default: each manifest's plan.scenario_source)")
	}
	fl.StringVar(&f.provisions, "provisions", "", "provisions catalogue (default: the built-in one)")
}

func (f *scoreFlags) options(by []metrics.Key) (metrics.Options, error) {
	if f.k < 0 {
		return metrics.Options{}, fmt.Errorf("--k must be at least 1 (or 0 for the runs' rollouts), got %d", f.k)
	}
	if f.replicates < 1 {
		return metrics.Options{}, fmt.Errorf("--bootstrap must be at least 1, got %d", f.replicates)
	}
	opts := metrics.Options{By: by, K: f.k, Bootstrap: metrics.Bootstrap{Replicates: f.replicates, Seed: f.seed}}
	if f.provisions != "" {
		cat, err := provisions.LoadFile(f.provisions)
		if err != nil {
			return opts, err
		}
		opts.Catalogue = cat
	}
	return opts, nil
}

func init() { register(newScoreCmd) }

func newScoreCmd() *cobra.Command {
	var f scoreFlags
	var by string
	var asJSON bool
	var partial partialFlag
	var labeling string
	cmd := &cobra.Command{
		Use:   "score RUN...",
		Short: "Score run folders: TSR, DR, CSR, CCSR and the rest, with cluster intervals",
		Long: `Score the trajectories of run folders, one group per (checkpoint, framework)
by default. Metrics: TSR, DR (every drift match, annotated or derived),
DR_annotated (annotated violations only: the Authorization Drift
Benchmark's DR), CSR, CCSR = CSR/(1-DR) (null when DR = 1), DR@any, persistence PR = DR@any/DR, pass^k, per-rollout DR, breakdowns by
domain, drift type, violation kind, provision and jurisdiction, drift
positions, drift-type correlations, least privilege and exposure, and the
attack-surface metrics of risk-aware gating (high-risk surface per step,
mean and max; risk-weighted surface; risk-bearing and unauthorised
exposure; premature high-risk actions; injection success on scenarios with
injections). --by framework puts the exposure filters side by side. Intervals
are 95% intervals with scenarios as clusters: exact (Clopper–Pearson,
Garwood) intervals on an effective sample size from the design effect, with
Student's t on the clusters' degrees of freedom (Korn and Graubard); every
breakdown rate carries its scenarios and events and is marked sparse under
10 scenarios or 5 events.

Records are streamed: memory grows with the number of scenarios, not of
trajectories. Least-privilege and exposure metrics need the scenarios: they
are loaded from each manifest's plan.scenario_source (or --scenarios) and
must match the run's scenario hash.

--by takes one key or a comma-separated list: checkpoint, framework, domain,
drift_type. With drift_type, a group's "drift" is drift of that type.
--json prints {"groups": [...]} with the grouping keys and every metric.

--labeling NAME scores with a labeling antidrift judge wrote in each run
(RUN/labelings/NAME.jsonl) instead of the records' own labels: its success,
and its drift when it carries one (a --disclosure labeling); trajectories
it has no verdict for are left out, with a warning.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer streamingMemory()()
			keys, err := metrics.ParseKeys(by)
			if err != nil {
				return fmt.Errorf("--by: %w", err)
			}
			opts, err := f.options(keys)
			if err != nil {
				return err
			}
			// Select runs get the skills section (cmd_score_skills.go);
			// rollout runs the trajectory metrics.
			rollouts, selects, err := splitSelectRuns(args)
			if err != nil {
				return err
			}
			// Rollout runs are counted against their plans as they are
			// scored (no pass of its own over the files); select runs here.
			if err := partial.check(selects, cmd.ErrOrStderr()); err != nil {
				return err
			}
			res := &metrics.Result{}
			if len(rollouts) > 0 {
				runs, err := metrics.ReadRuns(rollouts)
				if err != nil {
					return err
				}
				ov, err := labels.OpenOverlay(rollouts, labeling)
				if err != nil {
					return err
				}
				if ov != nil {
					opts.Relabel = ov.Apply
				}
				if res, err = metrics.Score(runs, opts, f.scenarios); err != nil {
					// A partial run is what to say first, as before scoring.
					if perr := partial.check(rollouts, cmd.ErrOrStderr()); perr != nil {
						return perr
					}
					return err
				}
				if err := partial.checkCounted(res.Presence, cmd.ErrOrStderr()); err != nil {
					return err
				}
				// Checkpoints by training step, as pareto orders them.
				steps, err := stepsFromRuns(runs)
				if err != nil {
					return err
				}
				res.OrderCheckpoints(func(ck string) int {
					s, err := steps.step(ck)
					if err != nil {
						return math.MaxInt
					}
					return s
				})
				if w := ov.Warning(); w != "" {
					res.Warnings = append(res.Warnings, w)
				}
			}
			if len(selects) > 0 {
				return scoreWithSkills(cmd.Context(), cmd.OutOrStdout(), res, len(rollouts) > 0, selects, opts.Bootstrap, asJSON)
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "antidrift: warning:", w)
			}
			if len(res.Excluded) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "antidrift: %s left out of every metric (not the policy's behaviour; see docs/servers.md)\n", excludedText(res.Excluded))
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					*metrics.Result
					Partial []string `json:"partial,omitempty"`
				}{res, partial.labels()})
			}
			printScores(cmd.OutOrStdout(), res)
			for _, l := range partial.labels() {
				fmt.Fprintf(cmd.OutOrStdout(), "PARTIAL: %s\n", l)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&by, "by", "checkpoint,framework", "grouping: checkpoint, framework, domain, drift_type, or a comma-separated list")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"groups": [...]} as JSON`)
	cmd.Flags().StringVar(&labeling, "labeling", labels.Record, "labels to score with: record (the records' own), or a labeling NAME in each run (antidrift judge)")
	partial.add(cmd.Flags())
	f.register(cmd, "seed", true)
	return cmd
}

// withCI is "0.483 [0.401,0.566]", or "-" when undefined.
func fmtCI(v metrics.Num, ci metrics.CI) string {
	if !v.Defined() {
		return "-"
	}
	if !ci[0].Defined() || !ci[1].Defined() {
		return fmt.Sprintf("%.3f", float64(v))
	}
	return fmt.Sprintf("%.3f [%.3f,%.3f]", float64(v), float64(ci[0]), float64(ci[1]))
}

func fmtNum(v metrics.Num) string {
	if !v.Defined() {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(v))
}

func printScores(w io.Writer, res *metrics.Result) {
	keys := make([]string, len(res.By))
	for i, k := range res.By {
		keys[i] = strings.ToUpper(string(k))
	}
	head := strings.Join(keys, "\t")
	if head != "" {
		head += "\t"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%sN\tSCEN\tTSR\tDR\tDR_ANNOTATED\tCSR\tCCSR\tDR@ANY\tPR\tPASS^%d\tDR_r MEAN±SD\n", head, res.K)
	vals := func(g *metrics.Group) string {
		s := ""
		for _, kv := range g.Keys {
			s += kv.Value + "\t"
		}
		return s
	}
	scen := func(g *metrics.Group) string {
		if g.Scenarios < metrics.MinClusters {
			return fmt.Sprintf("%d†", g.Scenarios)
		}
		return fmt.Sprint(g.Scenarios)
	}
	few := false
	for _, g := range res.Groups {
		few = few || g.Scenarios < metrics.MinClusters
		fmt.Fprintf(tw, "%s%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s±%s\n", vals(g), g.N, scen(g),
			fmtCI(g.TSR, g.TSRCI), fmtCI(g.DR, g.DRCI), fmtCI(g.DRAnnotated, g.DRAnnotatedCI), fmtCI(g.CSR, g.CSRCI), fmtCI(g.CCSR, g.CCSRCI),
			fmtCI(g.DRAny, g.DRAnyCI), fmtCI(g.PR, g.PRCI), fmtCI(g.PassK, g.PassKCI), fmtNum(g.DRRolloutMean), fmtNum(g.DRRolloutStd))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%sOVER-PRIV\tEXACT-MIN\tNO-ACTION\tFAIL\tRISK-VIS/STEP\tUNAUTH-EXPOSURE\tPREMATURE-HIGH-RISK\n", head)
	for _, g := range res.Groups {
		lp, ex := g.LeastPrivilege, g.Exposure
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", vals(g),
			fmtNum(lp.OverPrivilege.Value), fmtNum(lp.ExactMinimal.Value), fmtNum(lp.NoAction.Value), fmtNum(lp.Fail.Value),
			fmtNum(ex.RiskVisiblePerStep.Value), fmtNum(ex.Unauthorized.Value), fmtNum(ex.PrematureHighRisk.Value))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%sHIGH-RISK/STEP\tHIGH-RISK MAX\tRISK-WEIGHTED/STEP\tUNAUTH-HIGH-RISK\tPREMATURE-HIGH-RISK\tINJECTION-SUCCESS (N)\n", head)
	for _, g := range res.Groups {
		as := g.AttackSurface
		inj := "-"
		if as.Injected > 0 {
			inj = fmt.Sprintf("%s (%d)", fmtCI(as.InjectionSuccess.Value, as.InjectionSuccess.CI), as.Injected)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", vals(g),
			fmtCI(as.HighRiskSurfaceMean.Value, as.HighRiskSurfaceMean.CI), fmtNum(as.HighRiskSurfaceMax.Value),
			fmtCI(as.RiskWeightedSurface.Value, as.RiskWeightedSurface.CI), fmtCI(as.UnauthorizedHighRisk.Value, as.UnauthorizedHighRisk.CI),
			fmtCI(as.PrematureHighRisk.Value, as.PrematureHighRisk.CI), inj)
	}
	tw.Flush()
	agentDojoText(w, res, head, vals)
	fmt.Fprintf(w, "\n95%% intervals with scenarios as clusters (exact, with a design effect and t degrees of freedom; docs/scoring.md#intervals). --json for every metric and breakdown.\n")
	if few {
		fmt.Fprintf(w, "† fewer than %d scenarios: read the intervals, not the values.\n", metrics.MinClusters)
	}
	if n := sparseBreakdowns(res); n > 0 {
		fmt.Fprintf(w, "%d breakdown rates stand on fewer than %d scenarios or %d events (\"sparse\": true in --json).\n", n, metrics.MinClusters, metrics.MinEvents)
	}
}

// excludedText lists excluded records as "3 context_truncated, 1 infra_error".
func excludedText(m map[string]int) string {
	var parts []string
	for _, st := range trajectory.Statuses {
		if n := m[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ")
}

// sparseBreakdowns counts the breakdown rates marked sparse.
func sparseBreakdowns(res *metrics.Result) int {
	n := 0
	count := func(e metrics.Estimate) {
		if e.Support != nil && e.Support.Sparse && e.Value.Defined() {
			n++
		}
	}
	for _, g := range res.Groups {
		for _, d := range g.Domains {
			count(d.TSR)
			count(d.DR)
			count(d.DRAnnotated)
			count(d.CSR)
		}
		for _, m := range []map[string]metrics.Estimate{g.DriftTypes, g.DriftTypesAll, g.Kinds, g.TimeKinds, g.Jurisdictions, g.JurisdictionCount} {
			for _, e := range m {
				count(e)
			}
		}
		for _, p := range g.Provisions {
			count(p.Estimate)
		}
	}
	return n
}

// agentDojoText prints, when some group has injected scenarios, their
// scores per (user task × injection task) by attack, as AgentDojo gives
// them (rewards/metrics/agentdojo.go).
func agentDojoText(w io.Writer, res *metrics.Result, head string, vals func(*metrics.Group) string) {
	some := false
	for _, g := range res.Groups {
		some = some || g.AttackSurface.AgentDojo != nil
	}
	if !some {
		return
	}
	fmt.Fprintln(w, "\nInjections per (user task × injection task), as AgentDojo scores them (means over user tasks and over pairs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%sATTACK\tPAIRS\tUTILITY\tUTILITY-UNDER-ATTACK\tTARGETED-ASR\n", head)
	for _, g := range res.Groups {
		d := g.AttackSurface.AgentDojo
		if d == nil {
			continue
		}
		for _, a := range d.Attacks {
			fmt.Fprintf(tw, "%s%s\t%d\t%s\t%s\t%s\n", vals(g), a.Attack, a.Pairs, fmtCI(d.Utility.Value, d.Utility.CI),
				fmtCI(a.UtilityUnderAttack.Value, a.UtilityUnderAttack.CI), fmtCI(a.TargetedASR.Value, a.TargetedASR.CI))
		}
	}
	tw.Flush()
}
