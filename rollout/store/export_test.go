package store

import "github.com/antidrift/antidrift/rollout/trajectory"

// DecodeRecordWithStd is DecodeRecord through encoding/json alone, the
// reference the record decoder must match.
func DecodeRecordWithStd(b []byte, r *trajectory.Record) error {
	saved := recordJSON
	defer func() { recordJSON = saved }()
	recordJSON = stdJSON{}
	return DecodeRecord(b, r)
}

// SetScanChunk sets the least share of a file one scanning goroutine takes
// and returns the function that restores it.
func SetScanChunk(n int64) func() {
	saved := scanChunk
	scanChunk = n
	return func() { scanChunk = saved }
}

// SetSpillEntries sets how many entries an index holds before it spills
// them to a file, and returns the function that restores it.
func SetSpillEntries(n int) func() {
	saved := spillEntries
	spillEntries = n
	return func() { spillEntries = saved }
}

// SetScanWave sets the most a scanning goroutine takes of a file at once,
// and returns the function that restores it.
func SetScanWave(n int64) func() {
	saved := scanWave
	scanWave = n
	return func() { scanWave = saved }
}

// Spilled reports whether an index keeps its entries in a file.
func (ix *Index) Spilled() bool { return ix.disk != nil }

// DecodeFast is the fast path of DecodeRecord alone (no fall-back): an
// error where the reference would decode the line.
var DecodeFast = decodeSized

// DecodeMessage is the fast path's decoding of one message.
var DecodeMessage = decodeMessage

// NeedsStd reports whether a line goes to encoding/json at once.
var NeedsStd = needsStd
