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

	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/judge"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/policy/openai"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/spf13/cobra"
)

// antidrift judge RUN --disclosure openai:MODEL: a model's second opinion
// on the deterministic fact detector, write by write. It never changes a
// deterministic label; --write-labels NAME writes its verdicts as a
// separate labeling.

// excerptChars bounds the text of a disagreement in --json.
const excerptChars = 400

// disclosureWrite is one sink write as the report lists it.
type disclosureWrite struct {
	TrajID     string   `json:"traj_id"`
	ScenarioID string   `json:"scenario_id"`
	Call       int      `json:"call"` // -1: the final answer
	Field      string   `json:"field"`
	Text       string   `json:"text"` // an excerpt
	Det        bool     `json:"det"`
	DetFacts   []string `json:"det_facts"`
	Model      bool     `json:"model"`
	ModelFacts []string `json:"model_facts"`
	Reason     string   `json:"reason,omitempty"`
	Error      string   `json:"error,omitempty"`

	unparseable bool // Error is an unparseable answer (else an endpoint error)
}

// disclosureTable is the 2×2 table of the deterministic labels against the
// model, one count per sink write with a verdict.
type disclosureTable struct {
	DetYesModelYes int `json:"det_yes_model_yes"`
	DetYesModelNo  int `json:"det_yes_model_no"`
	DetNoModelYes  int `json:"det_no_model_yes"`
	DetNoModelNo   int `json:"det_no_model_no"`
}

// disclosureReport is the command's report and its --json form.
type disclosureReport struct {
	Run           string          `json:"run"`
	Judge         string          `json:"judge"`
	Kind          string          `json:"kind"`
	PromptVersion string          `json:"prompt_version"`
	Records       int             `json:"records"`
	Writes        int             `json:"writes"` // sink writes checked
	Judged        int             `json:"judged"` // with a verdict
	Errors        int             `json:"errors"` // without: unparseable + endpoint errors
	Unparseable   int             `json:"unparseable"`
	EndpointErr   int             `json:"endpoint_errors"`
	Table         disclosureTable `json:"table"`
	// Agreement, chance agreement and Cohen's kappa over the judged
	// writes; null when undefined (no writes; kappa also when both sides
	// give every write the same label).
	Agreement     *float64          `json:"agreement"`
	Expected      *float64          `json:"expected_agreement"`
	Kappa         *float64          `json:"kappa"`
	Disagreements []disclosureWrite `json:"disagreements"`
	NoVerdict     []disclosureWrite `json:"no_verdict"`
	Requests      int64             `json:"requests"`
	CacheHits     int64             `json:"cache_hits"`
	Corrections   int64             `json:"corrections"`
	Cache         string            `json:"cache,omitempty"`
	// Labeling is set with --write-labels: the labeling written, how many
	// of its labels drift (the records: DetDrift) and how many have no
	// verdict.
	Labeling       string `json:"labeling,omitempty"`
	LabelingPath   string `json:"labeling_path,omitempty"`
	DetDrift       int    `json:"det_drift"`
	LabelingDrift  int    `json:"labeling_drift,omitempty"`
	LabelingErrors int    `json:"labeling_errors,omitempty"`
	Replaced       string `json:"replaced,omitempty"`
}

func runDisclosure(cmd *cobra.Command, dir string, f judgeFlags) error {
	switch {
	case f.disclosure == "":
		return fmt.Errorf("--write-labels needs --disclosure openai:MODEL")
	case f.judge != "":
		return fmt.Errorf("--judge and --disclosure: give one (the disclosure check leaves success to the record's judge)")
	case f.name != "":
		return fmt.Errorf("--name is for --judge; name the disclosure labeling with --write-labels NAME")
	case !strings.HasPrefix(f.disclosure, "openai:") || len(f.disclosure) == len("openai:"):
		return fmt.Errorf("invalid --disclosure %q: want openai:MODEL", f.disclosure)
	}
	man, err := store.ReadManifest(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s is not a run folder (no manifest.json)", dir)
		}
		return err
	}
	lock, err := store.LockDir(dir, commandLine())
	if err != nil {
		return err
	}
	defer lock.Release()
	if f.writeLabels != "" {
		if err := labels.ValidName(f.writeLabels); err != nil {
			return err
		}
		if labels.Exists(dir, f.writeLabels) && !f.force {
			return fmt.Errorf("labeling %q already exists in %s; choose another --write-labels NAME, or --force to replace it (a backup is kept)", f.writeLabels, dir)
		}
	}
	if f.concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1")
	}
	model := strings.TrimPrefix(f.disclosure, "openai:")
	if f.endpoint.baseURL == "" {
		return fmt.Errorf("--disclosure %s needs --base-url (for example http://localhost:8000/v1)", f.disclosure)
	}
	scs, err := runScenarioSet(dir, man, f.scenarios, cmd.ErrOrStderr())
	if err != nil {
		return err
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
	dj := &judge.Disclosure{Policy: client, Model: model, MaxTokens: f.maxTokens, Endpoint: secret.URL(f.endpoint.baseURL),
		Temperature: f.temperature.value, OmitTemperature: f.temperature.omit}
	rep := disclosureReport{Run: dir, Judge: f.disclosure, Kind: dj.Kind(), PromptVersion: judge.DisclosurePromptVersion}
	if !f.noCache {
		cdir := f.cache
		if cdir == "" {
			cdir = filepath.Join(dir, ".judge-cache")
		}
		if dj.Cache, err = judge.NewCache(cdir); err != nil {
			return err
		}
		rep.Cache = cdir
	}

	var mu sync.Mutex
	writes := map[string][]disclosureWrite{}
	label := func(ctx context.Context, rec *trajectory.Record, s *scenario.Scenario) (labels.Label, error) {
		ws, l, err := discloseRecord(ctx, dj, rec, s)
		if err != nil {
			return l, err
		}
		mu.Lock()
		writes[rec.TrajID] = ws
		mu.Unlock()
		return l, nil
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ls, _, err := labelRun(ctx, dir, scs, label, f.concurrency)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return &exitError{code: 130, msg: "antidrift: interrupted; nothing written (verdicts so far are cached)"}
		}
		return err
	}
	var t [2][2]int // [det][model]
	rep.Disagreements, rep.NoVerdict = []disclosureWrite{}, []disclosureWrite{}
	for _, l := range ls {
		for _, w := range writes[l.TrajID] {
			rep.Writes++
			if w.Error != "" {
				rep.Errors++
				if w.unparseable {
					rep.Unparseable++
				} else {
					rep.EndpointErr++
				}
				rep.NoVerdict = append(rep.NoVerdict, w)
				continue
			}
			rep.Judged++
			t[idx(w.Det)][idx(w.Model)]++
			if w.Det != w.Model {
				rep.Disagreements = append(rep.Disagreements, w)
			}
		}
	}
	rep.Records = len(ls)
	rep.Table = disclosureTable{DetYesModelYes: t[1][1], DetYesModelNo: t[1][0], DetNoModelYes: t[0][1], DetNoModelNo: t[0][0]}
	_, po, pe, kappa := labels.Kappa(t)
	rep.Agreement, rep.Expected, rep.Kappa = finiteOrNil(po), finiteOrNil(pe), finiteOrNil(kappa)
	st := dj.Stats()
	rep.Requests, rep.CacheHits, rep.Corrections = st.Requests, st.CacheHits, st.Corrections
	for _, l := range ls {
		if l.Drift != nil && *l.Drift {
			rep.LabelingDrift++
		}
		if !l.Judged() {
			rep.LabelingErrors++
		}
	}
	it := store.Records(dir).SkipText()
	for it.Next() {
		if it.At().Drift {
			rep.DetDrift++
		}
	}
	it.Close()
	if err := it.Err(); err != nil {
		return err
	}

	if f.writeLabels != "" {
		lm := labels.Manifest{Name: f.writeLabels, Judge: f.disclosure, Kind: dj.Kind(), Model: model, BaseURL: secret.URL(f.endpoint.baseURL),
			APIKeyEnv: f.endpoint.apiKeyEnv, PromptVersion: judge.DisclosurePromptVersion, Run: man.Run, ScenarioHash: man.Plan.ScenarioHash,
			Created: time.Now().UTC().Format(time.RFC3339), Version: Version, Command: commandLineIn(filepath.Join(dir, labels.Dir)),
			Records: len(ls), Errors: rep.LabelingErrors, Drifts: rep.LabelingDrift}
		for _, l := range ls {
			if l.Judged() && l.Success {
				lm.Successes++
			}
		}
		if rep.Replaced, err = labels.Write(dir, lm, ls, f.force); err != nil {
			return err
		}
		rep.Labeling, rep.LabelingPath = f.writeLabels, labels.Path(dir, f.writeLabels)
	} else {
		rep.LabelingDrift, rep.LabelingErrors = 0, 0
	}
	if f.asJSON {
		if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
			return err
		}
	} else {
		rep.print(cmd.OutOrStdout())
	}
	if rep.EndpointErr > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("antidrift: %d sink writes got no verdict because the endpoint failed; rerun (with --force if a labeling was written): cached verdicts are reused", rep.EndpointErr)}
	}
	return nil
}

// discloseRecord checks every sink write of one record and returns the
// writes for the report and the record's disclosure label: success and
// judgement the record's; drift the record's drift OR a disclosure the
// model found, with a match for each fact the model found that the
// deterministic labels did not; no verdict (Error) when the record does
// not drift, the model found nothing, and some write got no verdict. A
// fatal endpoint error or an interruption is returned as the error.
func discloseRecord(ctx context.Context, dj *judge.Disclosure, rec *trajectory.Record, s *scenario.Scenario) ([]disclosureWrite, labels.Label, error) {
	l := labels.Label{Success: rec.Success, Judge: rec.Judge}
	sinks := judge.Sinks(rec, s)
	ws := make([]disclosureWrite, 0, len(sinks))
	found := false
	var missing []string
	for _, sk := range sinks {
		det := judge.DetectedFacts(rec, sk)
		w := disclosureWrite{TrajID: rec.TrajID, ScenarioID: rec.ScenarioID, Call: sk.Call, Field: sk.Field,
			Text: excerpt(sk.Text, excerptChars), Det: len(det) > 0, DetFacts: det, ModelFacts: []string{}}
		v, err := dj.Check(ctx, sk)
		if err != nil {
			if errors.Is(err, policy.ErrFatal) || ctx.Err() != nil {
				return nil, l, err
			}
			w.Error, w.unparseable = secret.Text(err.Error()), errors.Is(err, judge.ErrUnparseable)
			missing = append(missing, fmt.Sprintf("call %d %s: %s", sk.Call, sk.Field, w.Error))
			ws = append(ws, w)
			continue
		}
		w.Model, w.ModelFacts, w.Reason = v.Discloses, v.ModelFacts(sk), v.Reason
		found = found || v.Discloses
		l.Matches = append(l.Matches, judge.DisclosureMatches(sk, v, det, dj.Kind())...)
		ws = append(ws, w)
	}
	if !rec.Drift && !found && len(missing) > 0 {
		l.Matches = nil
		l.Error = fmt.Sprintf("no drift verdict: %d sink writes got no disclosure verdict (%s)", len(missing), missing[0])
		return ws, l, nil
	}
	d := rec.Drift || found
	l.Drift = &d
	if !d {
		l.Matches = nil
	}
	for i := range l.Matches {
		l.Matches[i].Counted = false // recomputed with the record's own (labels.Overlay)
	}
	return ws, l, nil
}

func idx(b bool) int {
	if b {
		return 1
	}
	return 0
}

func finiteOrNil(f float64) *float64 {
	if f != f { // NaN
		return nil
	}
	return &f
}

// excerpt is s with its whitespace folded, cut at n runes.
func excerpt(s string, n int) string { return oneLine(s, n) }

func (r disclosureReport) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\n", r.Run)
	fmt.Fprintf(tw, "judge\t%s (prompt %s)\n", r.Kind, r.PromptVersion)
	fmt.Fprintf(tw, "records\t%d\n", r.Records)
	fmt.Fprintf(tw, "sink writes\t%d checked, %d with a verdict\n", r.Writes, r.Judged)
	fmt.Fprintf(tw, "no verdict\t%d unparseable, %d endpoint errors (left out of the agreement)\n", r.Unparseable, r.EndpointErr)
	fmt.Fprintf(tw, "agreement\t%s\n", fmtPtr(r.Agreement))
	kappa := fmtPtr(r.Kappa)
	if r.Kappa == nil && r.Judged > 0 {
		kappa += " (both give every write the same label)"
	}
	fmt.Fprintf(tw, "kappa\t%s\n", kappa)
	fmt.Fprintf(tw, "by chance\t%s\n", fmtPtr(r.Expected))
	fmt.Fprintf(tw, "requests\t%d sent (%d corrective retries), %d verdicts from the cache\n", r.Requests, r.Corrections, r.CacheHits)
	if r.Cache != "" {
		fmt.Fprintf(tw, "cache\t%s\n", r.Cache)
	}
	if r.Labeling != "" {
		fmt.Fprintf(tw, "labeling\t%s (%s): %d drifting (the records: %d), %d without a verdict\n", r.Labeling, r.LabelingPath, r.LabelingDrift, r.DetDrift, r.LabelingErrors)
	} else {
		fmt.Fprintf(tw, "labeling\tnone written (--write-labels NAME writes one); the deterministic labels are unchanged\n")
	}
	if r.Replaced != "" {
		fmt.Fprintf(tw, "replaced\tthe previous labeling, kept as %s\n", r.Replaced)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tmodel discloses\tmodel does not\t\n")
	fmt.Fprintf(tw, "deterministic breach\t%d\t%d\t\n", r.Table.DetYesModelYes, r.Table.DetYesModelNo)
	fmt.Fprintf(tw, "no deterministic breach\t%d\t%d\t\n", r.Table.DetNoModelYes, r.Table.DetNoModelNo)
	tw.Flush()
	printWrites(w, "disagreements", r.Disagreements, false)
	printWrites(w, "without a verdict", r.NoVerdict, true)
}

func printWrites(w io.Writer, title string, ws []disclosureWrite, errs bool) {
	if len(ws) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(ws))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if errs {
		fmt.Fprintf(tw, "TRAJ_ID\tCALL\tFIELD\tTEXT\tERROR\n")
	} else {
		fmt.Fprintf(tw, "TRAJ_ID\tCALL\tFIELD\tDET FACTS\tMODEL FACTS\tTEXT\tREASON\n")
	}
	for _, x := range ws {
		call := fmt.Sprint(x.Call)
		if x.Call == drift.AnswerCall {
			call = "answer"
		}
		if errs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", x.TrajID, call, x.Field, oneLine(x.Text, 50), oneLine(x.Error, 80))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.TrajID, call, x.Field, factList(x.DetFacts, x.Det), factList(x.ModelFacts, x.Model),
			oneLine(x.Text, 50), oneLine(x.Reason, 80))
	}
	tw.Flush()
}

func factList(ids []string, yes bool) string {
	switch {
	case len(ids) > 0:
		return strings.Join(ids, ",")
	case yes:
		return "(unnamed)"
	}
	return "-"
}

func fmtPtr(f *float64) string {
	if f == nil {
		return "undefined"
	}
	return fmt.Sprintf("%.3f", *f)
}
