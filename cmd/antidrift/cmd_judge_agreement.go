package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/probe"
	"github.com/spf13/cobra"
)

type agreementFlags struct {
	a, b   string
	show   int
	asJSON bool
}

func init() { register(newJudgeAgreementCmd) }

func newJudgeAgreementCmd() *cobra.Command {
	var f agreementFlags
	cmd := &cobra.Command{
		Use:   "judge-agreement RUN [--a record] [--b NAME]",
		Short: "Agreement and Cohen's kappa between two success labelings of a run",
		Long: `Compare two success labelings of a run: the labels inside the records
("record", the default --a) or a labeling written by antidrift judge
(RUN/labelings/NAME.jsonl; a judge spec such as openai:MODEL names the
labeling it writes by default). --b defaults to the run's only labeling.

Reports n (trajectories both labelings judged), the 2×2 table, observed
agreement, agreement expected by chance, Cohen's kappa (undefined when both
labelings give every trajectory one and the same label), each labeling's
success rate, and the disagreements. Trajectories a labeling could not judge
(an unparseable verdict or an endpoint error) are counted and left out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runJudgeAgreement(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.a, "a", labels.Record, "first labeling: record, or a labeling name (or judge spec)")
	fl.StringVar(&f.b, "b", "", "second labeling (default: the run's only labeling)")
	fl.IntVar(&f.show, "show", 10, "disagreements listed in the table output (all in --json)")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON on stdout")
	return cmd
}

func runJudgeAgreement(cmd *cobra.Command, dir string, f agreementFlags) error {
	have, err := labels.List(dir)
	if err != nil {
		return err
	}
	a := labels.NameFor(f.a)
	b := labels.NameFor(f.b)
	if f.b == "" {
		var others []string
		for _, n := range have {
			if n != a {
				others = append(others, n)
			}
		}
		if len(others) != 1 {
			if len(others) == 0 {
				return fmt.Errorf("%s has no labeling to compare with %s; write one with antidrift judge %s --judge ...", dir, a, dir)
			}
			return fmt.Errorf("%s has several labelings (%s); choose one with --b", dir, strings.Join(others, ", "))
		}
		b = others[0]
	}
	la, err := labels.Read(dir, a)
	if err != nil {
		return err
	}
	lb, err := labels.Read(dir, b)
	if err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		ls   []labels.Label
	}{{a, la}, {b, lb}} {
		if l.name == labels.Record {
			continue
		}
		if err := labels.CheckFresh(dir, l.name, l.ls); err != nil {
			return err
		}
	}
	ag := labels.Compare(la, lb)
	rep := agreementReport{Run: dir, A: a, B: b, KindA: kindOf(la), KindB: kindOf(lb), Agreement: ag}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), rep)
	}
	rep.print(cmd.OutOrStdout(), f.show)
	return nil
}

// kindOf names the judge of a labeling from its first verdict.
func kindOf(ls []labels.Label) string {
	for _, l := range ls {
		if l.Judge.Kind != "" {
			return l.Judge.Kind
		}
	}
	return ""
}

type agreementReport struct {
	Run, A, B, KindA, KindB string
	labels.Agreement
}

// MarshalJSON puts the identity first, then the agreement's own fields.
func (r agreementReport) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(r.Agreement)
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(map[string]string{"run": r.Run, "a": r.A, "b": r.B, "kind_a": r.KindA, "kind_b": r.KindB})
	if err != nil {
		return nil, err
	}
	// Both are JSON objects: join their members.
	return append(append(head[:len(head)-1], ','), inner[1:]...), nil
}

func fmtRate(f float64) string {
	if math.IsNaN(f) {
		return "undefined"
	}
	return fmt.Sprintf("%.3f", f)
}

func (r agreementReport) print(w io.Writer, show int) {
	ag := r.Agreement
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", r.Run)
	fmt.Fprintf(tw, "a\t%s (%s)\n", r.A, r.KindA)
	fmt.Fprintf(tw, "b\t%s (%s)\n", r.B, r.KindB)
	fmt.Fprintf(tw, "n\t%d\n", ag.N)
	if ag.OnlyA+ag.OnlyB+ag.ErrorsA+ag.ErrorsB > 0 {
		fmt.Fprintf(tw, "left out\t%d only in a, %d only in b, %d without a verdict in a, %d in b\n", ag.OnlyA, ag.OnlyB, ag.ErrorsA, ag.ErrorsB)
	}
	fmt.Fprintf(tw, "agreement\t%s\n", fmtRate(ag.Observed))
	kappa := fmtRate(ag.Kappa)
	if math.IsNaN(ag.Kappa) && ag.N > 0 {
		kappa += " (both labelings give every trajectory the same label)"
	}
	fmt.Fprintf(tw, "kappa\t%s\n", kappa)
	fmt.Fprintf(tw, "by chance\t%s\n", fmtRate(ag.Expected))
	if ag.N > 0 {
		fmt.Fprintf(tw, "success rate\ta %.3f, b %.3f\n", ag.SuccessA, ag.SuccessB)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tb success\tb failure\t\n")
	fmt.Fprintf(tw, "a success\t%d\t%d\t\n", ag.Table[1][1], ag.Table[1][0])
	fmt.Fprintf(tw, "a failure\t%d\t%d\t\n", ag.Table[0][1], ag.Table[0][0])
	tw.Flush()
	if len(ag.Disagreed) == 0 || show <= 0 {
		return
	}
	fmt.Fprintf(w, "\ndisagreements (%d", len(ag.Disagreed))
	if len(ag.Disagreed) > show {
		fmt.Fprintf(w, ", first %d; all with --json", show)
	}
	fmt.Fprintln(w, "):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "TRAJ_ID\tSCENARIO\tA\tB\tREASON (B)\n")
	for i, d := range ag.Disagreed {
		if i == show {
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.TrajID, d.ScenarioID, verdictWord(d.A), verdictWord(d.B), oneLine(d.ReasonB, 100))
	}
	tw.Flush()
}

func verdictWord(b bool) string {
	if b {
		return "success"
	}
	return "failure"
}

func oneLine(s string, n int) string { return probe.Oneline(s, n) }
