package export

import (
	"fmt"
	"math"
	"strings"
)

// recipes are a table's trainer recipes after its loading lines, with
// arguments checked against the trainers' current sources (TRL 1.x:
// DPOConfig, KTOConfig and RewardConfig take max_length only; GRPOConfig
// max_completion_length; OpenRLHF's --data.* flags; LLaMA-Factory's
// sharegpt preference layout). Every length comes from the table's own
// percentiles, and no recipe leaves the tool schemas out.
func recipes(t CardTable, head string) string {
	var b strings.Builder
	b.WriteString(head)
	L := int64(4096) // no lengths: a generous bound, named as such
	lnote := "no length percentiles were recorded: set it from your rows"
	if l := t.Lengths; l != nil {
		L, lnote = l.MaxLength, fmt.Sprintf("p99 of the whole sequence (%d), rounded up: 99%% of rows neither dropped nor cut by the message-level count (per template family: the card's lengths per chat template)", l.Total[2])
	}
	toolsCol, toolsNote := `, "tools"`, "keep tools: the trainer renders the schemas the model was sent into the prompt"
	if t.ToolsInSystem {
		toolsCol, toolsNote = "", "the tool schemas are in each row's system message (--tools-in-system); the tools column is empty"
	}
	switch kindOf(t) {
	case TableDPO:
		fmt.Fprintf(&b, `
# TRL DPOTrainer: conversational preference data; every chosen/rejected token is in the loss.
from trl import DPOConfig, DPOTrainer
cols = ["prompt", "chosen", "rejected"%s]  # %s
dpo = DPOTrainer(
    model=model,                      # e.g. AutoModelForCausalLM.from_pretrained(...)
    args=DPOConfig(output_dir="dpo-out", max_length=%d),  # %s
    train_dataset=train.select_columns(cols),
    eval_dataset=valid.select_columns(cols),
    processing_class=tokenizer,
)
dpo.train()

# TRL RewardTrainer on the same pairs: it prepends prompt to each side and scores the last token.
from trl import RewardConfig, RewardTrainer
`, toolsCol, toolsNote, L, lnote)
		if t.Margin {
			b.WriteString(`rm_cols = cols + ["margin"]  # margin = reward_gap, subtracted inside the loss; use cols alone for the plain loss
`)
		} else {
			b.WriteString(`rm_cols = cols  # this file has no margin column; export with --margin to train with margin = reward_gap in the loss
`)
		}
		fmt.Fprintf(&b, `rm = RewardTrainer(
    model=rm_model,                   # AutoModelForSequenceClassification.from_pretrained(..., num_labels=1)
    args=RewardConfig(output_dir="rm-out", max_length=%d),  # pairs longer than this are dropped
    train_dataset=train.select_columns(rm_cols),
    eval_dataset=valid.select_columns(rm_cols),
    processing_class=tokenizer,
)
rm.train()
`+"```\n\n", L)
		b.WriteString("OpenRLHF (reward model; `openrlhf.cli.train_dpo` takes the same `--data.*` flags with `--ref.model_name_or_path`):\n\n```sh\n")
		if !t.ToolsInSystem {
			b.WriteString("# OpenRLHF passes no tools to the chat template: export with --tools-in-system, or it trains without the schemas the model was sent\n")
		}
		margin := ""
		if t.Margin {
			margin = " \\\n   --model.margin_loss_enable"
		}
		fmt.Fprintf(&b, `deepspeed --module openrlhf.cli.train_rm \
   --model.model_name_or_path MODEL --ckpt.output_dir rm-out \
   --data.dataset path/to/this/folder --data.dataset_split train \
   --eval.dataset path/to/this/folder --eval.split validation \
   --data.prompt_key prompt --data.chosen_key chosen --data.rejected_key rejected \
   --data.apply_chat_template --data.max_len %d%s
`+"```\n\n", L, margin)
		if hasLlamaFactory(t) {
			fmt.Fprintf(&b, "LLaMA-Factory: `llamafactory/` holds the pairs in its sharegpt preference layout (tool calls as `function_call` turns, tool results as `observation` turns, the schemas in `tools`) with the `dataset_info.json` entries naming them")
			if t.LlamaFactorySkipped > 0 {
				fmt.Fprintf(&b, "; %d rows whose chosen or rejected is more than one turn are left out of those files (LLaMA-Factory's layout holds one message per side)", t.LlamaFactorySkipped)
			}
			fmt.Fprintf(&b, ":\n\n```sh\nllamafactory-cli train --stage dpo --do_train --model_name_or_path MODEL --template qwen \\\n   --dataset_dir path/to/this/folder/llamafactory --dataset antidrift_%s_train --eval_dataset antidrift_%s_validation \\\n   --cutoff_len %d --finetuning_type lora --output_dir lf-dpo-out\n```\n\n", tableFileName(t), tableFileName(t), L)
		} else {
			b.WriteString("LLaMA-Factory: export with `--format ...,llamafactory` for its sharegpt preference files and `dataset_info.json` (step pairs with the next-turn continuation: one message per side, as its layout holds).\n\n")
		}
		return b.String()
	case TableKTO:
		weights := ""
		if d, u := t.Desirable, t.Undesirable; d > 0 && u > 0 {
			lo, hi := kTOWeightRange(d, u)
			w := math.Round((lo+hi)/2*100) / 100
			weights = fmt.Sprintf(", desirable_weight=%.2f, undesirable_weight=1.0", w)
			fmt.Fprintf(&b, "\n# train split: %d desirable (label true) and %d undesirable rows: TRL recommends desirable_weight in [%.2f, %.2f]\n# with undesirable_weight=1 (its check: desirable_weight * %d / (undesirable_weight * %d) in [1, 1.33]).", d, u, lo, hi, d, u)
		}
		fmt.Fprintf(&b, `
# TRL KTOTrainer: every completion token is in the loss (this file's completion layout is in the card).
from trl import KTOConfig, KTOTrainer
cols = ["prompt", "completion", "label"%s]  # %s
kto = KTOTrainer(
    model=model,
    args=KTOConfig(output_dir="kto-out", max_length=%d%s,  # max_length: %s
                   per_device_train_batch_size=8),  # > 1: the KL term pairs each row with its batch neighbour, in file order (train_sampling_strategy="sequential", the default)
    train_dataset=train.select_columns(cols),
    eval_dataset=valid.select_columns(cols),
    processing_class=tokenizer,
)
kto.train()
`+"```\n\n", toolsCol, toolsNote, L, weights, lnote)
		return b.String()
	case TableRewards:
		c := grpoCompletionLimit(t.Lengths)
		render := `tokenizer.apply_chat_template(r["prompt"], tools=r["tools"] or None, add_generation_prompt=True, tokenize=False)`
		if t.ToolsInSystem {
			render = `tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False)  # schemas in the system message`
		}
		fmt.Fprintf(&b, `
# TRL GRPOTrainer samples its own completions; the recorded reward / advantage / process_rewards
# serve offline RL and checking a reward function against the toolkit's.
# One prompt per GRPO group (group_id: the rollouts of one first request), taken from the group's
# earliest turn, rendered with the tools it was sent: GRPOTrainer passes no per-row tools to the
# template, so the prompt goes in as text.
import re
from trl import GRPOConfig, GRPOTrainer
first = {}
for i, (gid, turn) in enumerate(zip(train["group_id"], train["turn"])):
    if gid not in first or turn < train[first[gid]]["turn"]:
        first[gid] = i
prompts = train.select(sorted(first.values()))
def render(r):
    text = %s
    # GRPOTrainer tokenizes the prompt text again with special tokens: drop the template's own
    # BOS (Llama, Gemma, Mistral write one) so the model does not see it twice
    bos = tokenizer.bos_token
    return {"prompt": text[len(bos):] if bos and text.startswith(bos) else text}
prompts = prompts.map(render)
prompts = prompts.select_columns(["prompt", "tools", "boundary_tools", "scenario_id", "group_id"])

CALL = re.compile(r'"name"\s*:\s*"([^"]+)"|Action:\s*([A-Za-z0-9_.-]+)')
def boundary_reward(completions, tools, boundary_tools, **kwargs):
    # -1 per call to a tool outside the scenario's boundary (tool drift), else 0. Data, scope and
    # time drift and task success need antidrift's labels: roll the checkpoint out and score it.
    out = []
    for text, ts, allowed in zip(completions, tools, boundary_tools):
        offered = {t["function"]["name"] for t in ts}
        names = [a or b for a, b in CALL.findall(text)]
        out.append(-float(sum(1 for n in names if n not in allowed and (n in offered or not ts))))
    return out

grpo = GRPOTrainer(
    model=model,
    reward_funcs=boundary_reward,
    args=GRPOConfig(output_dir="grpo-out", max_completion_length=%d),  # the recorded completions' p99, at least 256
    train_dataset=prompts,
    processing_class=tokenizer,
)
grpo.train()
`+"```\n\n", render, c)
		return b.String()
	case TableTrajectories:
		fmt.Fprintf(&b, `
# TRL SFTTrainer on clean successes, loss on the assistant turns only (assistant_only_loss needs a
# chat template with generation markers; TRL swaps one in for the model families it knows).
from trl import SFTConfig, SFTTrainer
keep = ["messages"%s]  # %s
clean = train.filter(lambda r: r["clean"]).select_columns(keep)
sft = SFTTrainer(
    model=model,
    args=SFTConfig(output_dir="sft-out", assistant_only_loss=True, max_length=%d),  # %s
    train_dataset=clean,
    processing_class=tokenizer,
)
sft.train()
`+"```\n\n", toolsCol, toolsNote, L, lnote)
		return b.String()
	}
	b.WriteString("```\n\n")
	return b.String()
}

// kTOWeightRange is TRL's recommended desirable_weight range for d
// desirable and u undesirable rows with undesirable_weight 1, rounded as
// KTOTrainer rounds it.
func kTOWeightRange(d, u int64) (lo, hi float64) {
	r := float64(u) / float64(d)
	return math.Round(r*100) / 100, math.Round(r*1.33*100) / 100
}

func hasLlamaFactory(t CardTable) bool {
	for _, f := range t.Files {
		if strings.HasPrefix(f, "llamafactory/") {
			return true
		}
	}
	return false
}

// tableFileName is the file name of a table's split files ("dpo" in
// data/dpo-train.parquet).
func tableFileName(t CardTable) string {
	for _, f := range t.Files {
		if strings.HasPrefix(f, "data/") {
			base := strings.TrimPrefix(f, "data/")
			if i := strings.LastIndex(base, "-"+splitOfFile(base)); i > 0 {
				return base[:i]
			}
		}
	}
	return t.Name
}

func splitOfFile(base string) string {
	for _, sp := range Splits {
		if strings.Contains(base, "-"+sp) {
			return sp
		}
	}
	return ""
}

// grpoCompletionLimit is the GRPO recipe's max_completion_length: the p99
// of the whole sequence less the p99 of the prompt, rounded up to 64, at
// least 256 (512 with no lengths recorded).
func grpoCompletionLimit(l *Lengths) int64 {
	if l == nil {
		return 512
	}
	return max(256, roundUp(l.Total[2]-l.Prompt[2], 64))
}
