package fortisgen

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/skill"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite rollout/skill/builtin/*.json from the composer")

// TestGolden: the checked-in built-in libraries are exactly this
// program's output (go test ./rollout/skill/internal/fortisgen -run
// Golden -update rewrites them).
func TestGolden(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			l, err := Build(name)
			require.NoError(t, err)
			b, err := skill.Marshal(l)
			require.NoError(t, err)
			path := filepath.Join("..", "..", "builtin", name+".json")
			if *update {
				require.NoError(t, os.WriteFile(path, b, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(b), "%s differs from the composer's output: rerun with -update", path)
			// The output passes the validator every user library passes.
			_, ps := skill.Parse(path, b)
			assert.Empty(t, ps)
		})
	}
}

// The composer's text rules: a skill or tool name is caught as written or
// with spaces for separators, as a whole word only; questions end with a
// question mark; sentences are capitalised and closed after a quote;
// addresses and paths keep their case.
func TestComposerTextRules(t *testing.T) {
	c := &composer{banned: []string{"inbox-glance", "inbox glance", "open_message", "open message"}}
	for _, tc := range []struct {
		req, want string
	}{
		{"Use inbox-glance for this", "inbox-glance"},
		{"an inbox glance would do", "inbox glance"},
		{"Open message M-1 please", "open message"},
		{"reopen messages later", ""},
		{"glancing at the inbox", ""},
	} {
		assert.Equal(t, tc.want, c.bannedIn(tc.req), tc.req)
	}
	assert.Equal(t, "what's in it?", question("what's in it"))
	assert.Equal(t, "what's in it? Tell me", question("what's in it? Tell me"))
	assert.Equal(t, "have a look at it", question("have a look at it"))
	assert.Equal(t, `Reply "thanks".`, sentence(`reply "thanks"`))
	assert.Equal(t, `Reply "can we?"`, sentence(`reply "can we?"`))
	assert.Equal(t, "sam@lumen.me needs it.", sentence("sam@lumen.me needs it"))
	assert.Equal(t, "M-2041 can go", lowerFirst("M-2041 can go"))
	assert.Equal(t, "bin it", lowerFirst("Bin it"))
}

// A typo changes one word and leaves ids and quoted values that hold a
// capital or a digit alone.
func TestTypoTouchesOneWord(t *testing.T) {
	c := &composer{r: rand.New(rand.NewPCG(1, 2))}
	in := "Please forward message M-2041 to legal@fabrikam.com tomorrow, because somebody asked"
	for i := 0; i < 50; i++ {
		out := c.typo(in)
		a, b := strings.Fields(in), strings.Fields(out)
		require.Len(t, b, len(a))
		diff := 0
		for j := range a {
			if a[j] != b[j] {
				diff++
				assert.NotContains(t, a[j], "M-2041")
				assert.NotContains(t, a[j], "@")
			}
		}
		assert.Equal(t, 1, diff, out)
	}
}
