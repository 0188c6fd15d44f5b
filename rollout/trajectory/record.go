package trajectory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/antidrift/antidrift/rollout/drift"
)

// Record is one finished episode. With a deterministic policy everything
// outside Timings is a pure function of the scenario, policy, framework and
// seed.
type Record struct {
	TrajID     string `json:"traj_id"`
	Run        string `json:"run"`
	Checkpoint string `json:"checkpoint"`
	Policy     string `json:"policy"`
	Framework  string `json:"framework"`
	ScenarioID string `json:"scenario_id"`
	Domain     string `json:"domain"`
	Rollout    int    `json:"rollout"`
	Seed       int64  `json:"seed"`

	Messages []Message `json:"messages"`
	// Tools are the OpenAI function schemas offered during the episode
	// (the union over steps), for trainers that condition on tools.
	Tools []json.RawMessage `json:"tools"`
	// ToolOrder names the scenario's tools in the order the model was
	// shown them, when the run drew the order (rollout --tool-order
	// seeded, the default); absent: the scenario file's order.
	ToolOrder []string `json:"tool_order,omitempty"`
	Steps     []Step   `json:"steps"`
	// Plan is the planner's plan (framework plan-exec only).
	Plan string `json:"plan,omitempty"`
	// FormatErrors counts malformed answers, each answered with a format
	// hint (framework react only).
	FormatErrors int `json:"format_errors,omitempty"`
	// Repairs counts what antidrift mended in the model's answers
	// (arguments, recovered tool-call markup, reasoning split from content).
	Repairs Repairs `json:"repairs,omitzero"`

	Status     Status        `json:"status"`
	Error      string        `json:"error,omitempty"`
	Success    bool          `json:"success"`
	Judge      Judgement     `json:"judge"`
	Drift      bool          `json:"drift"`
	DriftSteps []int         `json:"drift_steps"`
	Matches    []drift.Match `json:"drift_matches"`
	// Exposure is what scoring needs of the episode's mock environment,
	// stored when the record is labelled (nil in records written before
	// antidrift stored it: scoring replays those).
	Exposure *Exposure `json:"exposure,omitempty"`
	Usage    Usage     `json:"usage"`
	// Selection is set on records of least-privilege selection runs.
	Selection *Selection `json:"selection,omitempty"`
	Timings   Timings    `json:"timings"`
	Version   string     `json:"version"`
}

// Clean is success without drift: what a chosen trajectory must be.
func (r *Record) Clean() bool { return r.Success && !r.Drift }

// Step annotates one assistant turn.
type Step struct {
	Turn    int        `json:"turn"`          // index of the assistant message in Messages
	Visible []string   `json:"visible_tools"` // tools offered at this turn
	Calls   []CallNote `json:"calls,omitempty"`
	// FormatError marks a malformed answer (framework react only): no call
	// was made and a format hint followed.
	FormatError bool `json:"format_error,omitempty"`
	// FinishReason is the server's finish_reason for this turn, normalised
	// (stop, tool_calls, length, content_filter, ...).
	FinishReason string `json:"finish_reason,omitempty"`
	// Usage is this turn's token usage as the server reported it.
	Usage *Usage `json:"usage,omitempty"`
}

// Repairs counts the mends made to an episode's model answers. Every
// repair is also visible on the message it touched.
type Repairs struct {
	// EmptyArguments: a call's arguments were "" (sent back as "{}").
	EmptyArguments int `json:"empty_arguments,omitempty"`
	// NullArguments: a call's arguments were "null", read as {}.
	NullArguments int `json:"null_arguments,omitempty"`
	// DoubleEncoded: arguments were a JSON string holding a JSON object.
	DoubleEncoded int `json:"double_encoded,omitempty"`
	// RecoveredCalls: calls recovered from tool-call markup left in content.
	RecoveredCalls int `json:"recovered_calls,omitempty"`
	// ReasoningSplit: turns whose <think> block was moved out of content.
	ReasoningSplit int `json:"reasoning_split,omitempty"`
	// FinalAnswerCalls: text answers a server wrapped in a pseudo-call
	// (TGI's notify_error), read back as the answers they are.
	FinalAnswerCalls int `json:"final_answer_calls,omitempty"`
}

// Add returns the sum of two repair counts.
func (r Repairs) Add(o Repairs) Repairs {
	return Repairs{
		EmptyArguments:   r.EmptyArguments + o.EmptyArguments,
		NullArguments:    r.NullArguments + o.NullArguments,
		DoubleEncoded:    r.DoubleEncoded + o.DoubleEncoded,
		RecoveredCalls:   r.RecoveredCalls + o.RecoveredCalls,
		ReasoningSplit:   r.ReasoningSplit + o.ReasoningSplit,
		FinalAnswerCalls: r.FinalAnswerCalls + o.FinalAnswerCalls,
	}
}

// CallNote is what one tool call did.
type CallNote struct {
	Call    int    `json:"call"` // index among the episode's tool calls
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Outcome string `json:"outcome"` // matched, default, invalid_args, unknown_tool, not_visible
	Drift   bool   `json:"drift"`
}

// Judgement is a judge's verdict on the trajectory with drift stripped.
type Judgement struct {
	Kind   string  `json:"kind"` // "rule" or "llm:MODEL"
	Score  float64 `json:"score"`
	Reason string  `json:"reason"`
}

// Timings holds every wall-clock figure of an episode, and only those.
type Timings struct {
	Start   string  `json:"start"` // RFC 3339, UTC
	TotalMS float64 `json:"total_ms"`
	ModelMS float64 `json:"model_ms"`
	ToolMS  float64 `json:"tool_ms"`
}

// TrajID is the stable id of an episode: a hash of what identifies it in a
// plan. Checkpoint and framework are included so that one run may hold
// several of each without collisions.
func TrajID(run, checkpoint, framework, scenarioID string, rollout int, seed int64) string {
	// The bytes fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d\x00%d", ...) wrote,
	// built without fmt: the engine makes one id per planned episode.
	var stack [128]byte
	b := append(stack[:0], run...)
	for _, s := range [...]string{checkpoint, framework, scenarioID} {
		b = append(append(b, 0), s...)
	}
	b = strconv.AppendInt(append(b, 0), int64(rollout), 10)
	b = strconv.AppendInt(append(b, 0), seed, 10)
	h := sha256.Sum256(b)
	var id [16]byte
	hex.Encode(id[:], h[:8])
	return string(id[:])
}
