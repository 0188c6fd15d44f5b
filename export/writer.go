package export

import (
	"bytes"

	"encoding/json"
	"errors"
	"fmt"
	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/rollout/dataset"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// Formats the writer knows, in the order their files are listed.
const (
	FormatParquet = "parquet"
	FormatArrow   = "arrow"
	FormatJSONL   = "jsonl"
)

// AllFormats lists every format.
var AllFormats = []string{FormatParquet, FormatArrow, FormatJSONL}

// Defaults of Options. A row group (and an Arrow record batch) is cut at
// whichever bound is reached first; memory while writing is about one row
// group, whatever the size of the table.
const (
	DefaultRowGroupRows  = 1024
	DefaultRowGroupBytes = 32 << 20
)

// Options tune a Writer. The zero value is usable.
type Options struct {
	// RowGroupRows bounds the rows of a Parquet row group and of an Arrow
	// record batch (default DefaultRowGroupRows).
	RowGroupRows int
	// RowGroupBytes bounds the buffered bytes of a Parquet row group and of
	// an Arrow record batch (default DefaultRowGroupBytes). For Parquet it
	// is parquet-go's estimate: compressed pages plus values not yet paged.
	RowGroupBytes int64
	// Margin adds the DPO table's `margin` column (RewardTrainer puts it in
	// its loss); every row must then carry a Margin. Ignored for other tables.
	Margin bool
	// ToolkitVersion is recorded in the Parquet created_by and file
	// metadata ("dev" when empty). Files never hold a timestamp, so equal
	// rows and options give byte-identical files.
	ToolkitVersion string
	// SplitFiles writes the Hugging Face layout: one Parquet file per split
	// (data/NAME-train.parquet, -validation, -test; always all three, so the
	// card's configs name files that exist), one Arrow file per split under
	// arrow/, and the JSONL for humans as jsonl/NAME.jsonl. Without it every
	// format is one file, dir/NAME.<format>, holding every split.
	SplitFiles bool
	// MaxTokens, when positive, drops rows longer than it: prompt + the
	// longest completion of a row (the whole conversation for
	// trajectories), as estimated or, with Tokens, counted. Dropped rows
	// are counted (Writer.Dropped) and named in the card.
	MaxTokens int64
	// Tokens, when set, replaces every row's *_tokens_est estimates with
	// exact counts by a tokenizer before the row is checked and written.
	Tokens TokenCounter
	// ToolsInSystem says the rows carry their tool schemas in the system
	// message (dataset.RenderOptions.ToolsInSystem), for the card's recipes.
	ToolsInSystem bool
	// RenderedMessages says the message columns other than tools hold
	// only what rollout/dataset renders (MessagesWith, RenderWith,
	// RenderCompletion, ToolsInSystem): JSON objects by construction, so
	// Write does not check them again. The tools column is checked still:
	// a recorded tool schema is written as recorded.
	RenderedMessages bool
	// ShardBytes bounds each Parquet split file of the split-file layout
	// (default DefaultShardBytes; negative: never shard): a larger split
	// is written as data/NAME-SPLIT-00000-of-0000N.parquet, a smaller one
	// as data/NAME-SPLIT.parquet.
	ShardBytes int64
	// ShardRowGroups bounds the row groups of each Parquet split file of
	// the split-file layout (default DefaultShardRowGroups; negative:
	// never): a split with more is written as shards, as for ShardBytes.
	ShardRowGroups int
	// Templates are the chat templates the rows' layout is checked
	// against (chattemplate.For): the card gives the length figure per
	// template, measured on a sample of rows rendered through each
	// (TemplateSample), by the estimator over the rendered text or by
	// Tokens when it counts text. None: only the message-level figure.
	Templates []*chattemplate.Template
}

// Splits are the dataset splits every split-file layout writes, in order.
var Splits = []string{"train", "validation", "test"}

// SplitFile is the path, relative to the table folder, of a table's file
// of one split and format in the split-file layout (split "" for the one
// JSONL file).
func SplitFile(name, format, split string) string {
	switch format {
	case FormatParquet:
		return "data/" + name + "-" + split + ".parquet"
	case FormatArrow:
		return "arrow/" + name + "-" + split + ".arrow"
	case FormatLlamaFactory:
		return "llamafactory/" + name + "-" + split + ".json"
	}
	return "jsonl/" + name + ".jsonl"
}

func (o Options) withDefaults() Options {
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.RowGroupBytes <= 0 {
		o.RowGroupBytes = DefaultRowGroupBytes
	}
	if o.ToolkitVersion == "" {
		o.ToolkitVersion = "dev"
	}
	if o.ShardBytes == 0 {
		o.ShardBytes = DefaultShardBytes
	}
	if o.ShardRowGroups == 0 {
		o.ShardRowGroups = DefaultShardRowGroups
	}
	return o
}

// sink is one output file of a table.
type sink[R Row] interface {
	write(r *R) error
	// finish completes the temporary file and syncs it; commit renames it.
	finish() error
	commit() error
	abort()
	path() string
}

// Writer streams rows of one table into one file per format:
// dir/name.parquet, dir/name.arrow, dir/name.jsonl. Files are written under
// temporary names and renamed on Close, so a crash never leaves a partial
// file under a final name. A Writer is not safe for concurrent use.
type Writer[R Row] struct {
	table string
	dir   string
	name  string
	cols  []column[R]
	opts  Options
	sinks []sink[R]
	split []string // per sink: the split it holds ("" for every split)
	files []string // final paths: per sink until Close, then per file (shards one by one)
	// fileSplit is the split of each of files after Close.
	fileSplit []string
	// lfInfo: the llamafactory format is written (its dataset_info.json at
	// Close); lfSkipped counts rows its layout cannot hold.
	lfInfo    bool
	lfSkipped int64
	// KTO rows of the train split by label (what KTOTrainer checks)
	desirable, undesirable int64
	rows                   int64
	dropped                int64 // rows over Options.MaxTokens
	splits                 map[string]int64
	promptL                lengthCounts // token-length estimates of the rows, for the card
	totalL                 lengthCounts
	meter                  *templateMeter // per-template lengths (nil without Options.Templates)
	err                    error
	closed                 bool
	scratch                bytes.Buffer
	// validTools holds tool schemas already checked (bounded: a run has
	// about as many as its scenarios have tools).
	validTools map[string]struct{}
}

const (
	validToolsMax     = 4096
	validToolMaxBytes = 64 << 10
)

// ParseFormats reads "parquet,arrow,jsonl".
func ParseFormats(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		if f != FormatParquet && f != FormatArrow && f != FormatJSONL && f != FormatLlamaFactory {
			return nil, fmt.Errorf("unknown format %q: want parquet, arrow, jsonl or llamafactory", f)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no format given: want one or more of parquet, arrow, jsonl")
	}
	return out, nil
}

// Create starts writing table rows of type R to dir/name.<format> for each
// format ("parquet", "arrow", "jsonl"). dir is created if missing.
func Create[R Row](dir, name string, formats []string, opts Options) (*Writer[R], error) {
	opts = opts.withDefaults()
	if name == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("export: invalid table file name %q", name)
	}
	if len(formats) == 0 {
		return nil, errors.New("export: no format given: want one or more of parquet, arrow, jsonl")
	}
	// under the gate: dir is often a staging folder an interrupt sweeps
	if err := tempgate.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	table, cols := tableOf[R](opts.Margin)
	w := &Writer[R]{table: table, dir: dir, name: name, cols: cols, opts: opts, splits: map[string]int64{}}
	w.meter = newTemplateMeter(opts.Templates, opts.Tokens)
	seen := map[string]bool{}
	type target struct{ format, split, final string }
	var targets []target
	for _, f := range formats {
		if seen[f] {
			continue
		}
		seen[f] = true
		switch {
		case f == FormatLlamaFactory && (table != TableDPO || !opts.SplitFiles):
			return nil, fmt.Errorf("export: the llamafactory format holds the dpo table of the split-file layout only (antidrift pairs)")
		case !opts.SplitFiles:
			targets = append(targets, target{f, "", filepath.Join(dir, name+"."+f)})
		case f == FormatJSONL:
			targets = append(targets, target{f, "", filepath.Join(dir, filepath.FromSlash(SplitFile(name, f, "")))})
		default:
			for _, sp := range Splits {
				targets = append(targets, target{f, sp, filepath.Join(dir, filepath.FromSlash(SplitFile(name, f, sp)))})
			}
		}
	}
	for _, tg := range targets {
		f, final := tg.format, tg.final
		if err := tempgate.MkdirAll(filepath.Dir(final), 0o755); err != nil {
			w.abort()
			return nil, fmt.Errorf("export: %w", err)
		}
		var s sink[R]
		var err error
		switch f {
		case FormatParquet:
			if tg.split != "" {
				s = newShardedSink(final, table, cols, opts)
			} else {
				s, err = newParquetSink(final, table, cols, opts)
			}
		case FormatArrow:
			s, err = newArrowSink(final, cols, opts)
		case FormatJSONL:
			s, err = newJSONLSink(final, cols)
		case FormatLlamaFactory:
			s, err = newLlamaFactorySink[R](final, &w.lfSkipped)
			w.lfInfo = true
		default:
			err = fmt.Errorf("export: unknown format %q: want parquet, arrow or jsonl", f)
		}
		if err != nil {
			w.abort()
			return nil, err
		}
		w.sinks = append(w.sinks, s)
		w.split = append(w.split, tg.split)
		w.files = append(w.files, final)
	}
	return w, nil
}

// Write appends one row. Message columns must hold JSON objects (use
// Messages to render recorded messages); nil lists are written as empty
// lists. After an error the Writer is unusable and Close removes its
// temporary files.
func (w *Writer[R]) Write(r *R) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("export: write after Close")
	}
	if w.opts.Tokens != nil {
		c, err := recount(r, w.opts.Tokens)
		if err != nil {
			w.err = fmt.Errorf("export: %s row %d: tokenizer %s: %w", w.table, w.rows+w.dropped+1, w.opts.Tokens.Name(), err)
			return w.err
		}
		r = c
	}
	if w.opts.MaxTokens > 0 {
		n, err := totalTokens(r, w.opts.Tokens)
		if err != nil {
			w.err = fmt.Errorf("export: %s row %d: tokenizer %s: %w", w.table, w.rows+w.dropped+1, w.opts.Tokens.Name(), err)
			return w.err
		}
		if n > w.opts.MaxTokens {
			w.dropped++
			return nil
		}
	}
	if err := w.check(r); err != nil {
		w.err = fmt.Errorf("export: %s row %d: %w", w.table, w.rows+1, err)
		return w.err
	}
	split := splitOf(r)
	if w.opts.SplitFiles && !slices.Contains(Splits, split) {
		w.err = fmt.Errorf("export: %s row %d: split %q: want train, validation or test", w.table, w.rows+1, split)
		return w.err
	}
	for i, s := range w.sinks {
		if w.split[i] != "" && w.split[i] != split {
			continue
		}
		if err := s.write(r); err != nil {
			w.err = fmt.Errorf("export: %s: row %d: %w", s.path(), w.rows+1, err)
			return w.err
		}
	}
	if p, comps, tools, ok := convOf(r); ok && w.meter != nil {
		w.meter.add(w.rows, p, comps, tools)
	}
	w.rows++
	w.splits[split]++
	if p, t, ok := lengthsOf(r); ok {
		w.promptL.add(p)
		w.totalL.add(t)
	} else if n, err := totalTokens(r, w.opts.Tokens); err == nil {
		w.promptL.add(0) // trajectories: the whole conversation
		w.totalL.add(n)
	}
	if k, ok := any(r).(*dataset.KTORow); ok && split == "train" {
		if k.Label {
			w.desirable++
		} else {
			w.undesirable++
		}
	}
	return nil
}

// Admit reports whether Write would keep r under Options.MaxTokens (the
// length counted with Options.Tokens when set), counting it as dropped when
// not: a caller that must know which rows a file holds before it writes
// them (GRPO advantages over the rows kept) asks first and writes only
// what was admitted.
func (w *Writer[R]) Admit(r *R) (bool, error) {
	if w.err != nil {
		return false, w.err
	}
	if w.opts.MaxTokens <= 0 {
		return true, nil
	}
	if w.opts.Tokens != nil {
		c, err := recount(r, w.opts.Tokens)
		if err != nil {
			w.err = fmt.Errorf("export: %s row %d: tokenizer %s: %w", w.table, w.rows+w.dropped+1, w.opts.Tokens.Name(), err)
			return false, w.err
		}
		r = c
	}
	n, err := totalTokens(r, w.opts.Tokens)
	if err != nil {
		w.err = fmt.Errorf("export: %s row %d: tokenizer %s: %w", w.table, w.rows+w.dropped+1, w.opts.Tokens.Name(), err)
		return false, w.err
	}
	if n > w.opts.MaxTokens {
		w.dropped++
		return false, nil
	}
	return true, nil
}

// check validates what the file formats cannot express: every message is a
// JSON object, and a requested margin is present.
func (w *Writer[R]) check(r *R) error {
	for _, c := range w.cols {
		switch c.kind {
		case kMessages:
			if w.opts.RenderedMessages && c.name != "tools" {
				continue
			}
			tools := c.name == "tools"
			for i, m := range c.msgs(r) {
				if tools {
					if _, ok := w.validTools[string(m)]; ok {
						continue // every row of a scenario carries its tool schemas again
					}
				}
				if err := checkObject(m); err != nil {
					return fmt.Errorf("column %s, element %d: %w", c.name, i, err)
				}
				if tools && len(w.validTools) < validToolsMax && len(m) <= validToolMaxBytes {
					if w.validTools == nil {
						w.validTools = map[string]struct{}{}
					}
					w.validTools[string(m)] = struct{}{}
				}
			}
		case kOptFloat64:
			if c.optf(r) == nil {
				return fmt.Errorf("column %s requested (Options.Margin) but the row has none", c.name)
			}
		}
	}
	return nil
}

func checkObject(m json.RawMessage) error {
	t := bytes.TrimLeft(m, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return errors.New("not a JSON object")
	}
	if !dataset.ValidJSON(m) { // json.Valid's verdict, several times faster
		return errors.New("invalid JSON")
	}
	return nil
}

// LlamaFactorySkipped counts the rows the llamafactory files leave out
// (chosen or rejected not one assistant turn).
func (w *Writer[R]) LlamaFactorySkipped() int64 { return w.lfSkipped }

// Dropped returns the number of rows left out for being longer than
// Options.MaxTokens.
func (w *Writer[R]) Dropped() int64 { return w.dropped }

// Rows returns the number of rows written.
func (w *Writer[R]) Rows() int64 { return w.rows }

// Splits returns the number of rows per split.
func (w *Writer[R]) Splits() map[string]int64 {
	out := make(map[string]int64, len(w.splits))
	for k, v := range w.splits {
		out[k] = v
	}
	return out
}

// Files returns the final paths of the files, one per format.
func (w *Writer[R]) Files() []string { return append([]string(nil), w.files...) }

// Table returns the table kind: "dpo", "kto", "rewards" or "trajectories".
func (w *Writer[R]) Table() string { return w.table }

// CardTable describes what was written, for the dataset card; name is the
// table's title in the card. Files are relative to the table folder.
func (w *Writer[R]) CardTable(name string) CardTable {
	files := make([]string, len(w.files))
	dataFiles := map[string][]string{}
	for i, f := range w.files {
		files[i] = filepath.Base(f)
		if w.opts.SplitFiles {
			files[i] = filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(f)), filepath.Base(f)))
			if strings.HasSuffix(f, ".parquet") && i < len(w.fileSplit) {
				dataFiles[w.fileSplit[i]] = append(dataFiles[w.fileSplit[i]], files[i])
			}
		}
	}
	ct := CardTable{Name: name, Kind: w.table, Rows: w.rows, Splits: w.Splits(), Files: files, DataFiles: dataFiles,
		Columns: ColumnNames[R](w.opts.Margin), Features: featuresOf(w.cols), Lengths: summariseLengths(&w.promptL, &w.totalL),
		MaxTokens: w.opts.MaxTokens, DroppedOverMax: w.dropped}
	if w.opts.Tokens != nil {
		ct.Tokenizer = w.opts.Tokens.Name()
	}
	if ct.Lengths != nil {
		limit := ct.Lengths.MaxLength
		if w.table == TableRewards {
			limit = 0 // the GRPO recipe bounds the completion only
		}
		ct.TemplateLengths = w.meter.results(limit)
	}
	ct.LlamaFactorySkipped = w.lfSkipped
	ct.Desirable, ct.Undesirable = w.desirable, w.undesirable
	ct.Margin, ct.ToolsInSystem = w.opts.Margin && w.table == TableDPO, w.opts.ToolsInSystem
	return ct
}

// Close completes every file and renames it to its final name. After an
// earlier error it removes the temporary files and returns that error.
func (w *Writer[R]) Close() error {
	if w.closed || w.err != nil {
		w.meter.abandon()
	}
	// the sampled rows waiting are rendered while the files are finished
	w.meter.finishInput()
	defer w.meter.finish()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		w.abort()
		return w.err
	}
	for _, s := range w.sinks {
		if err := s.finish(); err != nil {
			w.abort()
			w.err = fmt.Errorf("export: %s: %w", s.path(), err)
			return w.err
		}
	}
	// the shards' names are known now
	var files, split []string
	for i, s := range w.sinks {
		if sh, ok := s.(*shardedSink[R]); ok {
			for _, f := range sh.finals() {
				files, split = append(files, f), append(split, w.split[i])
			}
			continue
		}
		files, split = append(files, w.files[i]), append(split, w.split[i])
	}
	w.files, w.fileSplit = files, split
	for _, s := range w.sinks {
		if err := s.commit(); err != nil {
			w.abort()
			w.err = fmt.Errorf("export: %s: %w", s.path(), err)
			return w.err
		}
	}
	if w.lfInfo {
		p := filepath.Join(w.dir, filepath.FromSlash(LlamaFactoryInfo))
		if err := writeFileAtomic(p, llamaFactoryInfo(w.name)); err != nil {
			w.err = err
			return w.err
		}
		w.files, w.fileSplit = append(w.files, p), append(w.fileSplit, "")
	}
	if w.opts.SplitFiles {
		var bases, written []string
		for _, sp := range Splits {
			bases = append(bases, SplitFile(w.name, FormatParquet, sp))
		}
		for _, f := range w.files {
			if rel, err := filepath.Rel(w.dir, f); err == nil {
				written = append(written, filepath.ToSlash(rel))
			}
		}
		if err := RemoveStaleShards(w.dir, bases, written); err != nil {
			w.err = fmt.Errorf("export: %w", err)
			return w.err
		}
	}
	dirs := map[string]bool{}
	for _, f := range w.files {
		if d := filepath.Dir(f); !dirs[d] {
			dirs[d] = true
			_ = syncDir(d)
		}
	}
	return nil
}

// Abort stops writing and removes the temporary files; final files written
// by earlier exports are left as they were.
func (w *Writer[R]) Abort() {
	w.meter.abandon()
	if !w.closed {
		w.closed = true
		if w.err == nil {
			w.err = errors.New("export: writer aborted")
		}
	}
	w.abort()
}

func (w *Writer[R]) abort() {
	for _, s := range w.sinks {
		s.abort()
	}
}

// tempFile is an output file written under a temporary name beside its
// final name.
type tempFile struct {
	final string
	f     *os.File
	done  bool
}

func createTemp(final string) (*tempFile, error) {
	dir, base := filepath.Split(final)
	f, err := tempgate.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return &tempFile{final: final, f: f}, nil
}

// finish syncs and closes the temporary file.
func (t *tempFile) finish() error {
	if err := t.f.Chmod(0o644); err != nil {
		return err
	}
	if err := t.f.Sync(); err != nil {
		return err
	}
	return t.f.Close()
}

func (t *tempFile) commit() error {
	if err := os.Rename(t.f.Name(), t.final); err != nil {
		return err
	}
	t.done = true
	return nil
}

func (t *tempFile) abort() {
	if t.done {
		return
	}
	t.f.Close()
	os.Remove(t.f.Name())
	t.done = true
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
