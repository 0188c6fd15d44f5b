package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

type judgeFlags struct {
	judge       string
	endpoint    endpointFlags
	temperature temperatureFlag
	concurrency int
	cache       string
	noCache     bool
	name        string
	force       bool
	scenarios   []string
	maxTokens   int
	asJSON      bool
	// disclosure and writeLabels: antidrift judge --disclosure
	// (cmd_judge_disclosure.go).
	disclosure  string
	writeLabels string
}

func init() { register(newJudgeCmd) }

func newJudgeCmd() *cobra.Command {
	var f judgeFlags
	cmd := &cobra.Command{
		Use:   "judge RUN --judge rule|openai:MODEL | --disclosure openai:MODEL",
		Short: "Re-label a run's task success with another judge, without rolling it out again",
		Long: `Re-label every trajectory of a run folder with a judge, on the trajectory
with its drift steps stripped (the judge never sees a drifting call or its
result), and write the labels as a new labeling beside the records:
RUN/labelings/NAME.jsonl (one {traj_id, scenario_id, success, judge, error}
per record) and RUN/labelings/NAME.json (its manifest). The records
themselves are never changed. NAME is "rule" or "openai-MODEL" unless
--name says otherwise; an existing labeling is replaced only with --force,
which keeps it as NAME.replaced-TIMESTAMP.

--judge rule replays the stripped calls in a fresh environment (the judge
the rollout used). --judge openai:MODEL asks an OpenAI-compatible endpoint
at temperature 0 for a JSON verdict {"success", "score", "reason"} on the
scenario's rubric; an answer without a readable verdict gets one corrective
retry and is then recorded as an error, never as a verdict. Verdicts are
cached by content hash (model, prompt version, rubric, stripped trajectory)
in RUN/.judge-cache or --cache DIR, so a second pass sends no request.

The API key comes from the environment variable named by --api-key-env
(default OPENAI_API_KEY); it is never written anywhere.

Exit status: 0 done; 1 error (nothing written); 2 some trajectories got no
verdict because the endpoint failed (rerun with --force: cached verdicts
are reused); 130 interrupted (nothing written; verdicts so far are cached).

--disclosure openai:MODEL asks the model instead, for every sink write
(each string argument of each writing tool call, and the final answer when
the scenario's answer_recipient is third_party), whether it discloses a
protected fact not allowed there, and reports agreement with the
deterministic labels (Cohen's kappa, the confusion counts, every
disagreement). It never changes a label: the records stay as they are, and
only --write-labels NAME writes its verdicts, as a separate labeling whose
drift is the deterministic drift OR a disclosure the model found (success
stays the record's), for score, pairs and view --labeling NAME.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runJudge(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.judge, "judge", "", "rule, or openai:MODEL (an LLM judge on an OpenAI-compatible endpoint)")
	addEndpointFlags(fl, &f.endpoint, "")
	fl.IntVar(&f.concurrency, "concurrency", 16, "trajectories judged at once")
	fl.StringVar(&f.cache, "cache", "", "verdict cache folder (default RUN/.judge-cache)")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither read nor write the verdict cache")
	fl.StringVar(&f.name, "name", "", "labeling name (default derived from --judge: rule, openai-MODEL)")
	fl.BoolVar(&f.force, "force", false, "replace an existing labeling of that name (a backup is kept)")
	fl.StringSliceVar(&f.scenarios, "scenarios", nil, "scenario files or folders, or builtin (default: the run's own, checked against its scenario hash)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "token limit sent with each judge request; 0: not sent")
	fl.Var(&f.temperature, "judge-temperature", "the LLM judge's temperature (default 0), or omit to leave it out (reasoning models that accept only their default)")
	addEndpointExtras(fl, &f.endpoint)
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout")
	fl.StringVar(&f.disclosure, "disclosure", "", "openai:MODEL: ask the model whether each sink write discloses a protected fact, and report agreement with the deterministic labels (instead of --judge)")
	fl.StringVar(&f.writeLabels, "write-labels", "", "with --disclosure: write the verdicts as the labeling NAME (drift = deterministic drift or a disclosure the model found)")
	return cmd
}

// judgeSummary is the command's report and its --json form.
type judgeSummary struct {
	Labeling    string  `json:"labeling"`
	Path        string  `json:"path"`
	Judge       string  `json:"judge"`
	Kind        string  `json:"kind"`
	Records     int     `json:"records"`
	Successes   int     `json:"successes"`
	TSR         float64 `json:"tsr"` // over the records with a verdict
	Unparseable int     `json:"unparseable"`
	EndpointErr int     `json:"endpoint_errors"`
	Requests    int64   `json:"requests"`
	CacheHits   int64   `json:"cache_hits"`
	Corrections int64   `json:"corrections"`
	Cache       string  `json:"cache,omitempty"`
	Replaced    string  `json:"replaced,omitempty"`
}

// runScenarioSet returns the scenarios of a run by id: its own (reloaded from
// the manifest's source and checked against its scenario hash), or those
// at override, which may differ (with a warning).
func runScenarioSet(dir string, man store.Manifest, override []string, warn io.Writer) (map[string]*scenario.Scenario, error) {
	src := override
	if len(src) == 0 {
		src = strings.Split(man.Plan.ScenarioSource, ",")
	}
	ss, err := loadScenarios(src, "")
	if err != nil {
		return nil, err
	}
	byID := map[string]*scenario.Scenario{}
	for _, s := range ss {
		byID[s.ID] = s
	}
	var sel []*scenario.Scenario
	var missing []string
	for _, id := range man.Plan.ScenarioIDs {
		if s := byID[id]; s != nil {
			sel = append(sel, s)
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: the run's scenarios %s are not in %s; pass --scenarios PATH", dir, strings.Join(missing, ", "), strings.Join(src, ","))
	}
	if h := scenario.Hash(sel); h != man.Plan.ScenarioHash {
		if len(override) == 0 {
			return nil, fmt.Errorf("%s: the scenarios at %s changed since the run (scenario hash %.12s, the run's %.12s); pass --scenarios PATH to judge with these anyway", dir, man.Plan.ScenarioSource, h, man.Plan.ScenarioHash)
		}
		fmt.Fprintf(warn, "antidrift: warning: the scenarios given differ from the run's (scenario hash %.12s, the run's %.12s)\n", h, man.Plan.ScenarioHash)
	}
	out := map[string]*scenario.Scenario{}
	for _, s := range sel {
		out[s.ID] = s
	}
	return out, nil
}

// labeler judges one record.
type labeler func(ctx context.Context, rec *trajectory.Record, s *scenario.Scenario) (labels.Label, error)

func runJudge(cmd *cobra.Command, dir string, f judgeFlags) error {
	if f.disclosure != "" || f.writeLabels != "" {
		return runDisclosure(cmd, dir, f)
	}
	if f.judge == "" {
		return fmt.Errorf("give --judge rule|openai:MODEL, or --disclosure openai:MODEL")
	}
	man, err := store.ReadManifest(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s is not a run folder (no manifest.json)", dir)
		}
		return err
	}
	// The labels go into the run folder: one writer at a time (a rollout
	// still writing it, or a second judge, is refused).
	lock, err := store.LockDir(dir, commandLine())
	if err != nil {
		return err
	}
	defer lock.Release()
	name := f.name
	if name == "" {
		name = labels.NameFor(f.judge)
	}
	if err := labels.ValidName(name); err != nil {
		return err
	}
	if labels.Exists(dir, name) && !f.force {
		return fmt.Errorf("labeling %q already exists in %s; use --name for another, or --force to replace it (a backup is kept)", name, dir)
	}
	if f.concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1")
	}
	scs, err := runScenarioSet(dir, man, f.scenarios, cmd.ErrOrStderr())
	if err != nil {
		return err
	}

	lm := labels.Manifest{Name: name, Judge: f.judge, Run: man.Run, ScenarioHash: man.Plan.ScenarioHash, Version: Version, Command: commandLineIn(filepath.Join(dir, labels.Dir))}
	sum := judgeSummary{Labeling: name, Path: labels.Path(dir, name), Judge: f.judge}
	var label labeler
	var llm *judge.LLM
	switch {
	case f.judge == "rule":
		lm.Kind = judge.Rule{}.Kind()
		specs := map[string]*env.Spec{}
		for id, s := range scs {
			sp, err := env.Compile(s)
			if err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
			specs[id] = sp
		}
		label = func(_ context.Context, rec *trajectory.Record, s *scenario.Scenario) (labels.Label, error) {
			j := judge.Rule{}.Judge(specs[s.ID], judge.StripRecord(rec))
			return labels.Label{Success: j.Score >= 1, Judge: j}, nil
		}
	case strings.HasPrefix(f.judge, "openai:") && len(f.judge) > len("openai:"):
		model := strings.TrimPrefix(f.judge, "openai:")
		if f.endpoint.baseURL == "" {
			return fmt.Errorf("--judge %s needs --base-url (for example http://localhost:8000/v1)", f.judge)
		}
		f.endpoint.omitTemperature = f.temperature.omit
		cfg, err := f.endpoint.clientConfig(model, f.concurrency)
		if err != nil {
			return err
		}
		client, err := openai.New(cfg)
		if err != nil {
			return err
		}
		if err := preflight(cmd.Context(), cmd.ErrOrStderr(), client, f.endpoint, false); err != nil {
			return err
		}
		llm = &judge.LLM{Policy: client, Model: model, MaxTokens: f.maxTokens, Endpoint: secret.URL(f.endpoint.baseURL),
			Temperature: f.temperature.value, OmitTemperature: f.temperature.omit}
		if !f.noCache {
			cdir := f.cache
			if cdir == "" {
				cdir = filepath.Join(dir, ".judge-cache")
			}
			if llm.Cache, err = judge.NewCache(cdir); err != nil {
				return err
			}
			sum.Cache = cdir
		}
		lm.Kind, lm.Model, lm.BaseURL, lm.APIKeyEnv, lm.PromptVersion = llm.Kind(), model, secret.URL(f.endpoint.baseURL), f.endpoint.apiKeyEnv, judge.PromptVersion
		label = func(ctx context.Context, rec *trajectory.Record, s *scenario.Scenario) (labels.Label, error) {
			v, err := llm.Judge(ctx, s, judge.LLMView(rec))
			if err != nil {
				return labels.Label{Judge: trajectory.Judgement{Kind: llm.Kind()}}, err
			}
			return labels.Label{Success: v.Success, Judge: llm.Judgement(v)}, nil
		}
	default:
		return fmt.Errorf("invalid --judge %q: want rule or openai:MODEL", f.judge)
	}
	sum.Kind = lm.Kind

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ls, counts, err := labelRun(ctx, dir, scs, label, f.concurrency)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return &exitError{code: 130, msg: "antidrift: interrupted; no labeling written (verdicts so far are cached)"}
		}
		return err
	}
	sum.Records, sum.Unparseable, sum.EndpointErr = len(ls), counts.unparseable, counts.endpoint
	for _, l := range ls {
		if l.Success {
			sum.Successes++
		}
	}
	if judged := sum.Records - sum.Unparseable - sum.EndpointErr; judged > 0 {
		sum.TSR = float64(sum.Successes) / float64(judged)
	}
	if llm != nil {
		st := llm.Stats()
		sum.Requests, sum.CacheHits, sum.Corrections = st.Requests, st.CacheHits, st.Corrections
	}
	lm.Created = time.Now().UTC().Format(time.RFC3339)
	lm.Records, lm.Successes, lm.Errors = sum.Records, sum.Successes, sum.Unparseable+sum.EndpointErr
	if sum.Replaced, err = labels.Write(dir, lm, ls, f.force); err != nil {
		return err
	}
	if f.asJSON {
		if err := writeJSON(cmd.OutOrStdout(), sum); err != nil {
			return err
		}
	} else {
		sum.print(cmd.OutOrStdout())
	}
	if sum.EndpointErr > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("antidrift: %d trajectories got no verdict because the endpoint failed (their labels hold the error); rerun with --force to retry them, cached verdicts are reused", sum.EndpointErr)}
	}
	return nil
}

type judgeCounts struct{ unparseable, endpoint int }

// labelRun judges every record of a run with bounded concurrency and
// returns the labels in record order. A fatal endpoint error (bad key,
// exhausted quota, unknown model) or an interruption stops it with an
// error; other failures are recorded in the labels.
func labelRun(ctx context.Context, dir string, scs map[string]*scenario.Scenario, label labeler, concurrency int) ([]labels.Label, judgeCounts, error) {
	bar := newJudgeProgress(dir)
	defer bar.finish()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type job struct {
		i   int
		rec trajectory.Record
		s   *scenario.Scenario
	}
	jobs := make(chan job)
	var (
		mu     sync.Mutex
		out    []labels.Label
		counts judgeCounts
		wg     sync.WaitGroup
	)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range jobs {
				l, err := label(ctx, &jb.rec, jb.s)
				l.TrajID, l.ScenarioID, l.RecordStart = jb.rec.TrajID, jb.rec.ScenarioID, jb.rec.Timings.Start
				if err != nil {
					if errors.Is(err, policy.ErrFatal) || ctx.Err() != nil {
						cancel(err)
						continue
					}
					l.Success, l.Error = false, err.Error()
				}
				mu.Lock()
				switch {
				case err == nil:
				case errors.Is(err, judge.ErrUnparseable):
					counts.unparseable++
				default:
					counts.endpoint++
				}
				out[jb.i] = l
				mu.Unlock()
				bar.add()
			}
		}()
	}
	it := store.Records(dir)
	var ferr error
	i := 0
feed:
	for it.Next() {
		rec := *it.At()
		s := scs[rec.ScenarioID]
		if s == nil {
			ferr = fmt.Errorf("%s: record %s names scenario %s, which the run's manifest does not list", dir, rec.TrajID, rec.ScenarioID)
			break
		}
		mu.Lock()
		out = append(out, labels.Label{})
		mu.Unlock()
		select {
		case jobs <- job{i: i, rec: rec, s: s}:
		case <-ctx.Done():
			break feed
		}
		i++
	}
	close(jobs)
	wg.Wait()
	it.Close()
	if ferr == nil {
		ferr = it.Err()
	}
	if cause := context.Cause(ctx); cause != nil {
		return nil, counts, cause
	}
	if ferr != nil {
		return nil, counts, ferr
	}
	return out, counts, nil
}

func (s judgeSummary) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "labeling\t%s (%s)\n", s.Labeling, s.Path)
	fmt.Fprintf(tw, "judge\t%s\n", s.Kind)
	fmt.Fprintf(tw, "records\t%d\n", s.Records)
	fmt.Fprintf(tw, "success\t%d (TSR %.3f over the records with a verdict)\n", s.Successes, s.TSR)
	fmt.Fprintf(tw, "no verdict\t%d unparseable, %d endpoint errors\n", s.Unparseable, s.EndpointErr)
	if s.Kind != "rule" {
		fmt.Fprintf(tw, "requests\t%d sent (%d corrective retries), %d verdicts from the cache\n", s.Requests, s.Corrections, s.CacheHits)
	}
	if s.Cache != "" {
		fmt.Fprintf(tw, "cache\t%s\n", s.Cache)
	}
	if s.Replaced != "" {
		fmt.Fprintf(tw, "replaced\tthe previous labeling, kept as %s\n", s.Replaced)
	}
	tw.Flush()
}

// newJudgeProgress is the judging bar: records judged of the run's.
func newJudgeProgress(dir string) *progress {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return &progress{}
	}
	total := 0
	it := store.Records(dir)
	for it.Next() {
		total++
	}
	it.Close()
	return &progress{bar: newBar(total, 0, "", "judging")}
}
