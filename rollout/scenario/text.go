package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// bom is the UTF-8 byte-order mark some editors put before JSON.
var bom = []byte{0xEF, 0xBB, 0xBF}

// TextProblem checks what encoding/json would accept silently or word
// badly in a JSON file: a byte-order mark at its start, bytes that are not
// UTF-8 (which it would replace with U+FFFD), named with their byte
// offset. It returns nil when the text is clean.
func TextProblem(name string, data []byte) *Problem {
	if bytes.HasPrefix(data, bom) {
		return &Problem{File: name, Line: 1, Col: 1, Msg: "the file starts with a UTF-8 byte-order mark (BOM, bytes EF BB BF); save it as UTF-8 without a BOM"}
	}
	if off := invalidUTF8(data); off >= 0 {
		line, col := lineCol(data, off)
		return &Problem{File: name, Line: line, Col: col, Msg: fmt.Sprintf("invalid UTF-8 at byte offset %d (byte 0x%02X); JSON text must be UTF-8", off, data[off])}
	}
	return nil
}

// DuplicateKeyProblem names the first key that appears twice in one object
// of valid JSON data (encoding/json keeps the last silently), with its JSON
// path; nil when there is none.
func DuplicateKeyProblem(name string, data []byte) *Problem {
	type frame struct {
		obj     bool
		keys    map[string]int // key → byte offset of its first use
		key     string
		idx     int
		wantKey bool
	}
	var stack []*frame
	path := func(last string) string {
		var b []byte
		for _, f := range stack[:len(stack)-1] {
			if f.obj {
				if len(b) > 0 {
					b = append(b, '.')
				}
				b = append(b, f.key...)
			} else {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(f.idx), 10)
				b = append(b, ']')
			}
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		return string(append(b, last...))
	}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{':
			stack = append(stack, &frame{obj: true, keys: map[string]int{}, wantKey: true})
		case '[':
			stack = append(stack, &frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].obj {
					stack[n-1].wantKey = true
				} else {
					stack[n-1].idx++
				}
			}
		case '"':
			start := i
			esc := false
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					esc = true
					i++
				}
			}
			n := len(stack)
			if n == 0 || !stack[n-1].obj || !stack[n-1].wantKey {
				continue
			}
			top := stack[n-1]
			key := string(data[start+1 : min(i, len(data))])
			if esc {
				if json.Unmarshal(data[start:min(i+1, len(data))], &key) != nil {
					return nil // not valid JSON: the decoder reports it
				}
			}
			if first, dup := top.keys[key]; dup {
				line, col := lineCol(data, start)
				fl, _ := lineCol(data, first)
				return &Problem{File: name, Line: line, Col: col, Path: path(key), Msg: fmt.Sprintf("duplicate key %q in one object (first at line %d); JSON keeps only the last, so say it once", key, fl)}
			}
			top.keys[key] = start
			top.key, top.wantKey = key, false
		}
	}
	return nil
}

// invalidUTF8 is the offset of the first byte that is not UTF-8, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

func lineCol(data []byte, off int) (line, col int) {
	line, col = 1, 1
	for i := 0; i < off && i < len(data); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
