package trajectory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// TrajID builds its hash input without fmt; the ids must stay those of the
// fmt formula every run folder was written with.
func TestTrajIDFormula(t *testing.T) {
	long := strings.Repeat("scenario-", 40)
	for _, c := range []struct {
		run, checkpoint, framework, scenario string
		rollout                              int
		seed                                 int64
	}{
		{"run-85b33b91", "sim:base", "normal", "ecommerce-refund-01", 0, 1},
		{"", "", "", "", 0, 0},
		{"r", "ckpt/step-1200", "plan-exec", long, 63, -9223372036854775808},
		{"bench", "openai:qwen2.5-7b", "gated", "médical-ünïcode", 1 << 20, 9223372036854775807},
	} {
		want := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%d\x00%d", c.run, c.checkpoint, c.framework, c.scenario, c.rollout, c.seed)))
		if got := TrajID(c.run, c.checkpoint, c.framework, c.scenario, c.rollout, c.seed); got != hex.EncodeToString(want[:8]) {
			t.Errorf("%+v: %s, want %s", c, got, hex.EncodeToString(want[:8]))
		}
	}
}

func BenchmarkTrajID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		TrajID("run-85b33b91", "sim:base", "normal", "ecommerce-refund-01", 7, 4242424242)
	}
}
