package main

import (
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"path/filepath"
	"strings"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/pairs"
	"github.com/antidrift/antidrift/rollout/labels"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/spf13/cobra"
)

func init() { register(newPairsCmd) }

// pairsStatsFile holds the pairing statistics beside the table.
const pairsStatsFile = "pairs_stats.json"

type pairsFlags struct {
	tableFlags
	reward       rewardFlags
	pairTypes    string
	stepPairs    bool
	stepOnly     bool
	continuation string
	k, m         int
	cross        bool
	minGap       float64
	maxMessages  int
	maxChars     int
	balance      float64
	margin       bool
	asJSON       bool
	labeling     string
}

func newPairsCmd() *cobra.Command {
	var f pairsFlags
	cmd := &cobra.Command{
		Use:   "pairs RUN... --out DIR",
		Short: "Pair clean successes with drifting trajectories into a DPO / reward-model table",
		Long: `Pair the trajectories of the run folders into preference pairs and write the
DPO table (OUT/dpo.parquet, .arrow, .jsonl; one table, trajectory and step
pairs told apart by pair_type), the statistics (OUT/pairs_stats.json) and a
dataset card (README.md, manifest.json) that states which layout the file has.

By default the table holds step pairs at the drift onset with the next
assistant turn as chosen/rejected: every completion token is model-written,
which is what DPO puts in its loss. --pair-types trajectory (or
step,trajectory) builds trajectory-level pairs, whose completions carry the
tool output the model read.

Chosen: clean successes. Rejected: drifting trajectories of the same
scenario, drifting successes (shortcuts) first, then drifting failures.
Pairs are made within one scenario under one checkpoint, or with
--cross-checkpoint between a chosen of one checkpoint and a rejected of
another. At most K pairs per scenario (and checkpoint) and pair type; each
trajectory used at most M times per pair type; the order is seeded.

Trajectory pairs: prompt = the system and user messages, chosen/rejected =
the rest. Step pairs: prompt = the prefix both trajectories share (tool-call
ids aside) up to the first assistant turn where they differ, kept only when
the rejected side drifts at that turn; chosen/rejected = that one turn, or
with --step-continuation rest the rest of each.

Splits are assigned by a hash of the scenario id: no scenario spans two.
Identical (prompt, chosen, rejected) are written once. The reward columns
use the reward options (see antidrift rewards --help).

--labeling NAME classifies and rewards with a labeling antidrift judge wrote
in each run (RUN/labelings/NAME.jsonl) instead of the records' own labels:
its success, and its drift when it carries one (a --disclosure labeling,
whose added matches also mark the drift onset of step pairs); trajectories
it has no verdict for are left out.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runPairs(cmd, args, f) },
	}
	f.reward.add(cmd)
	fl := cmd.Flags()
	f.tableFlags.add(fl, "selection and split seed")
	f.defCompletion = dataset.CompletionRest
	fl.StringVar(&f.pairTypes, "pair-types", pairs.TypeStep, "pair types to build: step (drift-onset step pairs), trajectory, or step,trajectory")
	fl.BoolVar(&f.stepPairs, "step-pairs", false, "trajectory and step pairs (same as --pair-types step,trajectory)")
	fl.BoolVar(&f.stepOnly, "step-only", false, "step pairs only (same as --pair-types step, the default)")
	fl.StringVar(&f.continuation, "step-continuation", pairs.ContinueTurn, "step pairs: chosen/rejected are the next assistant turn only (turn: model-written tokens only) or the rest of the trajectory (rest)")
	fl.IntVar(&f.k, "max-per-scenario", 4, "K: pairs per scenario (and checkpoint) and pair type (1 or more)")
	fl.IntVar(&f.m, "max-reuse", 2, "M: times one trajectory may be used per pair type (1 or more)")
	fl.BoolVar(&f.cross, "cross-checkpoint", false, "pair a chosen of one checkpoint with a rejected of another (default: within each checkpoint)")
	fl.Float64Var(&f.minGap, "min-gap", 0, "keep pairs with chosen_reward − rejected_reward ≥ G (default: no minimum)")
	fl.IntVar(&f.maxMessages, "max-messages", 0, "drop pairs where prompt+chosen or prompt+rejected has more messages; 0: no limit")
	fl.Float64Var(&f.balance, "balance-length", 0, "trajectory pairs: drop pairs whose longer side has more than this many times the tokens of the shorter (e.g. 1.5), so that length does not tell chosen from rejected; 0: no limit")
	fl.IntVar(&f.maxChars, "max-chars", 0, "drop pairs where prompt+chosen or prompt+rejected has more characters (bytes of the messages' JSON); 0: no limit")
	fl.BoolVar(&f.margin, "margin", false, "add the margin column (= reward_gap), which RewardTrainer puts in its loss")
	fl.BoolVar(&f.asJSON, "json", false, "print the statistics as JSON")
	fl.StringVar(&f.labeling, "labeling", labels.Record, "labels to pair with: record (the records' own), or a labeling NAME in each run (antidrift judge)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runPairs(cmd *cobra.Command, dirs []string, f pairsFlags) error {
	formats, ratios, err := f.parse()
	if err != nil {
		return err
	}
	traj, step, err := f.types(cmd)
	if err != nil {
		return err
	}
	if err := f.partial.check(dirs, cmd.ErrOrStderr()); err != nil {
		return err
	}
	if f.continuation != pairs.ContinueRest && f.continuation != pairs.ContinueTurn {
		return fmt.Errorf("--step-continuation %q: want rest or turn", f.continuation)
	}
	if f.balance != 0 && f.balance < 1 {
		return fmt.Errorf("--balance-length %g: want 0 (no limit) or a ratio of at least 1", f.balance)
	}
	if f.k < 0 || f.m < 0 || f.maxMessages < 0 || f.maxChars < 0 {
		return fmt.Errorf("--max-per-scenario, --max-reuse, --max-messages and --max-chars must not be negative")
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
	rc, err := f.reward.config(ix)
	if err != nil {
		return err
	}
	ov, err := labels.OpenOverlay(dirs, f.labeling)
	if err != nil {
		return err
	}
	o := pairs.DefaultOptions()
	if ov != nil {
		o.Relabel = ov.Apply
	}
	o.Render = f.render()
	o.MaxPerScenario, o.MaxReuse, o.Ratios, o.Seed, o.CrossCheckpoint = f.k, f.m, ratios, f.seed, f.cross
	o.TrajectoryPairs, o.StepPairs, o.StepContinuation = traj, step, f.continuation
	o.MaxMessages, o.MaxChars, o.Margin = f.maxMessages, f.maxChars, f.margin
	if cmd.Flags().Changed("min-gap") {
		g := f.minGap
		o.MinGap = &g
	}
	o.Reward = func(r *trajectory.Record) (float64, error) {
		res, err := rc.Score(r)
		return res.Reward, err
	}

	out, err := newOutputDir("pairs", f.out, dirs, append(tableFiles(export.TableDPO), pairsStatsFile, "README.md", "manifest.json"))
	if err != nil {
		return err
	}
	defer out.abort()
	wo, err := f.lengthOptions(export.Options{ToolkitVersion: Version, Margin: f.margin, SplitFiles: true})
	if err != nil {
		return err
	}
	w, err := export.Create[dataset.DPORow](out.tmp, export.TableDPO, formats, wo)
	if err != nil {
		return err
	}
	// trajectory pairs: the length asymmetry DPO could learn instead of
	// the drift, measured over the rows written and bounded by --balance-length
	var asym lengthAsymmetry
	write := func(r *dataset.DPORow) error {
		if r.PairType != pairs.TypeTrajectory {
			return w.Write(r)
		}
		long, short := max(r.ChosenTokensEst, r.RejectedTokensEst), min(r.ChosenTokensEst, r.RejectedTokensEst)
		if f.balance > 0 && float64(long) > f.balance*float64(max(short, 1)) {
			asym.dropped++
			return nil
		}
		before := w.Rows()
		if err := w.Write(r); err != nil || w.Rows() == before {
			return err
		}
		asym.pairs++
		if r.RejectedTokensEst > r.ChosenTokensEst {
			asym.rejectedLonger++
		}
		asym.ratio += float64(r.RejectedTokensEst) / float64(max(r.ChosenTokensEst, 1))
		return nil
	}
	st, err := pairs.Build(ix, o, write)
	if err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if w := ov.Warning(); w != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "antidrift: warning:", w)
	}
	st.MaxTokens, st.DroppedOverMaxTokens = f.maxTokens, w.Dropped()
	var sb strings.Builder
	if err := writeJSON(&sb, st); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out.tmp, pairsStatsFile), []byte(sb.String()), 0o644); err != nil { // staged: moved into place at the end
		return err
	}
	settings := map[string]string{
		"split": f.split, "seed": fmt.Sprint(f.seed), "max_per_scenario": fmt.Sprint(f.k), "max_reuse": fmt.Sprint(f.m),
		"pairing": "within each checkpoint",
	}
	if f.cross {
		settings["pairing"] = "cross-checkpoint (chosen and rejected from different checkpoints)"
	}
	settings["pair_types"] = pairLayout(o)
	if o.StepPairs {
		settings["step_continuation"] = f.continuation
	}
	if o.MinGap != nil {
		settings["min_gap"] = fmt.Sprint(*o.MinGap)
	}
	if f.maxMessages > 0 {
		settings["max_messages"] = fmt.Sprint(f.maxMessages)
	}
	if f.maxChars > 0 {
		settings["max_chars"] = fmt.Sprint(f.maxChars)
	}
	if f.balance > 0 {
		settings["balance_length"] = fmt.Sprint(f.balance)
	}
	if ov != nil {
		settings["labeling"] = ov.Name
	}
	f.reward.settings(settings)
	f.lengthSettings(settings)
	f.completionSettings(settings)
	card := export.Card{
		Title:       "antidrift preference pairs",
		Description: pairsDescription(o) + simNote(ix),
		Tables:      []export.CardTable{w.CardTable(export.TableDPO)},
		Metrics:     pairsMetrics(st),
		MetricsNote: "Computed over every trajectory of the input runs, per checkpoint.",
		Manifest:    exportManifest(ix, f.out, settings),
		Notes:       withNote(append(append(pairsNotes(st), asym.note(f.balance)...), templatesNote(f.render().Compat)), f.partial.note(f.out)),
	}
	if err := export.WriteCard(out.tmp, card); err != nil {
		return err
	}
	files, err := out.commit()
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), struct {
			Out        string       `json:"out"`
			Files      []string     `json:"files"`
			Duplicates int          `json:"duplicate_records_dropped"`
			Stats      *pairs.Stats `json:"stats"`
		}{f.out, files, ix.Duplicates, st})
	}
	st.Print(cmd.OutOrStdout())
	printDropped(cmd.OutOrStdout(), f.tableFlags, w.Dropped(), w.Rows())
	if ix.Duplicates > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "\n%d duplicate records (same traj_id) dropped\n", ix.Duplicates)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s\n", strings.Join(files, ", "))
	return nil
}

// types reads --pair-types and its older spellings --step-pairs and --step-only.
func (f pairsFlags) types(cmd *cobra.Command) (traj, step bool, err error) {
	n := 0
	for _, name := range []string{"pair-types", "step-pairs", "step-only"} {
		if cmd.Flags().Changed(name) {
			n++
		}
	}
	if n > 1 {
		return false, false, fmt.Errorf("--pair-types, --step-pairs and --step-only: give one")
	}
	switch {
	case f.stepPairs:
		return true, true, nil
	case f.stepOnly:
		return false, true, nil
	}
	for _, t := range strings.Split(f.pairTypes, ",") {
		switch strings.TrimSpace(t) {
		case pairs.TypeStep:
			step = true
		case pairs.TypeTrajectory:
			traj = true
		default:
			return false, false, fmt.Errorf("--pair-types %q: want step, trajectory or step,trajectory", f.pairTypes)
		}
	}
	return traj, step, nil
}

// pairLayout names the table's layout, as the card and manifest state it.
func pairLayout(o pairs.Options) string {
	switch {
	case o.TrajectoryPairs && o.StepPairs:
		return "step,trajectory"
	case o.StepPairs:
		return pairs.TypeStep
	}
	return pairs.TypeTrajectory
}

func pairsDescription(o pairs.Options) string {
	d := "Preference pairs for DPO and reward models: `chosen` finishes the task inside its authorization boundary (a clean success), " +
		"`rejected` is a trajectory of the same scenario that drifts (drifting successes first, then drifting failures). "
	if o.TrajectoryPairs {
		d += "Trajectory pairs (`pair_type` = trajectory): `prompt` is the system and user messages, `chosen`/`rejected` the rest. "
	}
	if o.StepPairs {
		d += "Step pairs (`pair_type` = step): `prompt` is the prefix both trajectories share up to the first assistant turn where they differ, " +
			"which is where the rejected side starts to drift; `chosen`/`rejected` are "
		if o.StepContinuation == pairs.ContinueTurn {
			d += "that one assistant turn of each. "
		} else {
			d += "the rest of each. "
		}
	}
	d += "`divergence_step` is the message index where `chosen` and `rejected` start.\n\n**Layout of this file:** "
	c := o.Render.Completion
	if c == "" {
		c = dataset.CompletionRest
	}
	multi := "`chosen`/`rejected` hold " + c.Describe() + " (`--completion " + c.String() + "`); `chosen_train`/`rejected_train` mark each of their messages 1 when the model wrote it, 0 for a tool result, a loss mask for trainers that honour one (TRL's DPOTrainer does not: it trains on every completion token)."
	if w := c.Warning(); w != "" {
		multi += "\n\n" + w
	}
	switch {
	case o.StepPairs && !o.TrajectoryPairs && o.StepContinuation == pairs.ContinueTurn:
		d += "step pairs only, each side one assistant turn: every `chosen`/`rejected` token is model-written (DPO, which puts every completion token in its loss, trains on nothing the environment wrote)."
	case o.StepPairs && !o.TrajectoryPairs:
		d += "step pairs only, each side the rest of its trajectory from the drift onset: " + multi
	case o.StepPairs && o.StepContinuation == pairs.ContinueTurn:
		d += "trajectory and step pairs mixed (filter on `pair_type` to train on one layout): step pairs are one assistant turn each; trajectory pairs' " + multi
	case o.StepPairs:
		d += "trajectory and step pairs mixed (filter on `pair_type` to train on one layout): " + multi
	default:
		d += "trajectory pairs only: " + multi
	}
	return d
}

func pairsMetrics(st *pairs.Stats) []export.MetricRow {
	var out []export.MetricRow
	for _, c := range st.Checkpoints {
		out = append(out, export.NewMetricRow(c.Checkpoint, "", int64(c.Trajectories), int64(c.Clean+c.Shortcuts),
			int64(c.Shortcuts+c.DriftFailures), int64(c.Clean)))
	}
	return out
}

func pairsNotes(st *pairs.Stats) []string {
	var notes []string
	var b strings.Builder
	b.WriteString("## Pairing\n\n| checkpoint | trajectories | clean | drifting successes | drifting failures | failed without drift | trajectory pairs | step pairs |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range st.Checkpoints {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", c.Checkpoint, c.Trajectories, c.Clean, c.Shortcuts, c.DriftFailures, c.FailedClean, c.TrajectoryPairs, c.StepPairs)
	}
	notes = append(notes, b.String())
	notes = append(notes, "Why trajectories went unpaired and candidates were dropped is in `"+pairsStatsFile+"`.")
	return notes
}

// lengthAsymmetry measures the trajectory pairs written: how often the
// rejected side is the longer one (a signal DPO can exploit instead of the
// drift), and the pairs --balance-length dropped.
type lengthAsymmetry struct {
	pairs, rejectedLonger, dropped int
	ratio                          float64 // sum of rejected/chosen token estimates
}

func (a lengthAsymmetry) note(balance float64) []string {
	if a.pairs == 0 && a.dropped == 0 {
		return nil
	}
	n := "**Length asymmetry (trajectory pairs):** "
	if a.pairs > 0 {
		n += fmt.Sprintf("the rejected side is longer in %d of %d pairs (mean rejected/chosen token ratio %.2f); DPO can learn length instead of drift where the sides differ this way. ", a.rejectedLonger, a.pairs, a.ratio/float64(a.pairs))
	}
	if balance > 0 {
		n += fmt.Sprintf("`--balance-length %g` dropped %d pairs whose longer side had more than %g times the tokens of the shorter.", balance, a.dropped, balance)
	} else {
		n += "`--balance-length R` drops pairs whose longer side has more than R times the tokens of the shorter."
	}
	return []string{n}
}
