package export

import (
	kzstd "github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// keptZstd compresses Parquet pages with one zstd encoder, kept for the
// life of the process. parquet-go's codec pools its encoders in a
// sync.Pool, which every other garbage collection empties, so an export
// made a new encoder — a 16 MiB history buffer, zeroed — every few row
// groups, with the old one still live until the next collection. The
// encoder options are those of parquet-go's zstd.Codec.Encode, so every
// page is the same, byte for byte (EncodeAll starts each page afresh).
// EncodeAll is safe for concurrent use: with one encoder, callers take
// turns.
type keptZstd struct {
	zstd.Codec // the name, the codec id and decoding
	enc        *kzstd.Encoder
}

func newKeptZstd() *keptZstd {
	enc, err := kzstd.NewWriter(nil,
		kzstd.WithEncoderConcurrency(1),
		kzstd.WithEncoderLevel(kzstd.SpeedDefault),
		kzstd.WithZeroFrames(true),
		kzstd.WithEncoderCRC(false),
	)
	if err != nil {
		panic(err) // fixed, valid options
	}
	return &keptZstd{Codec: zstd.Codec{Level: zstd.SpeedDefault, Concurrency: 1}, enc: enc}
}

func (c *keptZstd) Encode(dst, src []byte) ([]byte, error) {
	return c.enc.EncodeAll(src, dst[:0]), nil
}
