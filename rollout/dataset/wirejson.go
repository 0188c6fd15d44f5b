package dataset

// Byte-exact equivalents of encoding/json's string escaping (appendString),
// raw-value embedding (appendCompact) and validity check (ValidJSON),
// written without reflection or per-value buffers: export rows are
// thousands of messages a second, and json.Marshal's reflection and
// scanner were a large share of an export's CPU. wirejson_test.go compares
// them with encoding/json over hostile inputs and fuzzes them.

import "github.com/antidrift/antidrift/internal/plainjson"

// appendString appends s as json.Marshal writes a string
// (plainjson.AppendString: one escaper for the module).
func appendString(dst []byte, s string) []byte { return plainjson.AppendString(dst, s) }

// appendCompact appends the JSON value v as json.Marshal embeds a
// json.RawMessage: whitespace between tokens dropped, '<', '>', '&',
// U+2028 and U+2029 escaped. It reports false, appending nothing, when v
// is not one valid JSON value (json.Marshal then fails).
func appendCompact(dst []byte, v []byte) ([]byte, bool) {
	if !ValidJSON(v) {
		return dst, false
	}
	return plainjson.AppendCompactValid(dst, v), true
}
