package export

import (
	"fmt"
	"github.com/antidrift/antidrift/rollout/dataset"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RunsConfig is an export of run folders as one table.
type RunsConfig struct {
	Dirs    []string
	Table   string // TableTrajectories or TableKTO
	Out     string // output folder
	Name    string // file name without extension (default: the table)
	Formats []string
	Options Options
	// Split assigns a scenario to a split (train, validation, test).
	// Rows are built on every core: Split and Reward must be safe for
	// concurrent use.
	Split func(scenarioID string) string
	// Reward is the KTO table's reward column (0 when nil).
	Reward func(rec *trajectory.Record) (float64, error)
	// Card: Manifest.Command, Manifest.Settings and Notes are taken as
	// given; the rest of the manifest is filled from the runs.
	Manifest Manifest
	Notes    []string
	// ShuffleSeed orders the KTO table's rows by a seeded shuffle that
	// spreads the labels evenly (dataset.Records.EachBalanced), recorded in
	// the manifest.
	ShuffleSeed int64
	// NoCard skips README.md and manifest.json.
	NoCard bool
	// Render chooses what rendered messages carry: the model's reasoning
	// is left out unless Render.Reasoning is set.
	Render dataset.RenderOptions
	// PreOnset labels the per-turn KTO rows (Render.Completion
	// dataset.CompletionTurn) of turns before a drifting trajectory's onset.
	PreOnset dataset.PreOnset
	// MemoryBudget, when positive, sets the Go runtime's soft memory
	// limit to the memory in use once the records are indexed plus this
	// (LimitMemory; DefaultMemoryBudget), until ExportRuns returns.
	MemoryBudget int64
}

// RunsResult says what an export wrote.
type RunsResult struct {
	Table   CardTable
	Files   []string
	Records int // records read
	Skipped int // KTO: records without a completion (no message after the prompt)
	// Desirable and Undesirable count the KTO rows by label.
	Desirable, Undesirable int
	// RawArguments counts KTO records left out because a tool call's
	// arguments never parsed as an object.
	RawArguments int
	Duplicates   int // copies of an episode already read, dropped
	Metrics      []MetricRow
}

// ExportRuns streams the records of run folders into one table and writes
// the dataset card beside it. Records go in the order of checkpoint,
// framework, scenario, rollout, seed, run and traj_id, so that an export
// never depends on the order episodes finished in; copies of an episode
// (same traj_id) are dropped. Records are decoded and their rows built on
// every core and written in that order (dataset.MapOrdered), so the files
// are the same for any number of cores. Memory is the index (store.Index,
// compacted once sorted: 24 bytes per record, or a 1.25 MiB cache of it
// past 512 Ki records, when it is kept in a temporary file) plus a bounded
// working set:
// one row group per Parquet file being written and the footer entries of
// those files (bounded by Options.ShardRowGroups), the records and rows in
// flight (a few hundred), one zstd encoder (see DefaultMemoryBudget).
func ExportRuns(cfg RunsConfig) (RunsResult, error) {
	var res RunsResult
	if cfg.Split == nil {
		cfg.Split = func(string) string { return "train" }
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Table
	}
	idx, err := dataset.OpenRecords(cfg.Dirs...)
	if err != nil {
		return res, err
	}
	defer idx.Close()
	if cfg.MemoryBudget > 0 {
		defer LimitMemory(cfg.MemoryBudget)()
		GrowMemoryLimit(idx.Len())
	}
	res.Duplicates = idx.Duplicates
	runs := manifestRuns(idx, cfg.Out)
	counts := map[[2]string]*[4]int64{} // n, success, drift, clean per checkpoint × framework
	count := func(checkpoint, framework string, success, drift, clean bool) {
		k := [2]string{checkpoint, framework}
		c := counts[k]
		if c == nil {
			c = &[4]int64{}
			counts[k] = c
		}
		c[0]++
		if success {
			c[1]++
		}
		if drift {
			c[2]++
		}
		if clean {
			c[3]++
		}
	}
	cfg.Options.RenderedMessages = true // the rows below are rendered by rollout/dataset
	switch cfg.Table {
	case TableTrajectories:
		w, err := Create[dataset.TrajectoryRow](cfg.Out, cfg.Name, cfg.Formats, cfg.Options)
		if err != nil {
			return res, err
		}
		// rows are built on every core and written in record order
		build := func(rec *trajectory.Record) (dataset.TrajectoryRow, error) {
			return dataset.TrajectoryRowWith(rec, cfg.Split(rec.ScenarioID), cfg.Render), nil
		}
		err = dataset.MapOrdered(idx.Each, build, func(row dataset.TrajectoryRow) error {
			res.Records++
			count(row.Checkpoint, row.Framework, row.Success, row.Drift, row.Clean)
			return w.Write(&row)
		})
		if err != nil {
			w.Abort()
			return res, err
		}
		if err := w.Close(); err != nil {
			return res, err
		}
		res.Table, res.Files = w.CardTable(cfg.Name), w.Files()
	case TableKTO:
		w, err := Create[dataset.KTORow](cfg.Out, cfg.Name, cfg.Formats, cfg.Options)
		if err != nil {
			return res, err
		}
		clean := func(rec *trajectory.Record) bool { return rec.Clean() }
		perTurn := cfg.Render.Completion == dataset.CompletionTurn
		// Per turn, what a row's record gives it is found when the record
		// is read whole, before it is cut after the row's turn: its reward
		// (or the error scoring it), and whether the row is the first of
		// its record's, which counts the record. It goes from the reading
		// to consume in row order (MapOrdered keeps it), beside the rows.
		type turnOf struct {
			first  bool
			reward float64
			err    error
		}
		var turns fifo[turnOf]
		// rows are built on every core and written in the shuffled order
		type ktoOut struct {
			row                        dataset.KTORow
			ckpt, fw                   string
			success, drift, clean, raw bool
		}
		build := func(rec *trajectory.Record) (ktoOut, error) {
			o := ktoOut{ckpt: rec.Checkpoint, fw: rec.Framework, success: rec.Success, drift: rec.Drift, clean: rec.Clean()}
			if perTurn && len(rec.Messages) == 0 {
				return o, nil // a record with no kept turn: skipped
			}
			reward := 0.0 // per turn, consume fills it in (turnOf)
			if !perTurn && cfg.Reward != nil {
				var err error
				if reward, err = cfg.Reward(rec); err != nil {
					return o, err
				}
			}
			if dataset.FormatOf(rec.Framework) == dataset.ToolsNative && dataset.RawArguments(rec.Messages) {
				o.raw = true
				return o, nil
			}
			if perTurn {
				// each passes the record cut after the row's turn
				k := len(rec.Messages) - 1
				label, _ := dataset.TurnLabel(rec, k, cfg.PreOnset)
				o.row = dataset.KTOTurnRow(rec, k, label, cfg.Split(rec.ScenarioID), reward, cfg.Render)
				return o, nil
			}
			o.row = dataset.KTORowWith(rec, cfg.Split(rec.ScenarioID), reward, cfg.Render)
			return o, nil
		}
		each := func(fn func(*trajectory.Record) error) error { return idx.EachBalanced(cfg.ShuffleSeed, clean, fn) }
		if perTurn {
			// one row per kept turn, rows (not records) spread by label
			each = func(fn func(*trajectory.Record) error) error {
				units := func(rec *trajectory.Record) []dataset.Unit {
					if dataset.FormatOf(rec.Framework) == dataset.ToolsNative && dataset.RawArguments(rec.Messages) {
						return []dataset.Unit{{Turn: -1}} // counted once, below
					}
					us := dataset.KTOUnits(rec, cfg.PreOnset)
					if len(us) == 0 {
						return []dataset.Unit{{Turn: -1}}
					}
					return us
				}
				return idx.EachBalancedUnits(cfg.ShuffleSeed, units, func(rec *trajectory.Record, u dataset.Unit, first bool) error {
					cut := *rec
					if u.Turn < 0 {
						cut.Messages = nil // no row: counted as raw or skipped
						if dataset.FormatOf(rec.Framework) == dataset.ToolsNative && dataset.RawArguments(rec.Messages) {
							cut.Messages = rec.Messages
						}
					} else {
						cut.Messages = rec.Messages[:u.Turn+1]
					}
					t := turnOf{first: first}
					// scored on the whole record (rec is cut after the
					// row's turn for build); a record with no kept turn
					// is skipped before its score is read
					if cfg.Reward != nil && len(cut.Messages) > 0 {
						t.reward, t.err = cfg.Reward(rec)
					}
					turns.push(t)
					return fn(&cut)
				})
			}
		}
		err = dataset.MapOrdered(each, build, func(o ktoOut) error {
			record := true // the record is counted at this row
			if perTurn {
				t := turns.pop()
				if t.err != nil {
					return t.err
				}
				o.row.Reward = t.reward
				if !t.first {
					if len(o.row.Completion) == 0 {
						return nil
					}
					record = false // a record's rows count it once
				}
			}
			if record {
				res.Records++
				count(o.ckpt, o.fw, o.success, o.drift, o.clean)
			}
			switch {
			case o.raw:
				res.RawArguments++
				return nil
			case len(o.row.Completion) == 0:
				res.Skipped++
				return nil
			}
			if o.row.Label {
				res.Desirable++
			} else {
				res.Undesirable++
			}
			return w.Write(&o.row)
		})
		if err != nil {
			w.Abort()
			return res, err
		}
		if err := w.Close(); err != nil {
			return res, err
		}
		res.Table, res.Files = w.CardTable(cfg.Name), w.Files()
	default:
		return res, fmt.Errorf("unknown table %q: want trajectories or kto", cfg.Table)
	}

	keys := make([][2]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		c := counts[k]
		res.Metrics = append(res.Metrics, NewMetricRow(k[0], k[1], c[0], c[1], c[2], c[3]))
	}
	if cfg.NoCard {
		return res, nil
	}
	m := cfg.Manifest
	fillManifest(&m, runs)
	if m.ToolkitVersion == "" {
		m.ToolkitVersion = cfg.Options.ToolkitVersion
	}
	notes := append([]string(nil), cfg.Notes...)
	if d, u := res.Table.Desirable, res.Table.Undesirable; cfg.Table == TableKTO && d > 0 && u > 0 {
		lo, hi := kTOWeightRange(d, u)
		notes = append(notes, fmt.Sprintf("Class balance of the train split (what KTOTrainer checks): %d desirable (label true), %d undesirable rows; %d and %d over every split. TRL's KTOTrainer recommends desirable_weight × desirable / (undesirable_weight × undesirable) between 1 and 1.33: with undesirable_weight=1, set `desirable_weight` between %.2f and %.2f (the recipe below takes the middle). Rows are in a seeded shuffled order with the two labels spread evenly through the file (the seed is in the manifest's record_order), since KTOTrainer pairs neighbours for its KL estimate and trains in file order: keep `shuffle` off or on, either way batches mix scenarios and labels.", d, u, res.Desirable, res.Undesirable, lo, hi))
	}
	if res.RawArguments > 0 {
		notes = append(notes, fmt.Sprintf("%d trajectories with a tool call whose arguments never parsed as a JSON object are left out of the KTO table.", res.RawArguments))
	}
	if res.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d trajectories with no message after the prompt (no completion) are left out of the KTO table.", res.Skipped))
	}
	card := Card{
		Title:       fmt.Sprintf("antidrift %s export", cfg.Table),
		Description: describe(cfg.Table, runs, cfg.Render.Completion, cfg.PreOnset),
		Tables:      []CardTable{res.Table},
		Metrics:     res.Metrics,
		MetricsNote: "Computed over every record exported (all rollouts, all statuses), per checkpoint and framework.",
		Manifest:    m,
		Notes:       notes,
	}
	return res, WriteCard(cfg.Out, card)
}

// manifestRuns describes the runs of an index; Records counts every record
// read from a run, copies of an episode included.
func manifestRuns(idx *dataset.Records, out string) []ManifestRun {
	var runs []ManifestRun
	for i, m := range idx.Manifests {
		runs = append(runs, ManifestRun{Path: RelPath(out, idx.Dirs[i]), Run: m.Run, Checkpoint: m.Plan.Checkpoint, Policy: m.Plan.Policy,
			Framework: m.Plan.Framework, Seed: m.Plan.Seed, ScenarioHash: m.Plan.ScenarioHash, Records: int64(idx.Scanned[i])})
	}
	return runs
}

// fillManifest completes a manifest from the runs read.
func fillManifest(m *Manifest, runs []ManifestRun) {
	m.Runs = runs
	hashes, ckpts := map[string]bool{}, map[string]bool{}
	var seeds []int64
	for _, r := range runs {
		hashes[r.ScenarioHash] = true
		ckpts[r.Checkpoint] = true
		seeds = append(seeds, r.Seed)
	}
	m.ScenarioSuiteHash = strings.Join(sortedKeys(hashes), ",")
	m.Checkpoints = sortedKeys(ckpts)
	m.Seeds = sortedInt64(seeds)
}

func describe(table string, runs []ManifestRun, c dataset.Completion, pre dataset.PreOnset) string {
	what := "One row per trajectory with all its labels."
	if table == TableKTO {
		what = "Unpaired preference data for KTO: one row per trajectory, `label` true for a clean success (task done inside the boundary), false for a failure or a drift. The prompt is every message up to and including the first user message; the completion is what follows."
		if c == dataset.CompletionTurn {
			if pre == "" {
				pre = dataset.PreOnsetDrop
			}
			what = "Unpaired preference data for KTO: one row per assistant turn. The prompt is the conversation before the turn (system, user, earlier assistant turns and the tool results they got); the completion is that one turn; `turn` is its message index in the trajectory. `label` is true for the turns of a clean success (task done inside the boundary) and false for a drifting trajectory's turns from its drift onset (its first drifting turn) on and for the turns of a failure; " + pre.Describe() + "."
		}
	}
	sim := false
	for _, r := range runs {
		if strings.HasPrefix(r.Policy, "sim:") || strings.HasPrefix(r.Checkpoint, "sim:") || strings.Contains(r.Policy, ":sim:") {
			sim = true
		}
	}
	if sim {
		what += " Some runs come from simulated policies (`sim:*`): scripted stand-ins for models, for testing the pipeline, not model behaviour."
	}
	if table == TableKTO {
		if c == "" {
			c = dataset.CompletionRest
		}
		what += "\n\n**Layout of this file:** `completion` holds " + c.Describe() + " (`--completion " + c.String() + "`)."
		if w := c.Warning(); w != "" {
			what += "\n\n" + w
		}
	}
	return what
}

// RelPath is dir relative to the output folder out, slash-separated, so
// that cards and manifests hold no absolute path (dir as given when it has
// no relative form).
func RelPath(out, dir string) string {
	ao, err1 := filepath.Abs(out)
	ad, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(dir)
	}
	rel, err := filepath.Rel(ao, ad)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	return filepath.ToSlash(rel)
}

// fifo is a queue between one goroutine that pushes and one that pops,
// each value pushed before it is popped.
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	head  int
}

func (q *fifo[T]) push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
}

func (q *fifo[T]) pop() T {
	q.mu.Lock()
	defer q.mu.Unlock()
	v := q.items[q.head]
	q.head++
	if q.head >= 1024 && q.head*2 >= len(q.items) { // what is popped goes
		q.items = q.items[:copy(q.items, q.items[q.head:])]
		q.head = 0
	}
	return v
}
