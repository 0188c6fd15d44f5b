package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/antidrift/antidrift/export"
	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/export/hftok"
	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/spf13/pflag"
)

// tableFlags are the output flags of every command that writes tables
// (pairs, rewards, export). One split seed default across them keeps a
// scenario in the same split in every table.
type tableFlags struct {
	out, formats, split string
	seed                int64
	partial             partialFlag
	maxTokens           int64
	tokenizer           string
	reasoning           bool
	completion          string
	defCompletion       dataset.Completion // the command's default layout
	preOnset            string
	templateCompat      string
	shardBytes          byteSize
	shardRowGroups      int
	toolsInSystem       bool
}

func (t *tableFlags) add(fl *pflag.FlagSet, seedHelp string) {
	fl.StringVar(&t.out, "out", "", "output folder")
	fl.StringVar(&t.formats, "format", "parquet,arrow,jsonl", "file formats, comma-separated: parquet, arrow, jsonl")
	fl.StringVar(&t.split, "split", "0.8,0.1,0.1", "train,validation,test shares of scenarios (the same for every table)")
	fl.Int64Var(&t.seed, "seed", 1, seedHelp)
	t.partial.add(fl)
	fl.BoolVar(&t.reasoning, "include-reasoning", false, "keep the model's reasoning in exported messages (as reasoning_content); by default it is left out, since the policy never showed it as its answer")
	fl.StringVar(&t.completion, "completion", "", "what a completion holds: turn (KTO and rewards default: one row per assistant turn, the conversation before it, tool results included, as the prompt), rest (trajectory pairs' default: everything after the prompt, tool results included, with a per-message train mask on pairs) or model-turns (the assistant turns only, tool results removed: later calls then use ids from results the row omits; not recommended)")
	fl.StringVar(&t.templateCompat, "template-compat", "none", "rewrite rows for chat templates the default layout breaks: mistral (system merged into the first user turn, 9-character tool-call ids), gemma (no system, tool or tool-call roles: system and tool schemas in the first user turn, calls as JSON text, tool results as user turns) or deepseek (tool-call arguments as JSON strings); none keeps the OpenAI layout (Qwen, Llama-3.x, Phi-3.5)")
	fl.BoolVar(&t.toolsInSystem, "tools-in-system", false, "write the tool schemas into each row's system message and leave tools empty, for trainers that pass no tools to the chat template (OpenRLHF); TRL renders the tools column itself, so leave this off for TRL")
	t.shardBytes = export.DefaultShardBytes
	fl.Var(&t.shardBytes, "shard-bytes", "bound on one Parquet split file, in bytes (256MiB, 300MB and 268435456 are alike understood): a larger split is written as shards data/TABLE-SPLIT-00000-of-0000N.parquet (as the Hugging Face Hub names them), all named in the card's YAML")
	fl.IntVar(&t.shardRowGroups, "shard-row-groups", export.DefaultShardRowGroups, "bound on the row groups of one Parquet split file, as --shard-bytes bounds its bytes: the writer holds every row group's footer entries until the file is closed, so this bounds its memory on large tables")
	fl.Int64Var(&t.maxTokens, "max-tokens", 0, "drop rows whose prompt + longest completion (the whole conversation for trajectories) is longer than this many tokens, estimated or counted with --tokenizer; 0 keeps every row")
	fl.StringVar(&t.tokenizer, "tokenizer", "", "Hugging Face tokenizer.json: exact token counts in the *_tokens_est columns, the card and --max-tokens instead of the tokenizer-free estimate")
}

// lengthOptions adds --max-tokens and --tokenizer to writer options.
func (t tableFlags) lengthOptions(o export.Options) (export.Options, error) {
	if t.maxTokens < 0 {
		return o, fmt.Errorf("--max-tokens %d: want 0 (no limit) or more", t.maxTokens)
	}
	o.MaxTokens = t.maxTokens
	o.ToolsInSystem = t.toolsInSystem
	if t.shardBytes <= 0 {
		return o, fmt.Errorf("--shard-bytes %s: want a positive number of bytes", t.shardBytes.String())
	}
	o.ShardBytes = int64(t.shardBytes)
	if t.shardRowGroups <= 0 {
		return o, fmt.Errorf("--shard-row-groups %d: want a positive number of row groups", t.shardRowGroups)
	}
	o.ShardRowGroups = t.shardRowGroups
	// the card gives the length figure per template the layout is checked against
	o.Templates = chattemplate.For(t.render().Compat)
	if t.tokenizer != "" {
		c, err := hftok.Load(t.tokenizer)
		if err != nil {
			return o, err
		}
		o.Tokens = c
	}
	return o, nil
}

// lengthSettings records --max-tokens and --tokenizer (by file name, never
// a path) in the manifest settings.
func (t tableFlags) lengthSettings(settings map[string]string) {
	if t.maxTokens > 0 {
		settings["max_tokens"] = fmt.Sprint(t.maxTokens)
	}
	if t.tokenizer != "" {
		settings["tokenizer"] = filepath.Base(t.tokenizer)
	}
}

// render is the message rendering the flags ask for (parse has checked
// --completion).
func (t tableFlags) render() dataset.RenderOptions {
	c, _ := dataset.ParseCompletion(t.completion, t.defCompletion)
	compat, _ := dataset.ParseCompat(t.templateCompat)
	return dataset.RenderOptions{Reasoning: t.reasoning, Completion: c, ToolsInSystem: t.toolsInSystem, Compat: compat}
}

// completionSettings records the completion layout (and --tools-in-system)
// in the manifest.
func (t tableFlags) completionSettings(settings map[string]string) {
	settings["completion"] = t.render().Completion.String()
	if t.defCompletion == dataset.CompletionTurn && t.render().Completion == dataset.CompletionTurn {
		settings["pre_onset"] = string(t.preOnsetValue())
	}
	if t.toolsInSystem {
		settings["tools_in_system"] = "true: the tool schemas are in each row's system message and the tools column is empty"
	}
	if c := t.render().Compat; c != dataset.CompatNone {
		settings["template_compat"] = string(c)
	}
}

// parse checks the formats, split shares and completion layout.
func (t tableFlags) parse() ([]string, dataset.Ratios, error) {
	formats, err := export.ParseFormats(t.formats)
	if err != nil {
		return nil, dataset.Ratios{}, err
	}
	if _, err := dataset.ParseCompat(t.templateCompat); err != nil {
		return nil, dataset.Ratios{}, fmt.Errorf("--%w", err)
	}
	c, err := dataset.ParseCompletion(t.completion, t.defCompletion)
	if err != nil {
		return nil, dataset.Ratios{}, fmt.Errorf("--%w", err)
	}
	if c == dataset.CompletionTurn && t.defCompletion != dataset.CompletionTurn {
		return nil, dataset.Ratios{}, fmt.Errorf("--completion turn applies to the KTO and rewards tables; pairs of single turns are step pairs (the pairs default, --step-continuation turn)")
	}
	if t.defCompletion == dataset.CompletionTurn {
		if _, err := dataset.ParsePreOnset(t.preOnset); err != nil {
			return nil, dataset.Ratios{}, fmt.Errorf("--%w", err)
		}
	}
	ratios, err := dataset.ParseRatios(t.split)
	if err != nil {
		return nil, dataset.Ratios{}, err
	}
	return formats, ratios, nil
}

// printDropped reports the rows --max-tokens dropped.
func printDropped(w io.Writer, t tableFlags, dropped, written int64) {
	if t.maxTokens <= 0 {
		return
	}
	how := "estimated"
	if t.tokenizer != "" {
		how = "counted by " + filepath.Base(t.tokenizer)
	}
	fmt.Fprintf(w, "--max-tokens %d: dropped %d rows longer than that (%s), kept %d\n", t.maxTokens, dropped, how, written)
}

// addPreOnset adds --pre-onset (KTO), whose value parse checks.
func (t *tableFlags) addPreOnset(fl *pflag.FlagSet) {
	fl.StringVar(&t.preOnset, "pre-onset", string(dataset.PreOnsetDrop), "per-turn KTO rows: how to label the turns of a drifting trajectory before its drift onset: drop (leave them out), desirable or undesirable")
}

func (t tableFlags) preOnsetValue() dataset.PreOnset {
	p, _ := dataset.ParsePreOnset(t.preOnset)
	return p
}

// templatesNote names the chat templates rows of this layout are checked
// against (TestChatTemplatesRenderEveryRow renders every row of such
// tables through them) and what holds under each.
func templatesNote(c dataset.Compat) string {
	const head = "**Chat templates checked** (the real templates, rendered as `apply_chat_template` renders them, over tables written this way; \"prefix\" = the prompt rendered with `add_generation_prompt` is a prefix of prompt + completion, so a trainer splits the completion where it starts): "
	switch c {
	case dataset.CompatMistral:
		return head + "Mistral-7B-Instruct-v0.3 and Mistral-Nemo-Instruct-2407 tool templates: prefix holds, every call rendered with its arguments and its 9-character id; Qwen2.5-Instruct: prefix holds. Rows of this layout have no system message (it is merged into the first user turn) and rewritten call ids."
	case dataset.CompatGemma:
		return head + "Gemma-2 and Gemma-3 instruct templates: prefix holds, user and model turns alternate, every call kept as JSON text in its turn and every tool result as a user turn; Qwen2.5-Instruct: prefix holds. The tool schemas are in the first user turn; the `tools` column is empty."
	case dataset.CompatDeepSeek:
		return head + "DeepSeek-V3 (0324): prefix holds, every call rendered with its arguments as the JSON text the row holds. Arguments are JSON strings here: templates that write arguments with `tojson` (Qwen2.5, Llama-3.x) would double-encode them, so use the default layout for those."
	}
	return head + "Qwen2.5-Instruct, Qwen3, Llama-3.1-Instruct and Llama-3.2-Instruct: prefix holds for every row, calls rendered with object arguments (Llama-3.x take one call per assistant turn and raise on more); Phi-3.5-mini-instruct: prefix holds, tool calls, results and schemas not rendered (it has no tool format). Not for this layout: Mistral v0.3/Nemo (system added to the last user turn only: prefix fails; 9-character ids), Gemma-2/3 (no system or tool roles), DeepSeek-V3 (arguments as text): export with `--template-compat mistral|gemma|deepseek`."
}
