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
