package dataset

// Byte-exact equivalents of encoding/json's string escaping (appendString),
// raw-value embedding (appendCompact) and validity check (ValidJSON),
// written without reflection or per-value buffers: export rows are
// thousands of messages a second, and json.Marshal's reflection and
// scanner were a large share of an export's CPU. wirejson_test.go compares
// them with encoding/json over hostile inputs and fuzzes them.

import "github.com/antidrift/antidrift/internal/plainjson"

const hexDigits = "0123456789abcdef"

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
	plain := true
	for _, c := range v {
		if c <= ' ' || c == '<' || c == '>' || c == '&' || c == 0xE2 {
			plain = false
			break
		}
	}
	if plain {
		return append(dst, v...), true
	}
	start := 0
	inString := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && v[i+2]&^1 == 0xA8:
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[v[i+2]&0xF])
			i += 2
			start = i + 1
		case inString:
			switch c {
			case '\\':
				i++ // the escaped byte is never a quote that ends the string
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, v[start:i]...)
			start = i + 1
		}
	}
	return append(dst, v[start:]...), true
}
