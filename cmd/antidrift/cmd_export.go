package main

import (
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/rewards"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

func init() { register(newExportCmd) }

type exportFlags struct {
	tableFlags
	table         string
	rowGroupRows  int
	alpha, lambda float64
	json          bool
}

func newExportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export RUN... --table trajectories|kto --out DIR",
		Short: "Write run folders as a trainer-ready table (Parquet, Arrow IPC, JSONL) with a dataset card",
		Long: `Write the trajectories of run folders as one table, in a fixed order that never
depends on the order episodes finished in:

  trajectories  one row per trajectory with all its labels
  kto           one row per assistant turn by default (--completion turn):
                prompt = the conversation before the turn, tool results
                included, completion = that turn; label = desirable for a
                clean success's turns, undesirable for a drifting
                trajectory's turns from its drift onset on (earlier turns:
                --pre-onset drop|desirable|undesirable) and for a failure's;
                --completion rest|model-turns gives one row per trajectory
                (prompt up to the first user message, label = clean); reward = alpha*S*(1-D) -
                lambda*(number of drifting calls), as the rewards package
                computes it with the uniform scheme; rows in a seeded order
                that spreads both labels evenly (KTO's KL term pairs
                neighbours)

Files are DIR/data/<table>-<split>.parquet (shards past --shard-bytes or
--shard-row-groups),
DIR/arrow/<table>-<split>.arrow and DIR/jsonl/<table>.jsonl, with README.md
(the dataset card: YAML front matter naming the splits and features,
counts, lengths, metric summary, trainer recipes) and manifest.json
(provenance) beside them. Splits come from a hash of the scenario id, so no
scenario spans two splits.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runExport(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.table, "table", "", "table to write: trajectories or kto")
	f.tableFlags.add(fl, "seed of the scenario-hash split (the same as for pairs and rewards)")
	f.defCompletion = dataset.CompletionTurn
	f.addPreOnset(fl)
	fl.IntVar(&f.rowGroupRows, "row-group-rows", export.DefaultRowGroupRows, "rows per Parquet row group and Arrow record batch")
	fl.Float64Var(&f.alpha, "alpha", 1, "kto reward: weight of clean success")
	fl.Float64Var(&f.lambda, "lambda", 0.5, "kto reward: penalty per drift step (uniform weights)")
	fl.BoolVar(&f.json, "json", false, "print the summary as JSON")
	_ = cmd.MarkFlagRequired("table")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runExport(cmd *cobra.Command, dirs []string, f exportFlags) error {
	if f.table != export.TableTrajectories && f.table != export.TableKTO {
		return fmt.Errorf("unknown --table %q: want trajectories or kto (pairs and rewards have their own commands)", f.table)
	}
	formats, ratios, err := f.parse()
	if err != nil {
		return err
	}
	if err := f.partial.check(dirs, cmd.ErrOrStderr()); err != nil {
		return err
	}
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("%s: not a run folder", d)
		}
	}
	alpha, lambda := f.alpha, f.lambda
	settings := map[string]string{
		"split":        f.split,
		"split_seed":   strconv.FormatInt(f.seed, 10),
		"table":        f.table,
		"row_group":    strconv.Itoa(f.rowGroupRows) + " rows",
		"record_order": "checkpoint, framework, scenario_id, rollout, seed, run, traj_id",
	}
	f.lengthSettings(settings)
	if f.table == export.TableKTO {
		f.completionSettings(settings)
	} else if cmd.Flags().Changed("completion") || cmd.Flags().Changed("pre-onset") {
		return fmt.Errorf("--completion and --pre-onset apply to --table kto (a trajectories row holds the whole conversation)")
	} else {
		if f.toolsInSystem {
			settings["tools_in_system"] = "true: the tool schemas are in each row's system message and the tools column is empty"
		}
		if c := f.render().Compat; c != dataset.CompatNone {
			settings["template_compat"] = string(c)
		}
	}
	wo, err := f.lengthOptions(export.Options{RowGroupRows: f.rowGroupRows, ToolkitVersion: Version, SplitFiles: true})
	if err != nil {
		return err
	}
	var notes []string
	cfg := export.RunsConfig{
		Dirs: dirs, Table: f.table, Out: f.out, Formats: formats,
		Options:  wo,
		Split:    func(id string) string { return dataset.SplitOf(id, ratios, f.seed) },
		Render:   f.render(),
		PreOnset: f.preOnsetValue(),
		// peak memory bounded whatever the run's size (GOMEMLIMIT wins)
		MemoryBudget: export.ExportMemoryBudget,
	}
	if f.table == export.TableKTO {
		rc := rewards.Config{Alpha: alpha, Lambda: lambda, Schemes: []rewards.Scheme{rewards.Uniform}}
		if err := rc.Validate(); err != nil {
			return err
		}
		cfg.Reward = func(rec *trajectory.Record) (float64, error) {
			r, err := rc.Score(rec)
			return r.Reward, err
		}
		settings["reward"] = fmt.Sprintf("alpha=%g, lambda=%g, uniform weights", alpha, lambda)
		notes = append(notes, fmt.Sprintf("`reward` = alpha*S*(1-D) - lambda*(number of distinct drifting calls), alpha = %g, lambda = %g, the uniform scheme (every drifting call weighted 1); the `rewards` command computes the provision-, risk- and privilege-weighted schemes and GRPO advantages.", alpha, lambda))
	}
	cfg.ShuffleSeed = f.seed
	if f.table == export.TableKTO {
		settings["record_order"] = fmt.Sprintf("shuffled: by SHA-256 of the seed and traj_id, seed %d, each label on its own, the labels spread evenly through the file (KTO pairs neighbours for its KL estimate and trains in file order)", f.seed)
		if cfg.Render.Completion == dataset.CompletionTurn {
			settings["record_order"] = fmt.Sprintf("shuffled by row: by SHA-256 of the seed, traj_id and turn, seed %d, each label on its own, the labels spread evenly through the file (KTO pairs neighbours for its KL estimate and trains in file order; a trajectory's turns are scattered)", f.seed)
		}
	}
	cfg.Manifest = export.Manifest{ToolkitVersion: Version, Command: commandLineIn(f.out), Settings: settings}
	notes = append(notes, templatesNote(f.render().Compat))
	cfg.Notes = withNote(notes, f.partial.note(f.out))

	claim, err := claimOut("export", f.out, dirs, namesOf(f.table+"."))
	if err != nil {
		return err
	}
	defer claim.release()
	res, err := export.ExportRuns(cfg)
	if err != nil {
		return err
	}
	if err := claim.done(); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if res.Duplicates > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "antidrift: %d duplicate records (same traj_id) were dropped\n", res.Duplicates)
	}
	if f.json {
		return writeJSON(out, struct {
			Table      export.CardTable   `json:"table"`
			Out        string             `json:"out"`
			Records    int                `json:"records"`
			Skipped    int                `json:"skipped"`
			Duplicates int                `json:"duplicates"`
			Metrics    []export.MetricRow `json:"metrics"`
			Partial    []string           `json:"partial,omitempty"`
		}{res.Table, f.out, res.Records, res.Skipped, res.Duplicates, res.Metrics, f.partial.labels()})
	}
	fmt.Fprintf(out, "wrote %d %s rows from %d records to %s (train %d, validation %d, test %d)\n",
		res.Table.Rows, f.table, res.Records, f.out, res.Table.Splits["train"], res.Table.Splits["validation"], res.Table.Splits["test"])
	if res.Skipped > 0 {
		fmt.Fprintf(out, "left out %d records with no completion\n", res.Skipped)
	}
	printDropped(out, f.tableFlags, res.Table.DroppedOverMax, res.Table.Rows)
	for _, p := range res.Files {
		fmt.Fprintf(out, "  %s\n", p)
	}
	fmt.Fprintf(out, "  %s/README.md (dataset card), %s/manifest.json\n", f.out, f.out)
	return nil
}
