package export

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLimitMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)

	restore := LimitMemory(100 << 20)
	lim := debug.SetMemoryLimit(-1)
	require.Greater(t, lim, int64(100<<20), "the budget on top of what is in use")
	require.Less(t, lim, int64(1<<30))
	// a limit already set (GOMEMLIMIT, or an outer call) is kept
	inner := LimitMemory(1 << 20)
	require.Equal(t, lim, debug.SetMemoryLimit(-1))
	inner()
	require.Equal(t, lim, debug.SetMemoryLimit(-1))
	restore()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}
