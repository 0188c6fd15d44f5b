package policy

import "testing"

func TestNormalizeFinish(t *testing.T) {
	cases := []struct {
		in    string
		calls bool
		want  string
	}{
		{"stop", false, FinishStop}, {"STOP", false, FinishStop}, {"", false, FinishStop}, {"eos_token", false, FinishStop},
		{"end_turn", false, FinishStop}, {"eos", true, FinishToolCalls}, {"stop", true, FinishToolCalls},
		{"length", false, FinishLength}, {"LENGTH", true, FinishLength}, {"MAX_TOKENS", false, FinishLength},
		{"model_length", false, FinishLength}, {" max_tokens ", true, FinishLength},
		{"error", false, FinishError}, {"Error", true, FinishError}, {"abort", false, FinishError},
		{"content_filter", true, FinishContentFilter}, {"SAFETY", false, FinishContentFilter}, {"refusal", false, FinishContentFilter},
		{"tool_calls", false, FinishToolCalls}, {"TOOL_USE", false, FinishToolCalls}, {"function_call", false, FinishToolCalls},
		{"Weird", false, "weird"}, {"weird", true, FinishToolCalls},
	}
	for _, c := range cases {
		got := NormalizeFinish(c.in, c.calls)
		if got != c.want {
			t.Errorf("NormalizeFinish(%q, %v) = %q, want %q", c.in, c.calls, got, c.want)
		}
		if again := NormalizeFinish(got, c.calls); again != got {
			t.Errorf("not idempotent: %q -> %q", got, again)
		}
		if KnownFinish(got) != (c.want != "weird") {
			t.Errorf("KnownFinish(%q) = %v", got, KnownFinish(got))
		}
	}
}
