package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rewards/metrics"
	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/secret"
	"github.com/spf13/cobra"
)

// checkpointSpec is one entry of checkpoints.json.
type checkpointSpec struct {
	Name     string `json:"name"`
	Step     int    `json:"step"`
	Endpoint string `json:"endpoint"`
	Model    string `json:"model,omitempty"`
}

// policy is the rollout --policy of a checkpoint.
func (c checkpointSpec) policy() string {
	if strings.HasPrefix(c.Endpoint, "sim:") {
		return c.Endpoint
	}
	return "openai:" + c.Model
}

var checkpointName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// readCheckpoints reads and checks checkpoints.json: an array of {name,
// step, endpoint, model}. Every error names the file and the JSON path, or
// the line and column of a syntax error.
func readCheckpoints(path string) ([]checkpointSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCheckpoints(path, data)
}

func parseCheckpoints(path string, data []byte) ([]checkpointSpec, error) {
	if p := scenario.TextProblem(path, data); p != nil { // a BOM, bytes not UTF-8
		return nil, scenario.Problems{*p}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, ckptSyntaxError(path, data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: unexpected data after the top-level array", path)
	}
	if p := scenario.DuplicateKeyProblem(path, data); p != nil {
		return nil, scenario.Problems{*p}
	}
	arr, ok := doc.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: want an array of {name, step, endpoint, model}, got %s", path, ckptJSONKind(doc))
	}
	if len(arr) == 0 {
		return nil, fmt.Errorf("%s: no checkpoint listed", path)
	}
	var out []checkpointSpec
	names := map[string]int{} // lowercased: one folder on case-insensitive file systems
	steps := map[int64]int{}
	for i, el := range arr {
		at := func(field string) string {
			if field == "" {
				return fmt.Sprintf("%s: [%d]", path, i)
			}
			return fmt.Sprintf("%s: [%d].%s", path, i, field)
		}
		obj, ok := el.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an object {name, step, endpoint, model}, got %s", at(""), ckptJSONKind(el))
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch k {
			case "name", "step", "endpoint", "model":
			default:
				return nil, fmt.Errorf("%s: unknown field (known: name, step, endpoint, model)", at(k))
			}
		}
		str := func(field string, required bool) (string, error) {
			v, ok := obj[field]
			if !ok {
				if required {
					return "", fmt.Errorf("%s: missing", at(field))
				}
				return "", nil
			}
			s, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("%s: want a string, got %s", at(field), ckptJSONKind(v))
			}
			return s, nil
		}
		var c checkpointSpec
		var err error
		if c.Name, err = str("name", true); err != nil {
			return nil, err
		}
		if !checkpointName.MatchString(c.Name) {
			return nil, fmt.Errorf("%s: %q is not a valid name (letters, digits, '.', '_' and '-', starting with a letter or digit: it names the run folder)", at("name"), c.Name)
		}
		if j, dup := names[strings.ToLower(c.Name)]; dup {
			return nil, fmt.Errorf("%s: %q already names [%d] (names are compared without case: each names a run folder, one folder on a case-insensitive file system)", at("name"), c.Name, j)
		}
		names[strings.ToLower(c.Name)] = i
		sv, ok := obj["step"]
		if !ok {
			return nil, fmt.Errorf("%s: missing", at("step"))
		}
		n, ok := sv.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s: want an integer, got %s", at("step"), ckptJSONKind(sv))
		}
		step, err := n.Int64()
		if err != nil || step < 0 {
			return nil, fmt.Errorf("%s: want a non-negative integer, got %s", at("step"), n.String())
		}
		if j, dup := steps[step]; dup {
			return nil, fmt.Errorf("%s: %d is also the step of [%d]; each checkpoint has its own training step", at("step"), step, j)
		}
		steps[step] = i
		c.Step = int(step)
		if c.Endpoint, err = str("endpoint", true); err != nil {
			return nil, err
		}
		if c.Model, err = str("model", false); err != nil {
			return nil, err
		}
		if prof, isSim := strings.CutPrefix(c.Endpoint, "sim:"); isSim {
			if _, err := sim.Lookup(prof); err != nil {
				return nil, fmt.Errorf("%s: %v", at("endpoint"), err)
			}
			if c.Model != "" && c.Model != prof && c.Model != c.Endpoint {
				return nil, fmt.Errorf("%s: a simulated endpoint is its own model; leave model out or set it to %q", at("model"), prof)
			}
		} else {
			u, err := url.Parse(c.Endpoint)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("%s: %q is neither sim:NAME nor an http(s) base URL such as http://localhost:8000/v1", at("endpoint"), secret.URL(c.Endpoint))
			}
			if c.Model == "" {
				return nil, fmt.Errorf("%s: missing: an http endpoint needs the model name to request (with vLLM, the LoRA adapter's name)", at("model"))
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func ckptJSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonSyntaxError names the line and column of a decoding error.
func ckptSyntaxError(path string, data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	}
	if off < 0 {
		return fmt.Errorf("%s: %w", path, err)
	}
	line, col := 1, 1
	for _, b := range data[:min(int(off), len(data))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%s:%d:%d: %v", path, line, col, err)
}

type rescoreFlags struct {
	checkpoints string
	out         string
	scenarios   []string
	limit       int
	framework   string
	rollouts    int
	concurrency int
	seed        int64
	force       bool
	maxSteps    int
	maxTokens   int
	turnTokens  int
	temperature temperatureFlag
	episodeTime time.Duration
	endpoint    endpointFlags
	title       string
	asJSON      bool
	score       scoreFlags
	// selectTasks and libraries add least-privilege selection runs per
	// checkpoint (cmd_rescore_select.go).
	selectTasks []string
	libraries   []string
}

func init() { register(newRescoreCmd) }

func newRescoreCmd() *cobra.Command {
	var f rescoreFlags
	cmd := &cobra.Command{
		Use:   "rescore --checkpoints checkpoints.json --out DIR",
		Short: "Roll out every checkpoint on the same scenarios and seeds, then write the Pareto report",
		Long: `Roll out each checkpoint of checkpoints.json on the same scenarios with the same
seeds into DIR/runs/NAME, then score them and write the Pareto report into
DIR/report (see pareto). checkpoints.json is an array of

  {"name": "step-400", "step": 400, "endpoint": "http://localhost:8000/v1", "model": "step-400"}

where endpoint is an OpenAI-compatible base URL (model required: with vLLM
serving LoRA adapters, the adapter's name) or sim:NAME for a simulated
checkpoint (model optional). Rerunning the same command resumes: finished
episodes are kept, missing ones are rolled out. The report is written once
every run is complete; exit status 2 means some episodes hit infrastructure
errors (rerun to retry them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRescore(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.checkpoints, "checkpoints", "", "checkpoints.json: [{name, step, endpoint, model}]")
	fl.StringVar(&f.out, "out", "", "output folder: runs/NAME per checkpoint, report/")
	fl.StringSliceVar(&f.scenarios, "scenarios", []string{"builtin"}, "scenario files or folders, or builtin")
	fl.IntVar(&f.limit, "limit", 0, "use only the first N scenarios (by id); 0: all")
	fl.StringVar(&f.framework, "framework", engine.FrameworkNormal, "agent framework: "+strings.Join(engine.Frameworks, ", "))
	fl.IntVar(&f.rollouts, "rollouts", 8, "rollouts per scenario and checkpoint")
	fl.IntVar(&f.concurrency, "concurrency", 32, "episodes in flight")
	fl.Int64Var(&f.seed, "seed", 1, "run seed, the same for every checkpoint")
	fl.BoolVar(&f.force, "force", false, "start a checkpoint over when its folder holds another plan (old trajectories are moved aside)")
	fl.IntVar(&f.maxSteps, "max-steps", 20, "assistant turns per episode")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "total tokens per episode; 0: no limit")
	fl.IntVar(&f.turnTokens, "max-turn-tokens", 0, "max_tokens sent with each request; 0: not sent")
	fl.Var(&f.temperature, "temperature", "sampling temperature (0 is sent as 0), or omit to leave it out")
	addEndpointExtras(fl, &f.endpoint)
	fl.DurationVar(&f.episodeTime, "episode-timeout", 0, "wall time per episode; 0: no limit")
	fl.StringVar(&f.endpoint.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key")
	fl.DurationVar(&f.endpoint.requestTimeout, "request-timeout", 5*time.Minute, "timeout of one HTTP request")
	fl.IntVar(&f.endpoint.maxRetries, "max-retries", 5, "retries of a request on 429, 5xx and timeouts")
	fl.StringVar(&f.title, "title", "Checkpoint Pareto report", "report title")
	fl.BoolVar(&f.asJSON, "json", false, "print report.json on stdout")
	fl.StringSliceVar(&f.selectTasks, "select-task", nil, "also run these selection tasks per checkpoint (skill, tools, pipeline) into DIR/select/NAME and add the skills section to the report")
	fl.StringSliceVar(&f.libraries, "library", []string{"builtin:email"}, "skill libraries of --select-task: builtin:NAME or files")
	f.score.register(cmd, "bootstrap-seed", false)
	_ = cmd.MarkFlagRequired("checkpoints")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runRescore(cmd *cobra.Command, f rescoreFlags) error {
	cks, err := readCheckpoints(f.checkpoints)
	if err != nil {
		return err
	}
	claim, err := claimOut("rescore", f.out, nil, outRule{resumable: []string{"runs", "report", "checkpoints.json"}})
	if err != nil {
		return err
	}
	defer claim.release()
	opts, err := f.score.options(metrics.DefaultKeys)
	if err != nil {
		return err
	}
	sort.SliceStable(cks, func(i, j int) bool { return cks[i].Step < cks[j].Step })
	stderr := cmd.ErrOrStderr()
	var dirs, incomplete []string
	for _, c := range cks {
		dir := filepath.Join(f.out, "runs", c.Name)
		dirs = append(dirs, dir)
		rf := rolloutFlags{
			scenarios: f.scenarios, limit: f.limit, policy: c.policy(), framework: f.framework,
			rollouts: f.rollouts, concurrency: f.concurrency, seed: f.seed, out: dir, shard: "0/1",
			checkpoint: c.Name, step: c.Step, force: f.force, asJSON: true, maxSteps: f.maxSteps, maxTokens: f.maxTokens,
			turnTokens: f.turnTokens, temperature: f.temperature, episodeTime: f.episodeTime, endpoint: f.endpoint,
		}
		if !strings.HasPrefix(c.Endpoint, "sim:") {
			rf.endpoint.baseURL = c.Endpoint
		}
		var summary bytes.Buffer
		sub := &cobra.Command{}
		sub.SetOut(&summary)
		sub.SetErr(stderr)
		sub.SetContext(cmd.Context())
		fmt.Fprintf(stderr, "rescore: %s (step %d, %s) -> %s\n", c.Name, c.Step, secret.URL(c.Endpoint), dir)
		err := runRollout(sub, rf)
		var ee *exitError
		if errors.As(err, &ee) && ee.code == 2 {
			fmt.Fprintln(stderr, ee.msg)
			incomplete = append(incomplete, c.Name)
			continue
		}
		if err != nil {
			if errors.As(err, &ee) {
				return err
			}
			return fmt.Errorf("rescore: checkpoint %s (%s): %w", c.Name, f.checkpoints, err)
		}
		var rs runSummary
		if json.Unmarshal(summary.Bytes(), &rs) == nil {
			fmt.Fprintf(stderr, "rescore: %s: %d records (%d already done, %d run now); TSR %.3f DR %.3f CSR %.3f\n",
				c.Name, rs.Records, rs.Skipped, rs.Ran, rs.TSR, rs.DR, rs.CSR)
		}
	}
	selectDirs, selIncomplete, err := rescoreSelect(cmd, f, cks)
	if err != nil {
		return err
	}
	incomplete = append(incomplete, selIncomplete...)
	if err := copyCheckpoints(f.checkpoints, filepath.Join(f.out, "checkpoints.json")); err != nil {
		return err
	}
	if len(incomplete) > 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("antidrift: episodes of %s hit infrastructure errors; rerun the same command to retry them (the report is written once every run is complete)", strings.Join(incomplete, ", "))}
	}
	runs, err := metrics.ReadRuns(dirs)
	if err != nil {
		return err
	}
	reportDir := filepath.Join(f.out, "report")
	rep, _, err := buildReport(runs, opts, nil, stepsFromCheckpoints(f.checkpoints, cks), f.title)
	if err != nil {
		return err
	}
	if len(selectDirs) > 0 {
		// The baseline selectors answer the same queries, beside every checkpoint.
		base, _, cleanup, err := selectBaselines(cmd.Context(), selectDirs)
		if err != nil {
			return err
		}
		res, _, err := scoreSelection(append(append([]string(nil), selectDirs...), base...)...)
		cleanup()
		if err != nil {
			return err
		}
		rep.AddSkills(res)
	}
	relReportPaths(rep, reportDir, filepath.Join(f.out, "checkpoints.json")) // the copy beside the runs
	if err := rep.Write(reportDir); err != nil {
		return err
	}
	if err := claim.done(); err != nil {
		return err
	}
	return printPareto(cmd.OutOrStdout(), rep, reportDir, f.asJSON)
}

// copyCheckpoints keeps the checkpoints.json a rescore used beside its
// runs, so that pareto --checkpoints can be pointed at it later.
func copyCheckpoints(from, to string) error {
	a, errA := filepath.Abs(from)
	b, errB := filepath.Abs(to)
	if errA == nil && errB == nil && a == b {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	// Endpoints may carry credentials: the copy keeps them redacted.
	var list []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&list); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	for _, c := range list {
		if e, ok := c["endpoint"].(string); ok {
			c["endpoint"] = secret.URL(e)
		}
	}
	if data, err = json.MarshalIndent(list, "", "  "); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, append(data, '\n'), 0o644)
}
