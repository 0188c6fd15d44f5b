package dataset

// Byte-exact equivalents of encoding/json's string escaping (appendString),
// raw-value embedding (appendCompact) and validity check (ValidJSON),
// written without reflection or per-value buffers: export rows are
// thousands of messages a second, and json.Marshal's reflection and
// scanner were a large share of an export's CPU. wirejson_test.go compares
// them with encoding/json over hostile inputs and fuzzes them.

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// htmlSafe[b] is encoding/json's htmlSafeSet: the ASCII bytes json.Marshal
// writes as they are (printable, not '"', '\\', '<', '>' or '&'; DEL
// included). Bytes from utf8.RuneSelf up are false: they take the rune path.
var htmlSafe = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// appendString appends s as json.Marshal writes a string (HTML escaping
// on): `"`, `\`, control characters, '<', '>', '&', U+2028 and U+2029
// escaped as encoding/json escapes them, each byte of invalid UTF-8 as
// \ufffd.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if htmlSafe[b] {
			i++
			continue
		}
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

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
