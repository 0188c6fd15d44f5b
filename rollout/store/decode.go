package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// jsonDecoder decodes one JSON value into v. Record lines go through one,
// so that the decoder can change by measurement without touching its
// callers; whatever it is, its results must be those of encoding/json
// (TestRecordDecoderMatchesEncodingJSON: the same records, and the same
// refusals with the same messages, over the demo's records, the test
// fixtures and thousands of damaged copies of them).
type jsonDecoder interface {
	Unmarshal(data []byte, v any) error
}

// recordJSON decodes record lines: github.com/segmentio/encoding/json,
// chosen by measurement on the records of a sim:base run
// (docs/benchmarks.md). goccy/go-json and bytedance/sonic decode valid
// records faster but accept lines encoding/json refuses (a stray
// character after an object key, a bad string escape), which would turn a
// damaged record into data; segmentio refuses what encoding/json refuses.
var recordJSON jsonDecoder = fastThenStd{}

// fastThenStd decodes with segmentio and, when it reports an error,
// decodes again with encoding/json, so that a line that is not a valid
// record is refused with exactly encoding/json's message. A line that is
// not valid UTF-8 takes the encoding/json path at once: its strings get
// encoding/json's U+FFFD replacements.
type fastThenStd struct{}

func (fastThenStd) Unmarshal(data []byte, v any) error {
	if needsStd(data) {
		return json.Unmarshal(data, v)
	}
	if err := segjson.Unmarshal(data, v); err == nil {
		return nil
	}
	resetValue(v)
	return json.Unmarshal(data, v)
}

// needsStd reports whether a line must go to encoding/json at once: it is
// not valid UTF-8 (its strings get encoding/json's U+FFFD replacements),
// it may nest past encoding/json's limit of 10,000 levels (segmentio has
// none), or it holds an integer that may not fit an int64 (segmentio lets
// some past 2⁶⁴ wrap).
//
// One difference is known and left: a member given twice under keys that
// fold together only through ſ (U+017F) or the Kelvin sign (U+212A), such
// as "ſteps" beside "steps": encoding/json merges the second array into
// the first's elements, segmentio replaces them. Finding those letters,
// escaped or not, cost a tenth of scoring's decoding, for lines no writer
// produces. Members given twice in ASCII spellings decode alike.
func needsStd(data []byte) bool {
	return !utf8.Valid(data) || bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) > 10000 || longDigits(data)
}

// stdJSON is encoding/json, the reference.
type stdJSON struct{}

func (stdJSON) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// resetValue zeroes what v points to, so that a second decode starts from
// the same state as the first.
func resetValue(v any) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
}

// longDigits reports whether data holds a run of digits that may not fit
// an int64: 20 digits or more, or 19 above 9223372036854775807 (segmentio
// lets some integers past 2⁶⁴ wrap; inside strings too, which only costs
// the slower path). Seeds are 19-digit int64s, so the bound is exact
// rather than a digit count.
func longDigits(data []byte) bool {
	// Any 19 consecutive positions hold exactly one multiple of 19 (less
	// one), so a run of 19 digits covers one of the sampled positions:
	// only runs through a sampled digit are measured.
	const n = len(maxInt64Digits)
	for i := n - 1; i < len(data); i += n {
		if !isDigit(data[i]) {
			continue
		}
		start, end := i, i+1
		for start > 0 && isDigit(data[start-1]) {
			start--
		}
		for end < len(data) && isDigit(data[end]) {
			end++
		}
		if end-start >= n && tooLong(data[start:end]) {
			return true
		}
		for i+n < end { // the next sample past this run
			i += n
		}
	}
	return false
}

func isDigit(c byte) bool { return c-'0' < 10 }

func tooLong(digits []byte) bool {
	return len(digits) > len(maxInt64Digits) || string(digits) > maxInt64Digits
}

const maxInt64Digits = "9223372036854775807"
