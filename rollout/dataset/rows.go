package dataset

import "encoding/json"

// SchemaVersion is written in every row and card; bump it when a column
// changes meaning.
const SchemaVersion = "antidrift.v1"

// DPORow is one preference pair (trajectory- or step-level).
type DPORow struct {
	Prompt             []json.RawMessage `json:"prompt"`
	Chosen             []json.RawMessage `json:"chosen"`
	Rejected           []json.RawMessage `json:"rejected"`
	Tools              []json.RawMessage `json:"tools"`
	PairID             string            `json:"pair_id"`
	ScenarioID         string            `json:"scenario_id"`
	Domain             string            `json:"domain"`
	Split              string            `json:"split"`
	PairType           string            `json:"pair_type"` // "trajectory" or "step"
	Framework          string            `json:"framework"`
	ToolFormat         string            `json:"tool_format"` // native (tools list, tool_calls) or text (ReAct text protocol, no tools)
	ChosenTrajID       string            `json:"chosen_traj_id"`
	RejectedTrajID     string            `json:"rejected_traj_id"`
	ChosenCheckpoint   string            `json:"chosen_checkpoint"`
	RejectedCheckpoint string            `json:"rejected_checkpoint"`
	DivergenceStep     int               `json:"divergence_step"` // message index where chosen and rejected part
	ChosenReward       float64           `json:"chosen_reward"`
	RejectedReward     float64           `json:"rejected_reward"`
	RewardGap          float64           `json:"reward_gap"`
	DriftTypes         []string          `json:"drift_types"`
	ViolationKinds     []string          `json:"violation_kinds"`
	Provisions         []string          `json:"provisions"`
	// ChosenTrain and RejectedTrain mark, per message of chosen and
	// rejected, whether the model wrote it (1: an assistant turn) or the
	// environment did (0: a tool result or observation): a loss mask for
	// trainers that honour one (TrainMask).
	ChosenTrain   []int64 `json:"chosen_train"`
	RejectedTrain []int64 `json:"rejected_train"`
	// Token-length estimates (EstimatePromptTokens, EstimateTokens).
	PromptTokensEst   int64  `json:"prompt_tokens_est"`
	ChosenTokensEst   int64  `json:"chosen_tokens_est"`
	RejectedTokensEst int64  `json:"rejected_tokens_est"`
	SchemaVersion     string `json:"schema_version"`
	// Margin is written only on request: RewardTrainer puts it in its loss.
	Margin *float64 `json:"margin,omitempty"`
}

// KTORow is one unpaired example: desirable (clean success) or not (drift).
type KTORow struct {
	Prompt     []json.RawMessage `json:"prompt"`
	Completion []json.RawMessage `json:"completion"`
	Label      bool              `json:"label"`
	Tools      []json.RawMessage `json:"tools"`
	// Turn is the message index in the trajectory of the completion's
	// first message (with the per-turn layout, the turn itself).
	Turn       int64   `json:"turn"`
	TrajID     string  `json:"traj_id"`
	ScenarioID string  `json:"scenario_id"`
	Domain     string  `json:"domain"`
	Split      string  `json:"split"`
	Checkpoint string  `json:"checkpoint"`
	Framework  string  `json:"framework"`
	ToolFormat string  `json:"tool_format"`
	Success    bool    `json:"success"`
	Drift      bool    `json:"drift"`
	Reward     float64 `json:"reward"`
	// Token-length estimates (EstimatePromptTokens, EstimateTokens).
	PromptTokensEst     int64  `json:"prompt_tokens_est"`
	CompletionTokensEst int64  `json:"completion_tokens_est"`
	SchemaVersion       string `json:"schema_version"`
}

// RewardRow is one trajectory with its reward and group-relative advantage.
type RewardRow struct {
	Prompt         []json.RawMessage `json:"prompt"`
	Completion     []json.RawMessage `json:"completion"`
	Tools          []json.RawMessage `json:"tools"`
	GroupID        string            `json:"group_id"` // scenario × checkpoint
	Reward         float64           `json:"reward"`
	Advantage      float64           `json:"advantage"`
	ProcessRewards []float64         `json:"process_rewards"` // one per assistant turn of the completion; over a trajectory's rows they sum to Reward
	// Turn is the message index in the trajectory of the completion's
	// first message (with the per-turn layout, the turn itself).
	Turn       int64  `json:"turn"`
	TrajID     string `json:"traj_id"`
	ScenarioID string `json:"scenario_id"`
	Domain     string `json:"domain"`
	Split      string `json:"split"`
	Checkpoint string `json:"checkpoint"`
	Framework  string `json:"framework"`
	ToolFormat string `json:"tool_format"`
	Success    bool   `json:"success"`
	Drift      bool   `json:"drift"`
	// BoundaryTools are the tools the scenario's boundary allows (empty
	// when the scenarios were not available): what a GRPO reward function
	// checks a sampled tool call against.
	BoundaryTools []string `json:"boundary_tools"`
	// Token-length estimates (EstimatePromptTokens, EstimateTokens).
	PromptTokensEst     int64  `json:"prompt_tokens_est"`
	CompletionTokensEst int64  `json:"completion_tokens_est"`
	SchemaVersion       string `json:"schema_version"`
}

// TrajectoryRow is one trajectory with all its labels.
type TrajectoryRow struct {
	TrajID           string            `json:"traj_id"`
	Run              string            `json:"run"`
	Checkpoint       string            `json:"checkpoint"`
	Policy           string            `json:"policy"`
	Framework        string            `json:"framework"`
	ToolFormat       string            `json:"tool_format"`
	ScenarioID       string            `json:"scenario_id"`
	Domain           string            `json:"domain"`
	Split            string            `json:"split"`
	Rollout          int               `json:"rollout"`
	Seed             int64             `json:"seed"`
	Messages         []json.RawMessage `json:"messages"`
	Tools            []json.RawMessage `json:"tools"`
	Status           string            `json:"status"`
	Success          bool              `json:"success"`
	Drift            bool              `json:"drift"`
	Clean            bool              `json:"clean"`
	DriftSteps       []int64           `json:"drift_steps"`
	DriftTypes       []string          `json:"drift_types"`
	ViolationKinds   []string          `json:"violation_kinds"`
	Provisions       []string          `json:"provisions"`
	JudgeKind        string            `json:"judge_kind"`
	JudgeScore       float64           `json:"judge_score"`
	JudgeReason      string            `json:"judge_reason"`
	PromptTokens     int64             `json:"prompt_tokens"`
	CompletionTokens int64             `json:"completion_tokens"`
	ToolkitVersion   string            `json:"toolkit_version"`
	SchemaVersion    string            `json:"schema_version"`
}
