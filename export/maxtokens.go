package export

import (
	"encoding/json"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// TokenCounter counts tokens exactly, with a real tokenizer, where the
// rows otherwise carry tokenizer-free estimates (Options.Tokens).
type TokenCounter interface {
	// Name identifies the tokenizer in the card and manifest (a file
	// name, never an absolute path).
	Name() string
	// Messages counts the tokens of rendered messages.
	Messages(msgs []json.RawMessage) (int64, error)
	// Prompt counts a prompt's tokens: its messages and the tool schemas
	// a template renders into it.
	Prompt(msgs, tools []json.RawMessage) (int64, error)
}

// recount replaces a row's *_tokens_est fields with counts by tc. It
// returns a copy; the caller's row is left as it was.
func recount[R Row](r *R, tc TokenCounter) (*R, error) {
	c := *r
	var err error
	switch v := any(&c).(type) {
	case *dataset.DPORow:
		if v.PromptTokensEst, err = tc.Prompt(v.Prompt, v.Tools); err != nil {
			return nil, err
		}
		if v.ChosenTokensEst, err = tc.Messages(v.Chosen); err != nil {
			return nil, err
		}
		if v.RejectedTokensEst, err = tc.Messages(v.Rejected); err != nil {
			return nil, err
		}
	case *dataset.KTORow:
		if v.PromptTokensEst, err = tc.Prompt(v.Prompt, v.Tools); err != nil {
			return nil, err
		}
		if v.CompletionTokensEst, err = tc.Messages(v.Completion); err != nil {
			return nil, err
		}
	case *dataset.RewardRow:
		if v.PromptTokensEst, err = tc.Prompt(v.Prompt, v.Tools); err != nil {
			return nil, err
		}
		if v.CompletionTokensEst, err = tc.Messages(v.Completion); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// totalTokens is the length Options.MaxTokens bounds: prompt + the longest
// completion of a row; for trajectories the whole conversation with its
// tool schemas (counted by tc when set, else estimated).
func totalTokens[R Row](r *R, tc TokenCounter) (int64, error) {
	if v, ok := any(r).(*dataset.TrajectoryRow); ok {
		if tc != nil {
			return tc.Prompt(v.Messages, v.Tools)
		}
		return dataset.EstimatePromptTokens(v.Messages, v.Tools), nil
	}
	_, t, _ := lengthsOf(r)
	return t, nil
}
