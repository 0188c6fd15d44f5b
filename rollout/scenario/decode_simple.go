package scenario

import "encoding/json"

// decodeJSONSimple decodes the JSON most tool-call arguments are: strings
// without escapes, numbers, literals, and objects and arrays of them, not
// deeply nested. It keeps one copy of the text and slices every key and
// string out of it, so that a small object costs a few allocations. It
// gives what encoding/json gives (numbers as json.Number); ok is false for
// anything outside that form (an escape, a control character, invalid JSON,
// deep nesting), which the general decoders then decide. data must be
// valid UTF-8.
func decodeJSONSimple(data []byte) (any, bool) {
	d := simpleDecoder{s: string(data)}
	d.space()
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	if d.i != len(d.s) {
		return nil, false
	}
	return v, true
}

// maxSimpleDepth bounds the nesting decodeJSONSimple reads.
const maxSimpleDepth = 32

type simpleDecoder struct {
	s string
	i int
}

func (d *simpleDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *simpleDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.s) || depth > maxSimpleDepth {
		return nil, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return s, true
	case c == '-' || ('0' <= c && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *simpleDecoder) literal(lit string) bool {
	if len(d.s)-d.i < len(lit) || d.s[d.i:d.i+len(lit)] != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// str reads a string without escapes or control characters.
func (d *simpleDecoder) str() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return d.s[start:j], true
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *simpleDecoder) number() (any, bool) {
	s, j := d.s, d.i
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && '1' <= s[j] && s[j] <= '9':
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	if j < len(s) && s[j] == '.' {
		j++
		k := j
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == k {
			return nil, false
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == k {
			return nil, false
		}
	}
	n := json.Number(s[d.i:j])
	d.i = j
	return n, true
}

func (d *simpleDecoder) object(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *simpleDecoder) array(depth int) (any, bool) {
	d.i++ // [
	out := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return out, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, false
		}
		switch d.s[d.i] {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return out, true
		default:
			return nil, false
		}
	}
}
