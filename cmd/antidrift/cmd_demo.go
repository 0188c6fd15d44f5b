package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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
		Short: "Run the whole pipeline on the built-in suite with the simulated checkpoint family",
		Long: `Run the whole pipeline offline: serve the simulated policies behind an
in-process OpenAI-compatible endpoint (sim-server); roll out every simulated
checkpoint (sim:base, sim:sft, sim:dpo-1, sim:dpo-2, sim:overcautious, steps
0-4) on the built-in suite through the HTTP client; score them and write the
Pareto report; build DPO pairs (trajectory- and step-level), rewards with
GRPO advantages, and the trajectories and KTO tables, each as Parquet, Arrow
IPC and JSONL with a dataset card. The checkpoints are simulations, not
models. Rerunning resumes the rollouts and rewrites the rest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.OutOrStdout(), out, rollouts, latency) },
	}
	cmd.Flags().StringVar(&out, "out", "antidrift-demo", "output folder")
	cmd.Flags().IntVar(&rollouts, "rollouts", 8, "rollouts per scenario and checkpoint")
	cmd.Flags().DurationVar(&latency, "latency", 0, "simulated model latency per request")
	return cmd
}

// demoStage runs one subcommand as a user would type it; its own output goes
// to a log file in the demo folder, so the demo prints only its summary.
// The log names paths relative to the demo folder out (its header says
// so): the stages' commands then run as they read from inside it.
func demoStage(log io.Writer, out string, args ...string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n$ antidrift %s\n", strings.Join(args, " "))
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&b)
	root.SetErr(&b)
	err := root.Execute()
	if _, werr := io.WriteString(log, relToFolder(b.String(), out)); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("demo: antidrift %s: %w", args[0], err)
	}
	return nil
}

// relToFolder rewrites every path in text under folder dir (named as given
// or absolute) relative to dir: dir/runs/base becomes runs/base, dir itself
// ".". A match must stand alone, as a command-line argument or a quoted
// value does (not inside a longer name or a word such as sim:demo); the
// absolute form is tried first, as it may contain the given one.
func relToFolder(text, dir string) string {
	var roots []string
	if abs, err := filepath.Abs(dir); err == nil {
		roots = append(roots, abs)
	}
	if c := filepath.Clean(dir); c != "." && !filepath.IsAbs(c) {
		roots = append(roots, c)
	}
	for _, root := range roots {
		var b strings.Builder
		done := 0 // bytes of text already written
		for rest := text; ; {
			i := strings.Index(rest, root)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			j := i + len(root)
			start := done + i          // where the match starts in text
			const ends = " \t\n\"',):" // what may follow a path
			alone := (start == 0 || strings.IndexByte(" \t\n\"'=(,", text[start-1]) >= 0) &&
				(j == len(rest) || rest[j] == '/' || strings.IndexByte(ends, rest[j]) >= 0)
			switch {
			case !alone:
				b.WriteString(rest[:j])
			case j+1 < len(rest) && rest[j] == '/' && strings.IndexByte(ends, rest[j+1]) < 0:
				b.WriteString(rest[:i])
				j++ // dir/x -> x
			default: // dir, or dir/ -> ./
				b.WriteString(rest[:i] + ".")
			}
			rest, done = rest[j:], done+j
		}
		text = b.String()
	}
	return text
}

func runDemo(w io.Writer, out string, rollouts int, latency time.Duration) error {
	start := time.Now()
	ss, err := loadScenarios(nil, "")
	if err != nil {
		return err
	}
	claim, err := claimOut("demo", out, nil, outRule{resumable: []string{"runs", "report", "pairs", "rewards", "trajectories", "kto", "demo.log"}})
	if err != nil {
		return err
	}
	defer claim.release()
	logPath := filepath.Join(out, "demo.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "antidrift demo: what each stage printed. Paths are relative to this folder (the demo's output folder), as if each command ran from here.\n")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sim.NewServer(ss, latency), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/v1"
	fmt.Fprintf(w, "antidrift demo: %d built-in scenarios × %d rollouts × %d simulated checkpoints, through sim-server at %s\n",
		len(ss), rollouts, len(sim.Profiles), base)

	var runs []string
	for i, p := range sim.Profiles {
		dir := filepath.Join(out, "runs", p.Name)
		runs = append(runs, dir)
		if err := demoStage(log, out, "rollout", "--policy", "openai:sim:"+p.Name, "--base-url", base,
			"--checkpoint", "sim:"+p.Name, "--step", fmt.Sprint(i), "--rollouts", fmt.Sprint(rollouts),
			"--concurrency", "64", "--seed", "1", "--out", dir, "--json"); err != nil {
			return err
		}
	}
	report := filepath.Join(out, "report")
	stages := [][]string{
		append([]string{"pareto", "--out", report}, runs...),
		append([]string{"pairs", "--out", filepath.Join(out, "pairs"), "--step-pairs", "--format", "parquet,arrow,jsonl"}, runs...),
		append([]string{"rewards", "--out", filepath.Join(out, "rewards"), "--format", "parquet,arrow,jsonl"}, runs...),
		append([]string{"export", "--table", "trajectories", "--out", filepath.Join(out, "trajectories"), "--format", "parquet,arrow,jsonl"}, runs...),
		append([]string{"export", "--table", "kto", "--out", filepath.Join(out, "kto"), "--format", "parquet,arrow,jsonl"}, runs...),
	}
	for _, args := range stages {
		if err := demoStage(log, out, args...); err != nil {
			return err
		}
	}
	if err := claim.done(); err != nil {
		return err
	}
	return demoSummary(w, out, report, logPath, time.Since(start))
}

// demoSummary prints the checkpoints on the Pareto plane and what was made.
func demoSummary(w io.Writer, out, report, logPath string, elapsed time.Duration) error {
	var rep struct {
		Points []struct {
			Checkpoint string   `json:"checkpoint"`
			Step       int      `json:"step"`
			N          int      `json:"n"`
			TSR        float64  `json:"tsr"`
			DR         float64  `json:"dr"`
			CSR        float64  `json:"csr"`
			CCSR       *float64 `json:"ccsr"`
			OnFront    bool     `json:"on_front"`
			FrontP     float64  `json:"front_probability"`
			Collapse   bool     `json:"collapse"`
		} `json:"points"`
		Hypervolume   float64    `json:"hypervolume"`
		HypervolumeCI []*float64 `json:"hypervolume_ci"`
		Comparisons   int        `json:"comparisons"`
		Correction    string     `json:"correction"`
		Moves         []struct {
			Summary string `json:"summary"`
		} `json:"moves"`
	}
	b, err := os.ReadFile(filepath.Join(report, "report.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("demo: %s: %w", filepath.Join(report, "report.json"), err)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCHECKPOINT (simulated)\tEPISODES\tTSR\tDR\tCSR\tCCSR\tPARETO")
	for _, p := range rep.Points {
		ccsr := "n/a"
		if p.CCSR != nil {
			ccsr = fmt.Sprintf("%.3f", *p.CCSR)
		}
		mark := fmt.Sprintf("dominated (P(front) %.2f)", p.FrontP)
		if p.OnFront {
			mark = fmt.Sprintf("front (P %.2f)", p.FrontP)
		}
		if p.Collapse {
			mark += ", capability collapse"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t%s\n", p.Step, p.Checkpoint, p.N, p.TSR, p.DR, p.CSR, ccsr, mark)
	}
	tw.Flush()
	hv := fmt.Sprintf("%.3f", rep.Hypervolume)
	if len(rep.HypervolumeCI) == 2 && rep.HypervolumeCI[0] != nil && rep.HypervolumeCI[1] != nil {
		hv += fmt.Sprintf(" [%.3f,%.3f]", *rep.HypervolumeCI[0], *rep.HypervolumeCI[1])
	}
	fmt.Fprintf(w, "\nhypervolume %s; moves between consecutive steps (paired tests over scenarios, %d comparisons, %s-corrected, 95%%):\n", hv, rep.Comparisons, rep.Correction)
	for _, m := range rep.Moves {
		fmt.Fprintf(w, "  %s\n", m.Summary)
	}
	fmt.Fprintf(w, "\nMade in %s (%.1fs):\n", out, elapsed.Seconds())
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range [][2]string{
		{"runs/<checkpoint>/", "run folders: manifest.json, trajectories/*.jsonl (one record per episode)"},
		{"report/", "Pareto report: report.html, report.md, report.json, pareto.png/.svg, drift plots"},
		{"pairs/", "DPO pairs (trajectory and drift-onset step pairs): data/dpo-{train,validation,test}.parquet, arrow/, jsonl/, pairs_stats.json, README.md"},
		{"rewards/", "rewards with GRPO advantages and process rewards: data/rewards-{train,validation,test}.parquet, arrow/, jsonl/, README.md"},
		{"trajectories/", "every trajectory with its labels: data/trajectories-{train,validation,test}.parquet, arrow/, jsonl/, README.md"},
		{"kto/", "KTO examples (clean successes desirable, drift undesirable): data/kto-{train,validation,test}.parquet, arrow/, jsonl/, README.md"},
		{filepath.Base(logPath), "what each stage printed"},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	tw.Flush()
	fmt.Fprintf(w, "\nOpen %s, or load_dataset(%q) for TRL as its README.md shows.\n",
		filepath.Join(report, "report.html"), filepath.Join(out, "pairs"))
	fmt.Fprintf(w, "\nNext, browse the trajectories, their drift marks and the pairs:\n\n  antidrift view %s\n\n(with bin/ on your PATH: export PATH=\"$PWD/bin:$PATH\", or make install)\n", out)
	return nil
}
