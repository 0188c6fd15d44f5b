package main

import (
	"errors"
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/spf13/cobra"

	"github.com/antidrift/antidrift/internal/tempgate"
)

func init() { register(newRewardsCmd) }

// rewardFlags are the reward options shared by pairs and rewards.
type rewardFlags struct {
	schemes      string
	alpha        float64
	lambda       float64
	provisions   string
	provisionMax bool
	judgeScore   bool
	scenarios    []string
}

func (f *rewardFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.schemes, "scheme", "uniform", "drift-step weights, comma-separated and summed: uniform, provision, risk, privilege")
	fl.Float64Var(&f.alpha, "alpha", 1, "α: weight of the outcome term α·S·(1−D)")
	fl.Float64Var(&f.lambda, "lambda", 0.5, "λ: weight of the drift penalty λ·Σw(v)")
	fl.StringVar(&f.provisions, "provisions", "", "provision weights: a catalogue file (replaces the built-in one) or a JSON object {id: weight} (overrides its ids)")
	fl.BoolVar(&f.provisionMax, "provision-max", false, "provision scheme: the largest weight of a call's provisions instead of their sum")
	fl.BoolVar(&f.judgeScore, "judge-score", false, "S = the judge's score in [0,1] instead of the success label")
	fl.StringSliceVar(&f.scenarios, "scenarios", nil, "scenario files or folders, or builtin, for the risk and privilege schemes (default: what each run's manifest names)")
}

// config builds the reward configuration; the risk and privilege schemes
// load the scenarios the runs used.
func (f *rewardFlags) config(ix *dataset.Index) (rewards.Config, error) {
	c := rewards.Default()
	var err error
	if c.Schemes, err = rewards.ParseSchemes(f.schemes); err != nil {
		return c, err
	}
	c.Alpha, c.Lambda, c.ProvisionMax, c.JudgeScore = f.alpha, f.lambda, f.provisionMax, f.judgeScore
	catPath := ""
	if f.provisions != "" {
		if c.Weights, err = rewards.LoadWeights(f.provisions); err != nil {
			return c, err
		}
		if _, err := provisions.LoadFile(f.provisions); err == nil {
			catPath = f.provisions // a catalogue: scenarios are validated against it too
		}
	}
	if c.NeedsScenarios() {
		if c.Scenarios, err = scenariosOfRuns(ix, f.scenarios, catPath); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// settings describes the reward options for the dataset card.
func (f *rewardFlags) settings(m map[string]string) {
	m["reward"] = fmt.Sprintf("R = %g·S·(1−D) − %g·Σ w(v); schemes %s", f.alpha, f.lambda, f.schemes)
	if f.provisionMax {
		m["reward_provision_combination"] = "max"
	}
	if f.provisions != "" {
		m["reward_provisions"] = f.provisions
	}
	if f.judgeScore {
		m["reward_success"] = "judge score"
	}
}

// scenariosOfRuns loads the scenarios the runs were rolled out on: those named
// by paths, or else each run's plan.scenario_source, keeping the scenarios
// of its plan and checking the plan's scenario hash, so that tools' risk
// and privilege are those the episodes saw.
func scenariosOfRuns(ix *dataset.Index, paths []string, catPath string) (map[string]*scenario.Scenario, error) {
	return scenariosOfDirs(ix.Dirs, ix.Manifests, paths, catPath)
}

// scenariosOfDirs is scenariosOfRuns for run folders and their manifests.
func scenariosOfDirs(dirs []string, manifests []store.Manifest, paths []string, catPath string) (map[string]*scenario.Scenario, error) {
	// Each source is loaded once, for the ids every run of it planned (of
	// the built-in suite only their files are parsed); a run without
	// planned ids needs the whole source.
	sourceOf := func(m store.Manifest) []string {
		if len(paths) > 0 || m.Plan.ScenarioSource == "" {
			return paths
		}
		return strings.Split(m.Plan.ScenarioSource, ",")
	}
	idsOf := map[string][]string{}
	whole := map[string]bool{}
	for _, m := range manifests {
		key := strings.Join(sourceOf(m), ",")
		idsOf[key] = append(idsOf[key], m.Plan.ScenarioIDs...)
		whole[key] = whole[key] || len(m.Plan.ScenarioIDs) == 0
	}
	loaded := map[string][]*scenario.Scenario{}
	load := func(src []string) ([]*scenario.Scenario, error) {
		key := strings.Join(src, ",")
		if ss, ok := loaded[key]; ok {
			return ss, nil
		}
		ids := idsOf[key]
		if whole[key] {
			ids = nil
		}
		ss, err := loadScenariosOf(src, catPath, scenario.Options{}, ids)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return nil, fmt.Errorf("loading scenarios %s:\n%s", key, ee.msg)
			}
			return nil, err
		}
		loaded[key] = ss
		return ss, nil
	}
	out := map[string]*scenario.Scenario{}
	from := map[string]string{}
	for i, m := range manifests {
		src := paths
		if len(src) == 0 {
			if m.Plan.ScenarioSource == "" {
				return nil, fmt.Errorf("%s: the manifest names no scenario source; pass --scenarios", dirs[i])
			}
			src = strings.Split(m.Plan.ScenarioSource, ",")
		}
		ss, err := load(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (pass --scenarios with the scenarios the run used)", dirs[i], err)
		}
		byID := map[string]*scenario.Scenario{}
		for _, s := range ss {
			byID[s.ID] = s
		}
		var plan []*scenario.Scenario
		for _, id := range m.Plan.ScenarioIDs {
			s := byID[id]
			if s == nil {
				return nil, fmt.Errorf("%s: scenario %s of the run is not in %s; pass --scenarios with the scenarios the run used", dirs[i], id, strings.Join(src, ","))
			}
			plan = append(plan, s)
		}
		if m.Plan.ScenarioHash != "" && scenario.Hash(plan) != m.Plan.ScenarioHash {
			return nil, fmt.Errorf("%s: the scenarios in %s differ from those the run used (scenario hash %.12s…, now %.12s…); pass --scenarios with the scenarios the run used",
				dirs[i], strings.Join(src, ","), m.Plan.ScenarioHash, scenario.Hash(plan))
		}
		for _, s := range plan {
			if prev, ok := out[s.ID]; ok && prev != s && scenario.Hash([]*scenario.Scenario{prev}) != scenario.Hash([]*scenario.Scenario{s}) {
				return nil, fmt.Errorf("scenario %s differs between %s and %s: give those runs to separate commands", s.ID, from[s.ID], dirs[i])
			}
			out[s.ID], from[s.ID] = s, dirs[i]
		}
	}
	return out, nil
}

// outputDir stages a command's files in a temporary folder inside the
// output folder and moves them into place only when everything succeeded,
// so that a failure never leaves half-written output. Files of the
// command's own names that the new output does not write are removed;
// other files in the folder are left alone.
type outputDir struct {
	dir, tmp string
	owned    []string // file names this command may write
	claim    *outClaim
}

// newOutputDir claims the folder (see claimOut: not an input or run folder,
// locked, only antidrift's files in it) and makes the staging folder.
func newOutputDir(command, dir string, inputs, owned []string) (*outputDir, error) {
	claim, err := claimOut(command, dir, inputs, outRule{writes: func(n string) bool { return slices.Contains(owned, n) }})
	if err != nil {
		return nil, err
	}
	tmp, err := tempgate.MkdirTemp(dir, ".antidrift-tmp-")
	if err != nil {
		claim.release()
		return nil, err
	}
	return &outputDir{dir: dir, tmp: tmp, owned: owned, claim: claim}, nil
}

// commit moves the staged files into the output folder.
func (o *outputDir) commit() ([]string, error) {
	defer os.RemoveAll(o.tmp)
	es, err := os.ReadDir(o.tmp)
	if err != nil {
		return nil, err
	}
	var names []string // relative, slash-separated
	wrote := map[string]bool{}
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !e.IsDir() {
			names = append(names, e.Name())
			continue
		}
		sub, err := os.ReadDir(filepath.Join(o.tmp, e.Name())) // data/, arrow/, jsonl/: one level
		if err != nil {
			return nil, err
		}
		for _, s := range sub {
			if !s.IsDir() && !strings.HasPrefix(s.Name(), ".") {
				names = append(names, e.Name()+"/"+s.Name())
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		wrote[n] = true
		dst := filepath.Join(o.dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(o.tmp, filepath.FromSlash(n)), dst); err != nil {
			return nil, err
		}
	}
	for _, n := range o.owned {
		if !wrote[n] {
			if err := os.Remove(filepath.Join(o.dir, filepath.FromSlash(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	// shards of an earlier, larger export, which a data_files glob would pick up
	var bases []string
	for _, n := range o.owned {
		if strings.HasPrefix(n, "data/") && strings.HasSuffix(n, ".parquet") {
			bases = append(bases, n)
		}
	}
	if err := export.RemoveStaleShards(o.dir, bases, names); err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(o.dir, filepath.FromSlash(n))
	}
	return out, o.claim.done()
}

// abort removes the staging folder and releases the claim (deferred: a
// no-op for the staging folder after commit).
func (o *outputDir) abort() {
	os.RemoveAll(o.tmp)
	o.claim.release()
}

// tableFiles are the names a table may be written under.
func tableFiles(name string) []string {
	var out []string
	for _, f := range export.AllFormats {
		out = append(out, name+"."+f) // the one-file layout of earlier versions
		if f == export.FormatJSONL {
			out = append(out, export.SplitFile(name, f, ""))
			continue
		}
		for _, sp := range export.Splits {
			out = append(out, export.SplitFile(name, f, sp))
		}
	}
	for _, sp := range export.Splits {
		out = append(out, export.SplitFile(name, export.FormatLlamaFactory, sp))
	}
	return append(out, export.LlamaFactoryInfo)
}

// exportManifest is the provenance of an export built from an index.
func exportManifest(ix *dataset.Index, out string, settings map[string]string) export.Manifest {
	m := export.Manifest{ToolkitVersion: Version, Command: commandLineIn(out), Settings: settings}
	hashes, ckpts, seeds := map[string]bool{}, map[string]bool{}, map[int64]bool{}
	for i, man := range ix.Manifests {
		m.Runs = append(m.Runs, export.ManifestRun{Path: export.RelPath(out, ix.Dirs[i]), Run: man.Run, Checkpoint: man.Plan.Checkpoint, Policy: man.Plan.Policy,
			Framework: man.Plan.Framework, Seed: man.Plan.Seed, ScenarioHash: man.Plan.ScenarioHash, Records: int64(ix.Records[i])})
		hashes[man.Plan.ScenarioHash] = true
		ckpts[man.Plan.Checkpoint] = true
		seeds[man.Plan.Seed] = true
	}
	m.ScenarioSuiteHash = strings.Join(sortedSet(hashes), ",")
	m.Checkpoints = sortedSet(ckpts)
	for s := range seeds {
		m.Seeds = append(m.Seeds, s)
	}
	sort.Slice(m.Seeds, func(i, j int) bool { return m.Seeds[i] < m.Seeds[j] })
	return m
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// simNote flags simulated runs in a dataset card.
func simNote(ix *dataset.Index) string {
	for _, m := range ix.Manifests {
		if strings.HasPrefix(m.Plan.Policy, "sim:") || strings.Contains(m.Plan.Policy, ":sim:") || strings.HasPrefix(m.Plan.Checkpoint, "sim:") {
			return " Some runs come from simulated policies (`sim:*`): scripted stand-ins for models, for testing the pipeline, not model behaviour."
		}
	}
	return ""
}

type rewardsFlags struct {
	tableFlags
	reward rewardFlags
	asJSON bool
}

func newRewardsCmd() *cobra.Command {
	var f rewardsFlags
	cmd := &cobra.Command{
		Use:   "rewards RUN... --out DIR",
		Short: "Score trajectories for RL: rewards, process rewards and GRPO advantages",
		Long: `Score every trajectory of the run folders and write the rewards table
(OUT/rewards.parquet, .arrow, .jsonl) with a dataset card (README.md,
manifest.json):

  R(τ) = α·S·(1 − D) − λ·Σ_v w(v)

S is success (1/0), D drift (1/0), v the distinct drifting calls and w(v)
the sum of the selected schemes' weights: uniform 1; provision the sum (or,
with --provision-max, the maximum) of the catalogue weights of the call's
provisions; risk low 0.25, medium 0.5, high 1; privilege (privilege −
ceiling)/4 above the scenario's privilege ceiling, else 0.

Rows are one per assistant turn by default (--completion turn: the
conversation before the turn as the prompt, the turn as the completion);
--completion rest|model-turns gives one row per trajectory.

process_rewards holds one value per assistant turn (per-turn rows: that
turn's): −λ·w(v) at the turns that drift, plus α·S·(1 − D) at the last turn;
over a trajectory they sum to the reward. advantage is group-relative as in
TRL's GRPO over the group's rollouts: group = the rollouts under one
checkpoint whose first request (messages up to the first user message and
the tools visible at step 0) was the same, group_id SCENARIO@CHECKPOINT#HASH;
A = (R − mean)/(std + 1e-4), std with Bessel's correction, 0 for a group of one.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runRewards(cmd, args, f) },
	}
	f.reward.add(cmd)
	fl := cmd.Flags()
	f.tableFlags.add(fl, "split seed (the same as for pairs)")
	f.defCompletion = dataset.CompletionTurn
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runRewards(cmd *cobra.Command, dirs []string, f rewardsFlags) error {
	formats, ratios, err := f.parse()
	if err != nil {
		return err
	}
	if err := f.partial.check(dirs, cmd.ErrOrStderr()); err != nil {
		return err
	}
	// The scenarios of the boundary_tools column (the risk and privilege
	// schemes load their own in config) are read while the runs are
	// indexed: each reads files for a few tenths of a second.
	boundary := make(chan scenariosResult, 1)
	if ss, err := rewards.ParseSchemes(f.reward.schemes); err == nil && !(rewards.Config{Schemes: ss}).NeedsScenarios() {
		go func() {
			mans, err := readManifests(dirs)
			if err != nil {
				boundary <- scenariosResult{err: err}
				return
			}
			scens, err := scenariosOfDirs(dirs, mans, f.reward.scenarios, "")
			boundary <- scenariosResult{scens, err}
		}()
	} else {
		close(boundary)
	}
	// Peak memory bounded whatever the run's size (GOMEMLIMIT wins): the
	// limit is set before the index is built, whose building is part of
	// the peak at a million records.
	defer export.LimitMemory(export.DefaultMemoryBudget)()
	ix, err := dataset.OpenIndex(dirs...)
	if err != nil {
		return err
	}
	defer ix.Close()
	export.GrowMemoryLimit(ix.Len()) // room for what grows with the rows written
	cfg, err := f.reward.config(ix)
	if err != nil {
		return err
	}
	out, err := newOutputDir("rewards", f.out, dirs, append(tableFiles(export.TableRewards), "README.md", "manifest.json"))
	if err != nil {
		return err
	}
	defer out.abort()
	wo, err := f.lengthOptions(export.Options{ToolkitVersion: Version, SplitFiles: true, RenderedMessages: true})
	if err != nil {
		return err
	}
	w, err := export.Create[dataset.RewardRow](out.tmp, export.TableRewards, formats, wo)
	if err != nil {
		return err
	}
	// the boundary_tools column: the scenarios the runs used, when found
	scens := cfg.Scenarios
	var scenErr error
	if scens == nil {
		if b, ok := <-boundary; ok {
			scens, scenErr = b.scens, b.err
		} else {
			scens, scenErr = scenariosOfRuns(ix, f.reward.scenarios, "")
		}
	}
	// Admit decides only under a length bound; without one Table need
	// not offer a large group's rows twice (once to Keep, once to write).
	var keep func(*dataset.RewardRow) (bool, error)
	if wo.MaxTokens > 0 {
		keep = w.Admit
	}
	sum, err := rewards.Table(ix, cfg, rewards.TableOptions{Ratios: ratios, Seed: f.seed, Render: f.render(), Keep: keep, Scenarios: scens}, w.Write)
	if err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	settings := map[string]string{"split": f.split, "split_seed": fmt.Sprint(f.seed)}
	f.reward.settings(settings)
	f.lengthSettings(settings)
	f.completionSettings(settings)
	card := export.Card{
		Title:       "antidrift rewards",
		Description: rewardsDescription(f.render().Completion) + simNote(ix),
		Tables:      []export.CardTable{w.CardTable(export.TableRewards)},
		Metrics:     rewardMetrics(sum),
		MetricsNote: "Computed over every trajectory of the table, per checkpoint.",
		Manifest:    exportManifest(ix, f.out, settings),
		Notes: []string{fmt.Sprintf("GRPO groups: %d (%d with one member, advantage 0; %d whose rewards are all equal, advantage 0). A group is the rollouts under one checkpoint whose first request was the same: `group_id` = SCENARIO@CHECKPOINT#HASH, HASH the first 12 hex digits of SHA-256 over exactly that request (its messages up to the first user message, as the model was sent them, and the tools visible at step 0), so nothing that happened later in an episode can split a group. Advantages are computed over the rollouts of this file: rows left out (over `--max-tokens`, or with unparsed tool-call arguments) are removed first and a rollout stays while one of its rows does, so `advantage` equals (R - mean) / (std + 1e-4), sample std, over each `group_id`'s distinct `traj_id`s here (with one row per rollout, over its rows).",
			sum.Groups, sum.SingletonGroup, sum.ZeroStdGroups)},
	}
	if sum.Dropped > 0 {
		card.Notes = append(card.Notes, fmt.Sprintf("`--max-tokens`: %d rows dropped before the advantages were computed; %d groups lost every row.", sum.Dropped, sum.GroupsDropped))
	}
	if scenErr != nil {
		card.Notes = append(card.Notes, "`boundary_tools` is empty: the scenarios the runs used were not found; pass --scenarios to fill it.")
		fmt.Fprintf(cmd.ErrOrStderr(), "antidrift: boundary_tools left empty: %v\n", scenErr)
	}
	if sum.RawArguments > 0 {
		card.Notes = append(card.Notes, fmt.Sprintf("Left out: %d trajectories with a tool call whose arguments never parsed as a JSON object.", sum.RawArguments))
	}
	if sum.NoCompletion > 0 {
		card.Notes = append(card.Notes, fmt.Sprintf("Left out: %d trajectories with no completion (nothing after the prompt).", sum.NoCompletion))
	}
	if sum.SplitPrompts > 0 {
		card.Notes = append(card.Notes, fmt.Sprintf("%d scenario × checkpoint pairs held rollouts sent different first requests (frameworks that prompt differently or show other tools at step 0, runs of one scenario id whose text differs); each first request is its own GRPO group.", sum.SplitPrompts))
	}
	card.Notes = append(card.Notes, templatesNote(f.render().Compat))
	card.Notes = withNote(card.Notes, f.partial.note(f.out))
	if err := export.WriteCard(out.tmp, card); err != nil {
		return err
	}
	files, err := out.commit()
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), struct {
			Out     string           `json:"out"`
			Files   []string         `json:"files"`
			Summary *rewards.Summary `json:"summary"`
			Dropped int64            `json:"dropped_over_max_tokens"`
		}{f.out, files, sum, w.Dropped()})
	}
	printRewards(cmd.OutOrStdout(), sum, ix)
	printDropped(cmd.OutOrStdout(), f.tableFlags, w.Dropped(), w.Rows())
	fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s\n", strings.Join(files, ", "))
	return nil
}

type scenariosResult struct {
	scens map[string]*scenario.Scenario
	err   error
}

// readManifests reads the manifests of run folders, as store.OpenIndex does.
func readManifests(dirs []string) ([]store.Manifest, error) {
	var out []store.Manifest
	for _, d := range dirs {
		m, err := store.ReadManifest(d)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func rewardMetrics(sum *rewards.Summary) []export.MetricRow {
	var out []export.MetricRow
	for _, c := range sum.Checkpoints {
		out = append(out, export.NewMetricRow(c.Checkpoint, "", int64(c.Trajectories), int64(c.Successes), int64(c.Drifting), int64(c.Clean)))
	}
	return out
}

func printRewards(w io.Writer, sum *rewards.Summary, ix *dataset.Index) {
	cs := append([]rewards.CheckpointSummary(nil), sum.Checkpoints...)
	sort.SliceStable(cs, func(i, j int) bool { return ix.LessCheckpoint(cs[i].Checkpoint, cs[j].Checkpoint) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECKPOINT\tTRAJ\tGROUPS\tCLEAN\tDRIFTING\tMEAN REWARD\tMIN\tMAX")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\n", c.Checkpoint, c.Trajectories, c.Groups, c.Clean, c.Drifting, c.MeanReward, c.MinReward, c.MaxReward)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d rows, %d GRPO groups (rollouts of one first request under one checkpoint); advantage 0 in %d groups of one and %d groups of equal rewards\n",
		sum.Rows, sum.Groups, sum.SingletonGroup, sum.ZeroStdGroups)
	fmt.Fprintf(w, "splits: train %d, validation %d, test %d\n", sum.Splits["train"], sum.Splits["validation"], sum.Splits["test"])
	if ix.Duplicates > 0 {
		fmt.Fprintf(w, "%d duplicate records (same traj_id) dropped\n", ix.Duplicates)
	}
}

// rewardsDescription is the rewards card's opening, for its layout.
func rewardsDescription(c dataset.Completion) string {
	d := "Rows for RL with `reward` R = α·S·(1−D) − λ·Σ w(v) of their trajectory, `advantage` group-relative over `group_id` as TRL's GRPO computes it, and `process_rewards`. "
	if c == dataset.CompletionTurn {
		d += "One row per assistant turn: `prompt` is the conversation before the turn (tool results included), `completion` that turn, `turn` its message index, `process_rewards` the one process reward of that turn (a trajectory's rows' process rewards sum to its reward); `reward` and `advantage` are the trajectory's, on each of its rows."
	} else {
		d += "One row per trajectory: `prompt` up to the first user message, `completion` the rest, `process_rewards` one per assistant turn of the completion, summing to the reward."
	}
	d += "\n\n**Layout of this file:** `completion` holds " + c.Describe() + " (`--completion " + c.String() + "`)."
	if w := c.Warning(); w != "" {
		d += "\n\n" + w
	}
	return d
}
