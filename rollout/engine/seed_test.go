package engine_test

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/engine"
)

// EpisodeSeed hashes without fmt or hash/fnv; the seeds must stay those of
// the formula every run was planned with.
func TestEpisodeSeedFormula(t *testing.T) {
	for _, c := range []struct {
		seed     int64
		scenario string
		rollout  int
	}{
		{1, "ecommerce-refund-01", 0},
		{0, "", 0},
		{-9223372036854775808, strings.Repeat("long-id-", 30), 1 << 30},
		{9223372036854775807, "médical", 63},
	} {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s\x00%d", c.seed, c.scenario, c.rollout)
		if got, want := engine.EpisodeSeed(c.seed, c.scenario, c.rollout), int64(h.Sum64()>>1); got != want {
			t.Errorf("%+v: %d, want %d", c, got, want)
		}
	}
}
