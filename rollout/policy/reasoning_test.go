package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/antidrift/antidrift/rollout/policy"
)

func TestSplitReasoning(t *testing.T) {
	cases := []struct{ in, answer, reasoning string }{
		{"plain answer", "plain answer", ""},
		{"<think>a</think>b", "b", "a"},
		{"<think>\na\n</think>\n\nb", "b", "a"},
		{"a</think>b", "b", "a"},                // opening tag in the prompt (DeepSeek-R1, Qwen3)
		{"<think>a and then", "", "a and then"}, // unclosed: cut, or never closed
		{"x<think>a</think>y<think>b</think>z", "xyz", "a\n\nb"},
		{"<think></think>answer", "answer", ""},
	}
	for _, tc := range cases {
		a, r := policy.SplitReasoning(tc.in)
		assert.Equal(t, tc.answer, a, tc.in)
		assert.Equal(t, tc.reasoning, r, tc.in)
	}
}
