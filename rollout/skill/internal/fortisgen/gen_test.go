package fortisgen

import (
	"flag"
	"os"
	"path/filepath"
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
