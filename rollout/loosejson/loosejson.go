// Package loosejson reads JSON as models write it: in a code fence, after
// or before prose, with single-quoted strings, bare keys, Python literals
// (True, False, None), trailing commas and raw newlines in strings. It
// never repairs what is missing: an object cut off mid-way does not parse.
// What it keeps is the model's: an empty array stays [] and an empty object
// {} (never null), keys stay in the order written and numbers as spelled
// when JSON allows the spelling. The judges, the ReAct parser and the
// synthesis pipeline share it.
package loosejson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Parse reads one value starting at s[i] and returns it (objects as
// map[string]any, arrays as []any, numbers as float64) with the index just
// past it.
func Parse(s string, i int) (v any, end int, ok bool) {
	p := &loose{s: s, i: i}
	v, ok = p.value(0)
	return v, p.i, ok
}

// JSON reads one value starting at s[i], loosely, and returns it as strict
// JSON: keys in the order written, numbers as spelled where JSON allows,
// [] and {} as they were, strings re-escaped (HTML characters kept).
func JSON(s string, i int) (raw json.RawMessage, end int, ok bool) {
	p := &loose{s: s, i: i, out: &bytes.Buffer{}}
	if _, ok = p.value(0); !ok {
		return nil, i, false
	}
	return p.out.Bytes(), p.i, true
}

// Object is a JSON object found in a text.
type Object struct {
	// Raw is the object as JSON: the text's own bytes when they are strict
	// JSON (key order and number spelling kept), else the loose value
	// re-encoded.
	Raw   json.RawMessage
	Value map[string]any
	// Start and End delimit the object in the text.
	Start, End int
}

// Objects returns the outermost objects of text for which keep returns
// true (every object when keep is nil), in order. An object keep refuses
// is searched for objects inside it.
func Objects(text string, keep func(map[string]any) bool) []Object {
	var out []Object
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		obj, ok := at(text, i)
		if !ok || (keep != nil && !keep(obj.Value)) {
			continue
		}
		out = append(out, obj)
		i = obj.End - 1
	}
	return out
}

// at reads the object starting at text[i], strictly first.
func at(text string, i int) (Object, bool) {
	dec := json.NewDecoder(strings.NewReader(text[i:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err == nil {
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil && m != nil {
			end := i + int(dec.InputOffset())
			return Object{Raw: bytes.Clone(raw), Value: m, Start: i, End: end}, true
		}
	}
	p := &loose{s: text, i: i, out: &bytes.Buffer{}}
	v, ok := p.value(0)
	if !ok {
		return Object{}, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return Object{}, false
	}
	return Object{Raw: p.out.Bytes(), Value: m, Start: i, End: p.i}, true
}

// loose parses JSON and its common near-misses: single-quoted strings,
// bare keys, Python literals, trailing commas, raw newlines in strings.
// When out is set, every value parsed is also written to it as strict
// JSON.
type loose struct {
	s   string
	i   int
	out *bytes.Buffer
}

func (p *loose) emit(b string) {
	if p.out != nil {
		p.out.WriteString(b)
	}
}

func (p *loose) emitString(v string) {
	if p.out == nil {
		return
	}
	enc := json.NewEncoder(p.out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	p.out.Truncate(p.out.Len() - 1)
}

func (p *loose) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *loose) value(depth int) (any, bool) {
	if depth > 64 {
		return nil, false
	}
	p.ws()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		v, ok := p.str()
		if ok {
			p.emitString(v.(string))
		}
		return v, ok
	case c == '-' || c == '+' || (c >= '0' && c <= '9') || c == '.':
		return p.number()
	default:
		w := p.word()
		switch w {
		case "true", "True":
			p.emit("true")
			return true, true
		case "false", "False":
			p.emit("false")
			return false, true
		case "null", "None":
			p.emit("null")
			return nil, true
		}
		return nil, false
	}
}

func (p *loose) word() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *loose) object(depth int) (any, bool) {
	p.i++ // {
	obj := map[string]any{}
	n := 0 // members written (a repeated key is written again; the last wins, as in encoding/json)
	p.emit("{")
	for {
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		if p.s[p.i] == '}' {
			p.i++
			p.emit("}")
			return obj, true
		}
		var key string
		if c := p.s[p.i]; c == '"' || c == '\'' {
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			key = k.(string)
		} else if key = p.word(); key == "" {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		if n > 0 {
			p.emit(",")
		}
		n++
		p.emitString(key)
		p.emit(":")
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		obj[key] = v
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return nil, false
	}
}

func (p *loose) array(depth int) (any, bool) {
	p.i++          // [
	arr := []any{} // [] stays an empty array, never null
	p.emit("[")
	for {
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		if p.s[p.i] == ']' {
			p.i++
			p.emit("]")
			return arr, true
		}
		if len(arr) > 0 {
			p.emit(",")
		}
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == ']' {
			continue
		}
		return nil, false
	}
}

func (p *loose) str() (any, bool) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c == '\\' && p.i+1 < len(p.s):
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'u':
				if p.i+4 <= len(p.s) {
					if r, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32); err == nil {
						b.WriteRune(rune(r))
						p.i += 4
						continue
					}
				}
				b.WriteString(`\u`)
			default: // \" \' \\ \/ and anything else: the character itself
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return nil, false
}

func (p *loose) number() (any, bool) {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[p.i]) >= 0 {
		p.i++
	}
	spelled := strings.TrimPrefix(p.s[start:p.i], "+")
	f, err := strconv.ParseFloat(spelled, 64)
	if err != nil {
		return nil, false
	}
	if p.out != nil {
		if json.Valid([]byte(spelled)) {
			p.out.WriteString(spelled) // 1.50 stays 1.50
		} else {
			p.out.WriteString(strconv.FormatFloat(f, 'g', -1, 64)) // .5, 5., 0x: JSON has no such spelling
		}
	}
	return f, true
}
