package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/ardanlabs/jinja"
	"go.yaml.in/yaml/v3"

	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/rollout/dataset"
)

// Trainers VerifyDir knows, as --trainer names them.
const (
	TrainerTRL          = "trl"
	TrainerOpenRLHF     = "openrlhf"
	TrainerLlamaFactory = "llamafactory"
)

// ErrVerify is returned by VerifyDir when a trainer would fail on, drop or
// mis-read some rows; the report says which.
var ErrVerify = errors.New("verify: rows a trainer would fail on")

// VerifyDir re-reads an export folder as the named trainer's loader reads
// it and writes what would fail to w: for TRL and OpenRLHF, the card's YAML
// configs and their Parquet split files (read with arrow-go, as datasets
// reads them with pyarrow: every column, every row), the columns each
// trainer takes, the message shape (role and content strings, tool-call
// arguments objects unless the rows were written for DeepSeek-V3), tools
// a template can render, and each row's length against the limit the
// card's recipes set; for LLaMA-Factory, dataset_info.json and its sharegpt
// files (alternating turns, one message per preference side). It returns
// ErrVerify when anything would fail.
func VerifyDir(w io.Writer, dir, trainer string) error {
	var m manifestFile
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return fmt.Errorf("%s: not an antidrift export folder: %w", dir, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	v := &verifier{w: w, dir: dir, trainer: trainer, compat: m.Settings["template_compat"], toolsInSystem: m.Settings["tools_in_system"] != ""}
	switch trainer {
	case TrainerTRL, TrainerOpenRLHF:
		compat, err := dataset.ParseCompat(v.compat)
		if err != nil {
			return fmt.Errorf("%s: settings.template_compat: %w", filepath.Join(dir, "manifest.json"), err)
		}
		v.templates = chattemplate.For(compat)
		names := make([]string, len(v.templates))
		for i, t := range v.templates {
			names[i] = t.Name
		}
		fmt.Fprintf(w, "  rendering every row through the chat templates of its layout: %s\n", strings.Join(names, ", "))
		if err := v.configs(m); err != nil {
			return err
		}
	case TrainerLlamaFactory:
		if err := v.llamaFactory(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--trainer %q: want trl, openrlhf or llamafactory", trainer)
	}
	if v.problems > 0 {
		fmt.Fprintf(w, "\n%d problems: %s would fail on, drop or mis-read the rows above\n", v.problems, trainer)
		return ErrVerify
	}
	fmt.Fprintf(w, "\n%d rows in %d files read as %s reads them: nothing would fail\n", v.rows, v.files, trainer)
	return nil
}

type verifier struct {
	w                    io.Writer
	dir, trainer, compat string
	toolsInSystem        bool
	// templates are the chat templates the rows' layout is written for
	// (the card names them): every row is rendered through each.
	templates      []*chattemplate.Template
	problems, rows int
	files          int
}

// problem reports one kind of failure once per file, with its count.
func (v *verifier) report(file string, counts map[string]int, first map[string]string) {
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if strings.HasPrefix(k, "longer than") {
			// by design about 1% of rows pass the p99 the recipes set
			fmt.Fprintf(v.w, "  WARN %s: %d rows: %s (first: %s)\n", file, counts[k], k, first[k])
			continue
		}
		if w, ok := strings.CutPrefix(k, warnPrefix); ok {
			fmt.Fprintf(v.w, "  WARN %s: %d rows: %s (first: %s)\n", file, counts[k], w, first[k])
			continue
		}
		fmt.Fprintf(v.w, "  FAIL %s: %d rows: %s (first: %s)\n", file, counts[k], k, first[k])
		v.problems += counts[k]
	}
}

// configs checks every split file the card's YAML names, per config.
func (v *verifier) configs(m manifestFile) error {
	card, err := os.ReadFile(filepath.Join(v.dir, "README.md"))
	if err != nil {
		return err
	}
	parts := bytes.SplitN(card, []byte("---\n"), 3)
	if len(parts) < 3 || len(parts[0]) != 0 {
		fmt.Fprintf(v.w, "  FAIL README.md: no YAML front matter: load_dataset(folder) finds no configs or splits\n")
		v.problems++
		return nil
	}
	var fm struct {
		Configs []struct {
			Name      string `yaml:"config_name"`
			DataFiles []struct {
				Split string `yaml:"split"`
				Path  string `yaml:"path"`
			} `yaml:"data_files"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal(parts[1], &fm); err != nil {
		fmt.Fprintf(v.w, "  FAIL README.md: the YAML front matter does not parse: %v\n", err)
		v.problems++
		return nil
	}
	limits := map[string]int64{}
	for _, t := range m.Tables {
		if t.Lengths != nil {
			limits[t.Name] = t.Lengths.MaxLength
		}
	}
	for _, c := range fm.Configs {
		fmt.Fprintf(v.w, "config %s:\n", c.Name)
		for _, df := range c.DataFiles {
			paths, err := filepath.Glob(filepath.Join(v.dir, filepath.FromSlash(df.Path)))
			if err != nil || len(paths) == 0 {
				fmt.Fprintf(v.w, "  FAIL %s: split %s names no file\n", df.Path, df.Split)
				v.problems++
				continue
			}
			for _, p := range paths {
				if err := v.parquetFile(p, c.Name, df.Split, limits[c.Name]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// parquetFile reads one split file row by row and checks its rows.
func (v *verifier) parquetFile(path, table, split string, limit int64) error {
	rel, _ := filepath.Rel(v.dir, path)
	rdr, err := file.OpenParquetFile(path, false, file.WithReadProps(parquet.NewReaderProperties(memory.DefaultAllocator)))
	if err != nil {
		fmt.Fprintf(v.w, "  FAIL %s: not a readable Parquet file: %v\n", rel, err)
		v.problems++
		return nil
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 256}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	typed := fr.Manifest.OriginSchema
	if typed == nil {
		fmt.Fprintf(v.w, "  FAIL %s: no Arrow schema in the file metadata: datasets reads the message columns as bytes, not List(Json())\n", rel)
		v.problems++
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	defer rr.Release()
	counts, first := map[string]int{}, map[string]string{}
	fail := func(row int, kind, detail string) {
		if counts[kind] == 0 {
			first[kind] = fmt.Sprintf("row %d%s", row, detail)
		}
		counts[kind]++
	}
	n := 0
	for rr.Next() {
		rec := rr.RecordBatch()
		rows := make([]map[string]json.RawMessage, rec.NumRows())
		for i := range rows {
			row := map[string]json.RawMessage{}
			for c := 0; c < int(rec.NumCols()); c++ {
				isJSON := typed != nil && c < typed.NumFields() && holdsJSON(typed.Field(c).Type)
				row[rec.ColumnName(c)] = marshal(cellValue(rec.Column(c), i, isJSON))
			}
			rows[i] = row
		}
		found := v.templateBatch(rows)
		for i, row := range rows {
			v.checkRow(n, row, table, limit, fail)
			for _, f := range found[i] {
				fail(n, f.kind, f.detail)
			}
			n++
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(v.w, "  FAIL %s: reading row %d: %v\n", rel, n, err)
		v.problems++
	}
	v.rows += n
	v.files++
	fmt.Fprintf(v.w, "  %s (%s): %d rows\n", rel, split, n)
	v.report(rel, counts, first)
	return nil
}

// columnsFor are the message columns a trainer takes from a table, by the
// columns the table has.
func columnsFor(row map[string]json.RawMessage) (kind string, msgCols []string) {
	switch {
	case row["chosen"] != nil:
		return TableDPO, []string{"prompt", "chosen", "rejected"}
	case row["label"] != nil:
		return TableKTO, []string{"prompt", "completion"}
	case row["group_id"] != nil:
		return TableRewards, []string{"prompt"}
	case row["messages"] != nil:
		return TableTrajectories, []string{"messages"}
	}
	return "", nil
}

type verifyMsg struct {
	Role      *string         `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (v *verifier) checkRow(i int, row map[string]json.RawMessage, table string, limit int64, fail func(int, string, string)) {
	kind, cols := columnsFor(row)
	if kind == "" {
		fail(i, "not a table a trainer recipe reads (no chosen, label, group_id or messages column)", "")
		return
	}
	for _, col := range cols {
		var msgs []verifyMsg
		if err := json.Unmarshal(row[col], &msgs); err != nil {
			fail(i, fmt.Sprintf("%s is not a list of message objects", col), ": "+err.Error())
			continue
		}
		if len(msgs) == 0 {
			fail(i, fmt.Sprintf("%s is empty", col), "")
			continue
		}
		for k, m := range msgs {
			var content string
			if m.Role == nil || *m.Role == "" {
				fail(i, "a message without a role", fmt.Sprintf(", %s[%d]", col, k))
			}
			if json.Unmarshal(m.Content, &content) != nil {
				fail(i, "a message whose content is not a string (Qwen3, Phi-3.5 and LFM2 templates fail on it)", fmt.Sprintf(", %s[%d]", col, k))
			}
			for _, tc := range m.ToolCalls {
				a := bytes.TrimSpace(tc.Function.Arguments)
				isObj := len(a) > 0 && a[0] == '{'
				switch {
				case v.compat == "deepseek" && (len(a) == 0 || a[0] != '"'):
					fail(i, "tool-call arguments not a JSON string in rows written for DeepSeek-V3", fmt.Sprintf(", %s[%d]", col, k))
				case v.compat != "deepseek" && !isObj:
					fail(i, "tool-call arguments not an object (chat templates render them with tojson: double-encoded)", fmt.Sprintf(", %s[%d]", col, k))
				}
			}
		}
		if col == "prompt" && (kind == TableDPO || kind == TableKTO) {
			var last struct {
				Role string `json:"role"`
			}
			_ = json.Unmarshal(lastRaw(row[col]), &last)
			if last.Role == "assistant" {
				fail(i, "the prompt ends on an assistant turn: the completion would continue it, not answer", "")
			}
		}
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(row["tools"], &tools)
	if v.trainer == TrainerOpenRLHF && len(tools) > 0 {
		fail(i, "tools in the tools column: OpenRLHF passes no tools to the chat template (export with --tools-in-system)", "")
	}
	for _, t := range tools {
		var tl struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(t, &tl) != nil || tl.Type != "function" || tl.Function.Name == "" {
			fail(i, "a tool that is not {\"type\": \"function\", \"function\": {\"name\", …}}", "")
		}
	}
	if v.trainer == TrainerTRL && kind == TableKTO {
		var label bool
		if json.Unmarshal(row["label"], &label) != nil {
			fail(i, "label is not a bool (KTOTrainer reads it as one)", "")
		}
	}
	if limit > 0 && kind != TableRewards && kind != TableTrajectories {
		total := num(row["prompt_tokens_est"]) + max(num(row["chosen_tokens_est"]), num(row["rejected_tokens_est"]), num(row["completion_tokens_est"]))
		if total > limit {
			fail(i, fmt.Sprintf("longer than the recipes' limit %d (the trainer drops or cuts it)", limit), fmt.Sprintf(": %d tokens", total))
		}
	}
}

// warnPrefix marks a kind of finding that is reported but is not a failure.
const warnPrefix = "warn: "

// finding is one kind of failure on a row, with its detail.
type finding struct{ kind, detail string }

// templateFindings renders the row's conversations through each template
// of its layout: the prompt with the generation prompt must be a prefix of
// prompt + completion (each side of a pair; for a trajectory, each
// assistant turn after what precedes it), or the trainer splits the
// completion in the wrong place. It reads only the row, so rows are
// rendered in parallel.
func (v *verifier) templateFindings(row map[string]json.RawMessage) []finding {
	kind, _ := columnsFor(row)
	if len(v.templates) == 0 || kind == "" {
		return nil
	}
	list := func(col string) ([]jinja.Value, bool) {
		x, err := chattemplate.Decode(row[col])
		if err != nil || !x.IsList() {
			return nil, false // reported by the message checks
		}
		return x.AsList().Items, true
	}
	tools := jinja.None()
	if tv, err := chattemplate.Decode(row["tools"]); err == nil && tv.IsList() && len(tv.AsList().Items) > 0 {
		tools = tv
	}
	type conv struct {
		where              string
		prompt, completion []jinja.Value
	}
	var convs []conv
	switch kind {
	case TableDPO:
		p, ok1 := list("prompt")
		c, ok2 := list("chosen")
		r, ok3 := list("rejected")
		if ok1 && ok2 && ok3 {
			convs = append(convs, conv{"chosen", p, c}, conv{"rejected", p, r})
		}
	case TableKTO, TableRewards:
		p, ok1 := list("prompt")
		c, ok2 := list("completion")
		if ok1 && ok2 && len(c) > 0 {
			convs = append(convs, conv{"completion", p, c})
		}
	case TableTrajectories:
		msgs, ok := list("messages")
		if !ok {
			return nil
		}
		for k := 1; k < len(msgs); k++ {
			if role, ok := msgs[k].AsDict().Get("role"); ok && role.IsString() && role.AsString() == "assistant" {
				convs = append(convs, conv{fmt.Sprintf("messages[%d]", k), msgs[:k], msgs[k : k+1]})
			}
		}
	}
	var out []finding
	for _, t := range v.templates {
		for _, c := range convs {
			_, err := t.CheckPrefix(c.prompt, c.completion, tools)
			switch {
			case err == nil:
				continue
			case errors.Is(err, chattemplate.ErrSeveralCalls):
				out = append(out, finding{warnPrefix + t.Name + " takes one tool call per assistant turn and raises on more: rows with such a turn cannot be trained with it", ", " + c.where})
			case errors.Is(err, chattemplate.ErrNotPrefix):
				out = append(out, finding{t.Name + ": the prompt rendered with add_generation_prompt is not a prefix of prompt + completion (the trainer splits the completion in the wrong place)", ", " + c.where})
			default:
				out = append(out, finding{t.Name + ": the chat template raises on the row", ", " + c.where + ": " + err.Error()})
			}
			break // one finding per template and row
		}
	}
	return out
}

// templateBatch renders a batch of rows on every core and returns each
// row's findings in row order.
func (v *verifier) templateBatch(rows []map[string]json.RawMessage) [][]finding {
	out := make([][]finding, len(rows))
	if len(v.templates) == 0 {
		return out
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(rows)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = v.templateFindings(rows[i])
			}
		}()
	}
	for i := range rows {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func lastRaw(col json.RawMessage) json.RawMessage {
	var ms []json.RawMessage
	if json.Unmarshal(col, &ms) != nil || len(ms) == 0 {
		return nil
	}
	return ms[len(ms)-1]
}

func num(r json.RawMessage) int64 {
	var n int64
	_ = json.Unmarshal(r, &n)
	return n
}

// llamaFactory checks dataset_info.json and the sharegpt files it names.
func (v *verifier) llamaFactory() error {
	lf := filepath.Join(v.dir, "llamafactory")
	b, err := os.ReadFile(filepath.Join(v.dir, filepath.FromSlash(LlamaFactoryInfo)))
	if err != nil {
		fmt.Fprintf(v.w, "  FAIL llamafactory/dataset_info.json: %v (export pairs with --format …,llamafactory)\n", err)
		v.problems++
		return nil
	}
	var info map[string]struct {
		FileName   string `json:"file_name"`
		Formatting string `json:"formatting"`
		Ranking    bool   `json:"ranking"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		fmt.Fprintf(v.w, "  FAIL llamafactory/dataset_info.json: %v\n", err)
		v.problems++
		return nil
	}
	names := make([]string, 0, len(info))
	for k := range info {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		e := info[name]
		rel := "llamafactory/" + e.FileName
		fb, err := os.ReadFile(filepath.Join(lf, e.FileName))
		if err != nil {
			fmt.Fprintf(v.w, "  FAIL %s (%s): %v\n", rel, name, err)
			v.problems++
			continue
		}
		var rows []struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
			Chosen   *struct{ From, Value string } `json:"chosen"`
			Rejected *struct{ From, Value string } `json:"rejected"`
		}
		if err := json.Unmarshal(fb, &rows); err != nil {
			fmt.Fprintf(v.w, "  FAIL %s: not a JSON list of sharegpt rows: %v\n", rel, err)
			v.problems++
			continue
		}
		counts, first := map[string]int{}, map[string]string{}
		for i, r := range rows {
			bad := func(kind string) {
				if counts[kind] == 0 {
					first[kind] = fmt.Sprintf("row %d", i)
				}
				counts[kind]++
			}
			for k, c := range r.Conversations {
				user := c.From == "human" || c.From == "observation"
				if user != (k%2 == 0) {
					bad("conversations do not alternate human/observation with gpt/function_call (LLaMA-Factory's sharegpt check)")
					break
				}
			}
			if len(r.Conversations)%2 == 0 {
				bad("conversations end on a model turn: the preference sides would not answer it")
			}
			if e.Ranking && (r.Chosen == nil || r.Rejected == nil) {
				bad("a ranking row without chosen and rejected")
			}
		}
		v.rows += len(rows)
		v.files++
		fmt.Fprintf(v.w, "  %s (%s): %d rows\n", rel, name, len(rows))
		v.report(rel, counts, first)
	}
	return nil
}
