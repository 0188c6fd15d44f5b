package export

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// The kept encoder's low-memory mode writes the bytes parquet-go's own
// encoder options write, page after page on one encoder (its history and
// offsets carry over between pages), for pages from empty to past twice
// the window.
func TestKeptZstdLowMemSameBytes(t *testing.T) {
	ref, err := kzstd.NewWriter(nil,
		kzstd.WithEncoderConcurrency(1),
		kzstd.WithEncoderLevel(kzstd.SpeedDefault),
		kzstd.WithZeroFrames(true),
		kzstd.WithEncoderCRC(false),
	)
	require.NoError(t, err)
	kept := newKeptZstd()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{`{"role":"assistant","content":"`, "draft", "the CRM says", `\"`, "\n", "schedule", "é", "0123456789", `"}`}
	page := func(n int, noise float64) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			if rng.Float64() < noise {
				b.WriteByte(byte(rng.IntN(256)))
				continue
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.Bytes()[:n]
	}
	sizes := []int{0, 1, 100, 1 << 10, 1<<10 + 1, 64 << 10, 128 << 10, 128<<10 + 1, 1 << 20, 8<<20 + 7, 17 << 20, 200, 300 << 10}
	for i, n := range sizes {
		noise := []float64{0, 0.05, 1}[i%3]
		src := page(n, noise)
		want := ref.EncodeAll(src, nil)
		got, err := kept.Encode(nil, src)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), fmt.Sprintf("page %d, %d bytes, noise %v: the low-memory encoder wrote other bytes", i, n, noise))
	}
}
