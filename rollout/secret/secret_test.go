package secret

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://localhost:8000/v1", "http://localhost:8000/v1"},
		{"http://user:PASSWORD@host:8000/v1", "http://xxxxx@host:8000/v1"},
		{"https://TOKEN@host/v1", "https://xxxxx@host/v1"},
		{"https://host/v1?api_key=SECRET&x=1", "https://host/v1?api_key=xxxxx&x=xxxxx"},
		{"https://host/v1?SECRET", "https://host/v1?SECRET=xxxxx"},
		{"https://host/v1#frag-SECRET", "https://host/v1"},
		{"sim:base", "sim:base"},
		{"not a url", "not a url"},
		{"http://u:SECRET@host:bad port/v1", "http://xxxxx@host:bad port/v1"},
		{"http://[bad::host:SECRET@x/v1", "http://xxxxx@x/v1"},
		{"http://host/%zz?token=SECRET", "http://host/%zz?xxxxx"},
		{"http://u:SECRET@host/%zz?token=SECRET", "http://xxxxx@host/%zz?xxxxx"},
		{"https://host/v1?", "https://host/v1?"},
	} {
		got := URL(tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestText(t *testing.T) {
	in := `Post "http://u:PASSWORD@h:1/v1/chat/completions?token=T0K": dial tcp: refused; also https://a@b/c`
	got := Text(in)
	for _, s := range []string{"PASSWORD", "T0K", "a@"} {
		assert.NotContains(t, got, s)
	}
	assert.Contains(t, got, `Post "http://xxxxx@h:1/v1/chat/completions?token=xxxxx": dial tcp: refused`)
}

func TestArgs(t *testing.T) {
	key := "sk-live-" + strings.Repeat("a1B2", 8)
	got := Command([]string{"rollout", "--base-url", "http://u:PW@h/v1?k=Q", "--base-url=http://u:PW@h/v1",
		"--api-key-env", key, "--api-key", "plain", "--token=abc", "--api-key-env", "MY_KEY", "--out", "runs/a"})
	for _, s := range []string{"PW", "Q", key, "plain", "abc"} {
		assert.NotContains(t, got, s)
	}
	assert.Contains(t, got, "--api-key-env MY_KEY")
	assert.Contains(t, got, "--out runs/a")
	assert.Contains(t, got, "--base-url http://xxxxx@h/v1?k=xxxxx")
}

func TestLooksLikeKey(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"OPENAI_API_KEY", false},
		{"VLLM_KEY", false},
		{"MY_SERVICE_TOKEN_2", false},
		{"sk-live-abcdefghijklmnop1234", true},
		{"sk-proj-" + strings.Repeat("x", 40), true},
		{"hf_abcdefghijklmnopqrstu", true},
		{"3f9a8c7e6d5b4a3928171615a4b3c2d1", true},
		{"runs/sft-step-1000/output", false},
		{"openai:Qwen/Qwen3-8B", false},
		{"short", false},
	} {
		assert.Equal(t, tc.want, LooksLikeKey(tc.s), tc.s)
	}
	assert.NoError(t, CheckEnvName("--api-key-env", "OPENAI_API_KEY"))
	err := CheckEnvName("--api-key-env", "sk-live-abcdefghijklmnop1234")
	assert.ErrorContains(t, err, "looks like an API key")
	assert.NotContains(t, err.Error(), "abcdefghijklmnop")
	assert.ErrorContains(t, CheckEnvName("--api-key-env", "my-key"), "not an environment variable name")
}

// Text from another process reaches a terminal with its control and
// bidirectional characters escaped, and its URLs redacted.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"worker-1: refused":                 "worker-1: refused",
		"a\x1b[2Jcleared\rback\n":           `a\u001B[2Jcleared\u000Dback\u000A`,
		"id-\u202Eevil\u202C \u2066x\u2069": `id-\u202Eevil\u202C \u2066x\u2069`,
		"bad \xff byte":                     `bad \uFFFD byte`,
		"see https://u:p@h.example/v1":      "see https://xxxxx@h.example/v1",
		"é and שלום stay":                   "é and שלום stay",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
