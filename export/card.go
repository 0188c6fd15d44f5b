package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/antidrift/antidrift/internal/mdtext"
	"github.com/antidrift/antidrift/rollout/dataset"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CardTable is one table of an export as the dataset card lists it.
// Writer.CardTable fills it.
type CardTable struct {
	Name   string           `json:"name"`   // title in the card, e.g. "dpo" or "dpo_step"
	Kind   string           `json:"kind"`   // dpo, kto, rewards or trajectories (from Name when empty)
	Rows   int64            `json:"rows"`   //
	Splits map[string]int64 `json:"splits"` // rows per split
	Files  []string         `json:"files"`  // file names, relative to the card's folder
	// DataFiles are the Parquet files by split (split-file layout only:
	// one file, or its shards), named in the card's YAML front matter so
	// that load_dataset(folder) returns the splits.
	DataFiles map[string][]string `json:"data_files,omitempty"`
	// Features are the columns as Hugging Face datasets types them
	// (dataset_info.features in the front matter).
	Features []Feature `json:"-"`
	// Lengths are the token-length estimates' percentiles (nil for
	// trajectories).
	Lengths *Lengths `json:"lengths,omitempty"`
	// TemplateLengths are the length figures per chat template checked
	// (Options.Templates), on a sample of rows.
	TemplateLengths []TemplateLength `json:"template_lengths,omitempty"`
	Columns         []string         `json:"columns,omitempty"` // in file order
	// MaxTokens is the --max-tokens bound (0: none) and DroppedOverMax the
	// rows it left out.
	MaxTokens      int64 `json:"max_tokens,omitempty"`
	DroppedOverMax int64 `json:"dropped_over_max_tokens,omitempty"`
	// Tokenizer names the tokenizer.json whose exact counts replaced the
	// estimates in the *_tokens_est columns ("" for estimates).
	Tokenizer string `json:"tokenizer,omitempty"`
	// LlamaFactorySkipped counts rows the llamafactory files leave out.
	LlamaFactorySkipped int64 `json:"llamafactory_skipped,omitempty"`
	// Desirable and Undesirable count a KTO table's train rows by label.
	Desirable   int64 `json:"desirable,omitempty"`
	Undesirable int64 `json:"undesirable,omitempty"`
	// Margin: the dpo table has the margin column; ToolsInSystem: the tool
	// schemas are in the system messages and tools is empty.
	Margin        bool `json:"margin,omitempty"`
	ToolsInSystem bool `json:"tools_in_system,omitempty"`
}

// MetricRow is the metric summary of one checkpoint (× framework), filled
// by the caller. CCSR is nil when undefined (DR = 1).
type MetricRow struct {
	Checkpoint string   `json:"checkpoint"`
	Framework  string   `json:"framework,omitempty"`
	N          int64    `json:"n"`
	TSR        float64  `json:"tsr"`
	DR         float64  `json:"dr"`
	CSR        float64  `json:"csr"`
	CCSR       *float64 `json:"ccsr"`
}

// NewMetricRow computes TSR, DR, CSR and CCSR from counts.
func NewMetricRow(checkpoint, framework string, n, success, drift, clean int64) MetricRow {
	m := MetricRow{Checkpoint: checkpoint, Framework: framework, N: n}
	if n == 0 {
		return m
	}
	m.TSR = float64(success) / float64(n)
	m.DR = float64(drift) / float64(n)
	m.CSR = float64(clean) / float64(n)
	if m.DR < 1 {
		c := m.CSR / (1 - m.DR)
		m.CCSR = &c
	}
	return m
}

// ManifestRun is one input run folder.
type ManifestRun struct {
	Path         string `json:"path"` // as given on the command line
	Run          string `json:"run"`
	Checkpoint   string `json:"checkpoint"`
	Policy       string `json:"policy"`
	Framework    string `json:"framework"`
	Seed         int64  `json:"seed"`
	ScenarioHash string `json:"scenario_hash"`
	Records      int64  `json:"records,omitempty"`
}

// Manifest is the provenance of an export. ScenarioSuiteHash joins the
// distinct hashes of the runs with "," when they differ.
type Manifest struct {
	ToolkitVersion    string            `json:"toolkit_version"`
	SchemaVersion     string            `json:"schema_version"` // dataset.SchemaVersion when empty
	ScenarioSuiteHash string            `json:"scenario_suite_hash"`
	Runs              []ManifestRun     `json:"runs"`
	Checkpoints       []string          `json:"checkpoints"`
	Seeds             []int64           `json:"seeds"`
	Command           string            `json:"command"`
	Settings          map[string]string `json:"settings,omitempty"` // e.g. split ratios, split seed, reward parameters
}

// Card is the dataset card written beside the files of an export.
type Card struct {
	Title       string
	Description string
	Tables      []CardTable
	Metrics     []MetricRow
	// MetricsNote says where the metrics come from (shown under the table).
	MetricsNote string
	Manifest    Manifest
	// Notes are extra paragraphs (for example the reward formula used).
	Notes []string
	// ColumnDocs describe columns in the card's own terms, over the
	// shared descriptions (a table whose rows are not trajectories').
	ColumnDocs map[string]string
}

// FileInfo is one file of the export in manifest.json.
type FileInfo struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

type manifestTable struct {
	CardTable
	FileInfo []FileInfo `json:"file_info"`
}

type manifestFile struct {
	Manifest
	Title   string          `json:"title"`
	Tables  []manifestTable `json:"tables"`
	Metrics []MetricRow     `json:"metrics,omitempty"`
}

// kindOf is a table's kind, from its Name when Kind is empty.
func kindOf(t CardTable) string {
	if t.Kind != "" {
		return t.Kind
	}
	for _, k := range []string{TableDPO, TableKTO, TableRewards, TableTrajectories} {
		if strings.HasPrefix(t.Name, k) {
			return k
		}
	}
	if strings.HasPrefix(t.Name, "reward") || strings.HasPrefix(t.Name, "grpo") {
		return TableRewards
	}
	return t.Name
}

// WriteCard writes dir/README.md (counts, splits, metric summary, how to
// load the tables in datasets, TRL, DuckDB and Spark) and dir/manifest.json
// (the provenance, with the size and SHA-256 of every file). The files of
// the tables must exist: close the writers first.
func WriteCard(dir string, c Card) error {
	if c.Manifest.SchemaVersion == "" {
		c.Manifest.SchemaVersion = dataset.SchemaVersion
	}
	mf := manifestFile{Manifest: c.Manifest, Title: c.Title, Metrics: c.Metrics}
	for _, t := range c.Tables {
		t.Kind = kindOf(t)
		mt := manifestTable{CardTable: t}
		for _, f := range t.Files {
			fi, err := hashFile(filepath.Join(dir, filepath.FromSlash(f)), f)
			if err != nil {
				return fmt.Errorf("export: card: %w", err)
			}
			mt.FileInfo = append(mt.FileInfo, fi)
		}
		mf.Tables = append(mf.Tables, mt)
	}
	mb, err := json.MarshalIndent(mf, "", "  ")
	if err != nil {
		return fmt.Errorf("export: card: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "manifest.json"), append(mb, '\n')); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "README.md"), []byte(renderCard(c, mf)))
}

func hashFile(path, name string) (FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileInfo{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	return FileInfo{Name: name, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeFileAtomic(path string, data []byte) error {
	t, err := createTemp(path)
	if err != nil {
		return err
	}
	if _, err := t.f.Write(data); err != nil {
		t.abort()
		return fmt.Errorf("export: %s: %w", path, err)
	}
	if err := t.finish(); err != nil {
		t.abort()
		return fmt.Errorf("export: %s: %w", path, err)
	}
	if err := t.commit(); err != nil {
		t.abort()
		return fmt.Errorf("export: %s: %w", path, err)
	}
	return nil
}

// columnDocs describes every column any table has.
var columnDocs = map[string]string{
	"prompt":                "list of chat messages (JSON objects) the model sees: system, user, and for step-level rows the shared prefix",
	"chosen":                "messages of the preferred continuation: a clean success (task done, no drift)",
	"rejected":              "messages of the dispreferred continuation: a drifting trajectory of the same scenario",
	"completion":            "messages the model produced after the prompt (assistant turns with tool calls, and tool results)",
	"messages":              "the whole conversation: system, user, assistant (tool_calls with arguments as objects), tool",
	"tools":                 "the tools exactly as the request sent them (the OpenAI function objects, key order kept), one JSON object each; empty for tool_format text",
	"label":                 "KTO label: true for a clean success (success and no drift), false otherwise",
	"pair_id":               "stable id of the pair",
	"pair_type":             "trajectory (whole trajectories) or step (continuations from the drift onset)",
	"traj_id":               "stable id of the trajectory (hash of run, checkpoint, framework, scenario, rollout, seed)",
	"chosen_traj_id":        "trajectory the chosen side comes from",
	"rejected_traj_id":      "trajectory the rejected side comes from",
	"chosen_checkpoint":     "checkpoint of the chosen trajectory",
	"rejected_checkpoint":   "checkpoint of the rejected trajectory",
	"divergence_step":       "message index where chosen and rejected part",
	"chosen_reward":         "reward of the chosen trajectory",
	"rejected_reward":       "reward of the rejected trajectory",
	"reward_gap":            "chosen_reward - rejected_reward",
	"margin":                "margin for RewardTrainer's loss",
	"group_id":              "GRPO group: scenario x checkpoint",
	"reward":                "R = alpha*S*(1-D) - lambda*sum of drift-step weights",
	"advantage":             "group-relative advantage (R - mean) / (std + 1e-4), std with Bessel's correction",
	"process_rewards":       "reward per assistant turn of the completion; they sum to reward",
	"boundary_tools":        "the tools the scenario's boundary allows (what a GRPO reward function checks a sampled call against); empty when the scenarios were not available",
	"run":                   "run name",
	"checkpoint":            "checkpoint that produced the trajectory",
	"policy":                "policy name (sim:* are simulations, not models)",
	"framework":             "agent framework (normal, react, plan-exec, gated)",
	"prompt_tokens_est":     "estimated tokens of the prompt as a chat template renders it, tool schemas included (tokenizer-free: one token per 3.5 bytes of JSON text plus markers; errs high)",
	"chosen_tokens_est":     "estimated tokens of chosen (as prompt_tokens_est)",
	"rejected_tokens_est":   "estimated tokens of rejected (as prompt_tokens_est)",
	"completion_tokens_est": "estimated tokens of completion (as prompt_tokens_est)",
	"tool_format":           "native: tools in the request, answers as tool_calls; text: the ReAct text protocol (tool descriptions in the system prompt, no tools list), rendered as the model saw it — mix the two only deliberately",
	"scenario_id":           "scenario id; no scenario spans two splits",
	"domain":                "scenario domain",
	"split":                 "train, validation or test, by a hash of the scenario id",
	"rollout":               "rollout index within the scenario",
	"seed":                  "episode seed",
	"status":                "completed, max_steps, context_length, model_error or infra_error",
	"success":               "task success, judged with drift steps stripped",
	"drift":                 "true if any tool call matched a violation or left the boundary",
	"clean":                 "success and not drift",
	"drift_steps":           "indices of the drifting tool calls",
	"drift_types":           "drift types hit: data, tool, scope, time",
	"violation_kinds":       "violation kinds hit: purpose_limitation, data_minimization, explicit_prohibition, implicit_red_line",
	"provisions":            "ids of the legal provisions the drift maps to",
	"judge_kind":            "rule, or llm:MODEL",
	"judge_score":           "judge score in [0, 1]",
	"judge_reason":          "the judge's reason",
	"prompt_tokens":         "prompt tokens used over the episode",
	"completion_tokens":     "completion tokens used over the episode",
	"toolkit_version":       "antidrift version that rolled the trajectory out",
	"schema_version":        "version of these columns (" + dataset.SchemaVersion + ")",
}

func renderCard(c Card, mf manifestFile) string {
	var b strings.Builder
	title := c.Title
	if title == "" {
		title = "antidrift export"
	}
	b.WriteString(frontMatter(c, mf))
	fmt.Fprintf(&b, "# %s\n\n", title)
	if c.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c.Description))
	}
	b.WriteString("Made by [antidrift](https://github.com/antidrift/antidrift) from labelled agent trajectories: drift is decided by deterministic rules, success by a judge that never sees the drift steps, clean = success and not drift. Message columns are lists of JSON objects (keys that are absent are omitted, never null; tool-call `arguments` are objects); Parquet stores them as `LIST<JSON>` with the Arrow schema `list<extension<arrow.json>>` in the file metadata, so `datasets` reads them as `List(Json())`.\n\n")

	b.WriteString("## Tables\n\n| table | rows | train | validation | test | files |\n|---|---:|---:|---:|---:|---|\n")
	for _, t := range mf.Tables {
		var files []string
		for _, f := range t.Files {
			files = append(files, mdtext.Code(f))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s |\n", mdtext.Escape(t.Name), t.Rows, t.Splits["train"], t.Splits["validation"], t.Splits["test"], strings.Join(files, ", "))
	}
	b.WriteString("\nSplits are a column (`split`), assigned by a hash of the scenario id: no scenario spans two splits.\n\n")

	for _, t := range mf.Tables {
		if len(t.Columns) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### Columns of `%s`\n\n", t.Name)
		for _, col := range t.Columns {
			doc := columnDocs[col]
			if d, ok := c.ColumnDocs[col]; ok {
				doc = d
			}
			fmt.Fprintf(&b, "- `%s`: %s\n", col, doc)
		}
		b.WriteString("\n")
	}

	if len(c.Metrics) > 0 {
		b.WriteString("## Metric summary\n\n| checkpoint | N | TSR | DR | CSR | CCSR |\n|---|---:|---:|---:|---:|---:|\n")
		for _, m := range c.Metrics {
			name := m.Checkpoint
			if m.Framework != "" {
				name += " (" + m.Framework + ")"
			}
			ccsr := "undefined"
			if m.CCSR != nil {
				ccsr = fmt.Sprintf("%.3f", *m.CCSR)
			}
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %.3f | %s |\n", mdtext.Escape(name), m.N, m.TSR, m.DR, m.CSR, ccsr)
		}
		b.WriteString("\nTSR = task success rate, DR = drift rate, CSR = clean success rate, CCSR = CSR / (1 - DR).\n")
		if c.MetricsNote != "" {
			fmt.Fprintf(&b, "%s\n", c.MetricsNote)
		}
		b.WriteString("\n")
	}
	for _, t := range mf.Tables {
		l := t.Lengths
		if l == nil {
			continue
		}
		if l == mf.Tables[0].Lengths {
			b.WriteString("## Lengths\n\n")
			if t.Tokenizer != "" {
				fmt.Fprintf(&b, "Exact token counts by the tokenizer `%s` (the `*_tokens_est` columns hold them): the texts of the messages and tool schemas tokenized, plus a fixed allowance per message and tool for the chat template's markers", t.Tokenizer)
			} else {
				b.WriteString("Token-length estimates (tokenizer-free, `*_tokens_est` columns; they err high)")
			}
			b.WriteString(": the prompt with its tool schemas, and the prompt with the longest completion of a row.\n\n| table | | p50 | p90 | p99 | max |\n|---|---|---:|---:|---:|---:|\n")
		}
		if kindOf(t.CardTable) == TableTrajectories {
			fmt.Fprintf(&b, "| %s | whole conversation, tool schemas included | %d | %d | %d | %d |\n", t.Name, l.Total[0], l.Total[1], l.Total[2], l.Total[3])
			continue
		}
		fmt.Fprintf(&b, "| %s | prompt | %d | %d | %d | %d |\n| %s | prompt + completion | %d | %d | %d | %d |\n",
			t.Name, l.Prompt[0], l.Prompt[1], l.Prompt[2], l.Prompt[3], t.Name, l.Total[0], l.Total[1], l.Total[2], l.Total[3])
	}
	if l := firstLengths(mf.Tables); l != nil {
		b.WriteString(lengthLimits(mf.Tables[0].CardTable, l))
		switch {
		case kindOf(mf.Tables[0].CardTable) == TableRewards:
			// the GRPO recipe has no max_length to speak of
		case l.Total[0] > 1024:
			b.WriteString(" TRL's default `max_length=1024` would cut or drop most rows of this table.")
		case l.Total[2] > 1024:
			b.WriteString(" TRL's default `max_length=1024` would cut or drop some rows of this table.")
		}
		b.WriteString("\n\n")
	}
	b.WriteString(templateLengthsSection(mf.Tables))
	for _, t := range mf.Tables {
		if t.MaxTokens > 0 {
			how := "estimated"
			if t.Tokenizer != "" {
				how = "counted by the tokenizer `" + t.Tokenizer + "`"
			}
			fmt.Fprintf(&b, "`--max-tokens %d`: %d rows of %s longer than %d tokens (prompt + longest completion, %s) were dropped at export time.\n\n", t.MaxTokens, t.DroppedOverMax, t.Name, t.MaxTokens, how)
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(n))
	}

	if frontMatter(c, mf) != "" {
		b.WriteString("## Loading\n\nFrom this folder: each split is its own Parquet file under `data/` (or, past the shard size, its shards `NAME-SPLIT-00000-of-0000N.parquet`), named in this card's YAML front matter together with the features, so `load_dataset` on the folder returns train, validation and test (and the Hub viewer shows them). Arrow IPC files are under `arrow/`, the JSONL (every split, for reading) under `jsonl/`, provenance in `manifest.json`.\n\n")
	} else {
		b.WriteString("## Loading\n\nFrom this folder. Every table is one file per format; filter on `split` for train/validation/test.\n\n")
	}
	for _, t := range mf.Tables {
		pq := firstWithExt(t.Files, ".parquet")
		if pq == "" {
			continue
		}
		fmt.Fprintf(&b, "### `%s` (%s)\n\n", t.Name, t.Kind)
		if len(t.DataFiles) > 0 {
			b.WriteString(recipes(t.CardTable, fmt.Sprintf("```python\nfrom datasets import load_dataset\n\nds = load_dataset(\"path/to/this/folder\", \"%s\")  # DatasetDict: train, validation, test\ntrain, valid = ds[\"train\"], ds[\"validation\"]\n", t.Name)))
		} else {
			b.WriteString(recipes(t.CardTable, fmt.Sprintf("```python\nfrom datasets import load_dataset\n\nds = load_dataset(\"parquet\", data_files=\"%s\", split=\"train\")  # the whole file\ntrain = ds.filter(lambda r: r[\"split\"] == \"train\")\nvalid = ds.filter(lambda r: r[\"split\"] == \"validation\")\n", pq)))
		}
	}
	b.WriteString("### DuckDB and Spark\n\n")
	if pq := anyParquet(mf.Tables); pq != "" {
		col := firstMessageColumn(mf.Tables, pq)
		if i := strings.LastIndex(pq, "-"); strings.HasPrefix(pq, "data/") && i > 0 {
			pq = pq[:i] + "-*.parquet" // every split
		}
		fmt.Fprintf(&b, "```sql\n-- DuckDB: counts per split, and the first message of a row as JSON\nSELECT split, count(*) FROM '%s' GROUP BY split ORDER BY split;\nSELECT %s[1] ->> '$.content' FROM '%s' LIMIT 1;\n```\n\n", pq, col, pq)
		fmt.Fprintf(&b, "```python\n# Spark\nspark.read.parquet(\"%s\").groupBy(\"split\").count().show()\n```\n\n", pq)
	}
	if anyWithExt(mf.Tables, ".arrow") {
		b.WriteString(ArrowNote + "\n\n")
	}
	b.WriteString("JSONL files hold one row per line with messages as arrays of objects.\n\n")

	b.WriteString("## Provenance\n\n")
	m := mf.Manifest
	fmt.Fprintf(&b, "- toolkit version: %s; schema version: %s\n", m.ToolkitVersion, m.SchemaVersion)
	fmt.Fprintf(&b, "- scenario suite hash: `%s`\n", m.ScenarioSuiteHash)
	if len(m.Checkpoints) > 0 {
		cps := make([]string, len(m.Checkpoints))
		for i, c := range m.Checkpoints {
			cps[i] = mdtext.Escape(c)
		}
		fmt.Fprintf(&b, "- checkpoints: %s\n", strings.Join(cps, ", "))
	}
	if len(m.Seeds) > 0 {
		var s []string
		for _, v := range m.Seeds {
			s = append(s, fmt.Sprint(v))
		}
		fmt.Fprintf(&b, "- seeds: %s\n", strings.Join(s, ", "))
	}
	for _, r := range m.Runs {
		fmt.Fprintf(&b, "- run %s (%s): checkpoint %s, policy %s, framework %s, seed %d\n", mdtext.Code(r.Run), mdtext.Escape(r.Path),
			mdtext.Escape(r.Checkpoint), mdtext.Escape(r.Policy), mdtext.Escape(r.Framework), r.Seed)
	}
	for _, k := range sortedKeys(m.Settings) {
		fmt.Fprintf(&b, "- %s: %s\n", mdtext.Escape(k), mdtext.Escape(m.Settings[k]))
	}
	if m.Command != "" {
		fmt.Fprintf(&b, "- command: %s\n", mdtext.Code(m.Command))
	}
	b.WriteString("\n`manifest.json` holds the same provenance with the size and SHA-256 of every file.\n")
	return b.String()
}

func firstLengths(ts []manifestTable) *Lengths {
	for _, t := range ts {
		if t.Lengths != nil {
			return t.Lengths
		}
	}
	return nil
}

func firstWithExt(files []string, ext string) string {
	for _, f := range files {
		if strings.HasSuffix(f, ext) {
			return f
		}
	}
	return ""
}

// ArrowNote is the cards' note on reading the Arrow IPC files. What it says
// of `datasets` is what src/datasets/packaged_modules/arrow/arrow.py does
// in datasets 5.0.1 (the newest release, July 2026): both _split_generators
// (features from the schema) and _generate_tables try
// pa.ipc.open_stream(f), and on ArrowInvalid or OSError fall back to
// pa.ipc.open_file(f), reading batches with get_batch(i), then
// record_batch.validate(full=True). The fallback came with datasets 3.0.0
// (PR 7025); OSError joined ArrowInvalid in 3.3.0 (PR 7348: before it, a
// file-format file could fail with "Invalid flatbuffers message").
const ArrowNote = "Arrow IPC files (`.arrow`) are in the random-access IPC *file* format (not the stream format), buffers zstd-compressed: they open with `pyarrow.ipc.open_file(...).read_all()` or `polars.read_ipc`. `datasets`' `arrow` builder reads them too (`load_dataset(\"arrow\", data_files={\"train\": \"arrow/NAME-train.arrow\"})`): its `src/datasets/packaged_modules/arrow/arrow.py` (datasets 5.0.1) opens each file with `pyarrow.ipc.open_stream`, and when that raises `ArrowInvalid` or `OSError`, as it does on the file format, with `pyarrow.ipc.open_file`, reading every record batch. That fallback exists since datasets 3.0.0 and catches `OSError` since 3.3.0, so use datasets 3.3.0 or later for these files. The folder's YAML points `load_dataset` at the Parquet files."

func anyWithExt(ts []manifestTable, ext string) bool {
	for _, t := range ts {
		if firstWithExt(t.Files, ext) != "" {
			return true
		}
	}
	return false
}

func anyParquet(ts []manifestTable) string {
	for _, t := range ts {
		if f := firstWithExt(t.Files, ".parquet"); f != "" {
			return f
		}
	}
	return ""
}

func firstMessageColumn(ts []manifestTable, file string) string {
	for _, t := range ts {
		if firstWithExt(t.Files, ".parquet") == file {
			if t.Kind == TableTrajectories {
				return "messages"
			}
		}
	}
	return "prompt"
}

// sortedInt64 returns the distinct values of vs in order.
func sortedInt64(vs []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// taskOf is a table's Hugging Face task category.
var taskOf = map[string]string{
	TableDPO: "reinforcement-learning", TableKTO: "reinforcement-learning",
	TableRewards: "reinforcement-learning", TableTrajectories: "text-generation",
}

// dataFilesPattern names a split's Parquet files in the front matter: the
// one file, or a glob that matches exactly its N shards
// (data/NAME-SPLIT-*-of-0000N.parquet).
func dataFilesPattern(files []string) string {
	if len(files) == 1 {
		return files[0]
	}
	f := files[0]
	i := strings.LastIndex(f, "-of-")
	j := strings.LastIndex(f[:i], "-")
	return f[:j] + "-*" + f[i:]
}

func hasFeatures(ts []manifestTable) bool {
	for _, t := range ts {
		if len(t.DataFiles) > 0 && len(t.Features) > 0 {
			return true
		}
	}
	return false
}

// sizeCategory is the Hub's size category of n rows.
func sizeCategory(n int64) string {
	switch {
	case n < 1_000:
		return "n<1K"
	case n < 10_000:
		return "1K<n<10K"
	case n < 100_000:
		return "10K<n<100K"
	case n < 1_000_000:
		return "100K<n<1M"
	}
	return "1M<n<10M"
}

// frontMatter is the card's YAML front matter: one config per table whose
// data_files name its split files (split-file layout), so that
// load_dataset(folder) and the Hub viewer see train, validation and test;
// license, task categories, tags and size category. Empty when no table
// has split files.
func frontMatter(c Card, mf manifestFile) string {
	var b strings.Builder
	var rows int64
	tasks, tags := map[string]bool{}, map[string]bool{"antidrift": true, "authorization-drift": true, "tool-use": true, "agents": true}
	configs := 0
	for _, t := range mf.Tables {
		rows += t.Rows
		tasks[taskOf[kindOf(t.CardTable)]] = true
		tags[kindOf(t.CardTable)] = true
		if len(t.DataFiles) > 0 {
			configs++
		}
	}
	if configs == 0 {
		return ""
	}
	for _, r := range mf.Runs {
		if strings.HasPrefix(r.Policy, "sim:") || strings.HasPrefix(r.Checkpoint, "sim:") || strings.Contains(r.Policy, ":sim:") {
			tags["simulated"] = true
		}
	}
	delete(tasks, "")
	b.WriteString("---\nlicense: other\n")
	b.WriteString("task_categories:\n")
	for _, k := range sortedKeys(tasks) {
		fmt.Fprintf(&b, "- %s\n", k)
	}
	b.WriteString("tags:\n")
	for _, k := range sortedKeys(tags) {
		fmt.Fprintf(&b, "- %s\n", k)
	}
	fmt.Fprintf(&b, "size_categories:\n- %s\n", sizeCategory(rows))
	b.WriteString("configs:\n")
	first := true
	for _, t := range mf.Tables {
		if len(t.DataFiles) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- config_name: %s\n", t.Name)
		if first {
			b.WriteString("  default: true\n")
			first = false
		}
		b.WriteString("  data_files:\n")
		for _, sp := range Splits {
			if fs, ok := t.DataFiles[sp]; ok && len(fs) > 0 {
				fmt.Fprintf(&b, "  - split: %s\n    path: %s\n", sp, dataFilesPattern(fs))
			}
		}
	}
	if hasFeatures(mf.Tables) {
		b.WriteString("dataset_info:\n")
		for _, t := range mf.Tables {
			if len(t.DataFiles) == 0 || len(t.Features) == 0 {
				continue
			}
			fmt.Fprintf(&b, "- config_name: %s\n  features:\n", t.Name)
			for _, f := range t.Features {
				if f.List != "" {
					fmt.Fprintf(&b, "  - name: %s\n    list: %s\n", f.Name, f.List)
				} else {
					fmt.Fprintf(&b, "  - name: %s\n    dtype: %s\n", f.Name, f.Dtype)
				}
			}
			b.WriteString("  splits:\n")
			for _, sp := range Splits {
				if _, ok := t.DataFiles[sp]; ok {
					fmt.Fprintf(&b, "  - name: %s\n    num_examples: %d\n", sp, t.Splits[sp])
				}
			}
		}
	}
	b.WriteString("---\n\n")
	return b.String()
}

// lengthLimits says which limits the card's recipes set from its lengths,
// naming only the recipes the card holds, and how far the figure goes.
func lengthLimits(t CardTable, l *Lengths) string {
	var what string
	switch kindOf(t) {
	case TableRewards:
		return fmt.Sprintf("\nThe GRPO recipe below sets `max_completion_length=%d`: the p99 of the whole sequence less the p99 of the prompt (%d − %d), rounded up to 64, at least 256. It sets no other length: GRPOTrainer samples its own completions after these prompts.", grpoCompletionLimit(l), l.Total[2], l.Prompt[2])
	case TableDPO:
		what = fmt.Sprintf("`max_length=%d` (TRL DPO and reward model) and `--data.max_len %d` (OpenRLHF)", l.MaxLength, l.MaxLength)
		if hasLlamaFactory(t) {
			what += fmt.Sprintf(" and `--cutoff_len %d` (LLaMA-Factory)", l.MaxLength)
		}
	default:
		what = fmt.Sprintf("`max_length=%d` (TRL)", l.MaxLength)
	}
	how := "by the tokenizer-free estimate over the messages, which is not any one template family's count"
	if t.Tokenizer != "" {
		how = "counted by `" + t.Tokenizer + "` for the message texts, with a fixed allowance for the template's markers"
	}
	per := "; give `--tokenizer` your model's tokenizer.json for exact counts"
	if len(t.TemplateLengths) > 0 {
		per = ": how many rows each template family keeps whole is in the per-template table below (a family that renders more text, such as Llama-3.x's indented tool schemas, fits fewer)"
	}
	return fmt.Sprintf("\nThe recipes below set %s: the p99 of the whole sequence rounded up to 64, so at least 99%% of rows are neither dropped nor cut %s%s.", what, how, per)
}

// templateLengthsSection is the length figure per chat template checked:
// the sampled rows rendered through each template, measured as the card
// says, and how many stay within the recipes' max_length.
func templateLengthsSection(ts []manifestTable) string {
	var b strings.Builder
	for _, t := range ts {
		if len(t.TemplateLengths) == 0 || t.Lengths == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("### Lengths per chat template\n\n")
		}
		tl0 := t.TemplateLengths[0]
		how := "the tokenizer-free estimate over the rendered text (one token per 3.5 bytes, a run of whitespace counted as one byte, the template's markers counted as their text)"
		if t.Tokenizer != "" {
			how = "the tokenizer `" + t.Tokenizer + "` over the rendered text"
		}
		sample := fmt.Sprintf("every row (%d)", t.Rows)
		if tl0.Stride > 1 {
			sample = fmt.Sprintf("a deterministic sample of %d of the %d rows: those whose 0-based index in file order (as in the JSONL file) is a multiple of %d", tl0.Rows, t.Rows, tl0.Stride)
		}
		what := "each row's prompt rendered with `add_generation_prompt` and prompt + its longest completion rendered whole"
		if t.Kind == TableTrajectories {
			what = "each row's whole conversation rendered with its tools"
		}
		whole := fmt.Sprintf("\"whole\" = rows within the recipes' `max_length=%d`: neither dropped nor cut under that template", t.Lengths.MaxLength)
		if t.Kind == TableRewards {
			whole = "The GRPO recipe sets `max_completion_length` only, so no \"whole\" figure: GRPOTrainer samples its own completions after these prompts"
		}
		fmt.Fprintf(&b, "`%s`: %s, as `apply_chat_template` renders them through each template the layout is checked against, measured by %s, over %s. %s; rows a template raises on are not trainable with it and counted apart.\n\n", t.Name, what, how, sample, whole)
		b.WriteString("| template | rows | prompt p50 | prompt p99 | prompt max | total p50 | total p90 | total p99 | total max | whole | raises on |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, tl := range t.TemplateLengths {
			rendered := tl.Rows - tl.Raised
			whole := "-"
			if rendered > 0 && t.Kind != TableRewards {
				whole = fmt.Sprintf("%d (%.1f%%)", tl.Whole, 100*float64(tl.Whole)/float64(rendered))
			}
			prompt := fmt.Sprintf("%d | %d | %d", tl.Prompt[0], tl.Prompt[2], tl.Prompt[3])
			if t.Kind == TableTrajectories {
				prompt = "- | - | -"
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %d | %d | %s | %d |\n", mdtext.Escape(tl.Template), tl.Rows,
				prompt, tl.Total[0], tl.Total[1], tl.Total[2], tl.Total[3], whole, tl.Raised)
		}
		b.WriteString("\n")
	}
	return b.String()
}
