package synth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Model is a model a stage asks: a policy (an OpenAI-compatible endpoint,
// or a scripted one in tests) and the spec it was built from.
type Model struct {
	// Spec names the model in records and the configuration
	// ("openai:qwen3-32b"); never a key or a credential.
	Spec        string
	Policy      policy.Policy
	Temperature float64
	MaxTokens   int
}

// Stages whose calls are stored.
const (
	StageDesign       = "design"
	StageBuild        = "build"
	StageBuildRepair  = "build-repair"
	StageCritic       = "critic"
	StageCriticRepair = "critic-repair"
	StageProvisions   = "provisions"
)

// Call is one stored model call: what was sent, what came back, and what
// the pipeline made of it. It is written before its answer is used.
type Call struct {
	Seq          int                  `json:"seq"`
	Stage        string               `json:"stage"`
	Round        int                  `json:"round"`
	Model        string               `json:"model"`
	PromptHash   string               `json:"prompt_hash"`
	Prompt       []trajectory.Message `json:"prompt"`
	Answer       string               `json:"answer"`
	FinishReason string               `json:"finish_reason,omitempty"`
	Usage        trajectory.Usage     `json:"usage"`
	// Verdict is "parsed" or "unparseable" (with Problem saying why).
	Verdict string `json:"verdict"`
	Problem string `json:"problem,omitempty"`
}

// ErrUnparseable marks a stage whose model answered, twice, with nothing
// the pipeline could read.
var ErrUnparseable = errors.New("unparseable answer")

// errStale marks a stored call whose prompt differs from the one the run
// now sends: the configuration or the code changed under the folder.
var errStale = errors.New("stored call is stale")

// callLog is a seed's stored calls, replayed in order on a rerun.
type callLog struct {
	dir   string
	calls map[int]Call
	seq   int
	force bool
	// stale is set once a stored call no longer matches: every later
	// stored call is ignored (and overwritten), never replayed out of
	// order.
	stale bool
}

func openCallLog(dir string, force bool) (*callLog, error) {
	l := &callLog{dir: dir, calls: map[int]Call{}, force: force}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		var c Call
		if err := readJSON(n, &c); err != nil {
			return nil, err
		}
		l.calls[c.Seq] = c
	}
	return l, nil
}

// parseFunc reads an answer; its error is shown to the model in the
// corrective turn.
type parseFunc func(answer string) error

const correction = "Your answer could not be used: %s. Answer again with only the JSON object asked for."

// ask sends msgs to m, or replays the stored answer, and parses it; an
// unreadable answer gets one corrective turn. It returns the answer text
// (reasoning removed), the conversation including it, and the calls made.
func (l *callLog) ask(ctx context.Context, stage string, round int, m Model, msgs []trajectory.Message, parse parseFunc) (string, []trajectory.Message, error) {
	for attempt := 0; attempt < 2; attempt++ {
		c, err := l.call(ctx, stage, round, m, msgs, parse)
		if err != nil {
			return "", nil, err
		}
		said := c.Answer
		if strings.TrimSpace(said) == "" {
			said = "(no answer)" // some chat templates refuse empty assistant turns
		}
		conv := append(append([]trajectory.Message(nil), msgs...), trajectory.Message{Role: trajectory.RoleAssistant, Content: said})
		if c.Verdict == "parsed" {
			return c.Answer, conv, nil
		}
		if attempt == 1 {
			return "", nil, fmt.Errorf("%s: %w after a corrective turn: %s", stage, ErrUnparseable, c.Problem)
		}
		msgs = append(conv, trajectory.Message{Role: trajectory.RoleUser, Content: fmt.Sprintf(correction, c.Problem)})
	}
	panic("unreachable")
}

// call makes (or replays) one model call and stores it.
func (l *callLog) call(ctx context.Context, stage string, round int, m Model, msgs []trajectory.Message, parse parseFunc) (Call, error) {
	l.seq++
	ph := promptHash(m, msgs)
	if c, ok := l.calls[l.seq]; ok && !l.stale {
		if c.PromptHash == ph && c.Stage == stage {
			return c, nil
		}
		if !l.force {
			return Call{}, fmt.Errorf("%w: %s call %d was made with another prompt or model (rerun with --force to redo it)", errStale, stage, l.seq)
		}
		l.stale = true
	}
	resp, err := m.Policy.Complete(ctx, policy.Request{Messages: msgs, Temperature: m.Temperature, MaxTokens: m.MaxTokens})
	if err != nil {
		l.seq-- // not stored: the rerun asks again
		return Call{}, fmt.Errorf("%s: %s: %w", stage, m.Spec, err)
	}
	// The reasoning field and <think> blocks are never read as the answer.
	answer, _ := policy.SplitReasoning(resp.Message.Content)
	c := Call{Seq: l.seq, Stage: stage, Round: round, Model: m.Spec, PromptHash: ph, Prompt: msgs,
		Answer: answer, FinishReason: resp.FinishReason, Usage: resp.Usage, Verdict: "parsed"}
	switch {
	case resp.FinishReason == "length":
		// A cut answer is never completed by guessing.
		c.Verdict, c.Problem = "unparseable", "the answer was cut off at the token limit (finish_reason length); answer more briefly"
	default:
		if perr := parse(answer); perr != nil {
			c.Verdict, c.Problem = "unparseable", perr.Error()
		}
	}
	name := filepath.Join(l.dir, fmt.Sprintf("%03d-%s.json", c.Seq, stage))
	if err := writeJSONAtomic(name, c); err != nil {
		return Call{}, err
	}
	l.calls[c.Seq] = c
	if l.stale {
		l.dropAfter(c.Seq)
	}
	return c, nil
}

// dropAfter removes stored calls after seq once the log has gone stale:
// they answered prompts this run will not send in that order.
func (l *callLog) dropAfter(seq int) {
	var later []int
	for s := range l.calls {
		if s > seq {
			later = append(later, s)
		}
	}
	sort.Ints(later)
	for _, s := range later {
		c := l.calls[s]
		os.Remove(filepath.Join(l.dir, fmt.Sprintf("%03d-%s.json", c.Seq, c.Stage)))
		delete(l.calls, s)
	}
}

// usage sums the stored calls' tokens by stage.
func (l *callLog) usage() map[string]trajectory.Usage {
	out := map[string]trajectory.Usage{}
	for _, c := range l.calls {
		st := strings.TrimSuffix(c.Stage, "-repair")
		out[st] = out[st].Add(c.Usage)
	}
	return out
}

func promptHash(m Model, msgs []trajectory.Message) string {
	b, _ := json.Marshal(struct {
		Model       string
		Temperature float64
		MaxTokens   int
		Msgs        []trajectory.Message
	}{m.Spec, m.Temperature, m.MaxTokens, msgs})
	return hashBytes(b)
}
