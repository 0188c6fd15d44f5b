package dataset

// maxJSONDepth is encoding/json's nesting limit: a value nested deeper is
// invalid.
const maxJSONDepth = 10000

// ValidJSON reports whether data is one valid JSON value with optional
// surrounding whitespace: exactly json.Valid's verdict (strings are not
// checked for valid UTF-8, nesting past 10,000 levels is refused).
func ValidJSON(data []byte) bool {
	// stack holds the open containers: '{' or '['.
	var stackBuf [32]byte
	stack := stackBuf[:0]
	i := skipSpace(data, 0)
	for {
		// a value starts at i
		if i >= len(data) {
			return false
		}
		switch c := data[i]; c {
		case '{', '[':
			if len(stack) >= maxJSONDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = objectKey(data, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = skipString(data, i); i < 0 {
				return false
			}
		case 't':
			if i = literal(data, i, "true"); i < 0 {
				return false
			}
		case 'f':
			if i = literal(data, i, "false"); i < 0 {
				return false
			}
		case 'n':
			if i = literal(data, i, "null"); i < 0 {
				return false
			}
		default:
			if i = number(data, i); i < 0 {
				return false
			}
		}
		// a value ended before i: close containers, or go on to the next
		// element
		for {
			i = skipSpace(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := stack[len(stack)-1]
			c := data[i]
			if c == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if c != ',' {
				return false
			}
			i = skipSpace(data, i+1)
			if top == '{' {
				if i = objectKey(data, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	return i
}

// objectKey reads `"key" :` at i and returns where the value starts, or -1.
func objectKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = skipString(data, i); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// skipString returns the index after the string that starts at i (a
// quote), or -1.
func skipString(data []byte, i int) int {
	i++
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			i++
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(data) {
					return -1
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 5
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
	return -1
}

func isHex(c byte) bool {
	return c-'0' < 10 || c-'a' < 6 || c-'A' < 6
}

func literal(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// number returns the index after the number that starts at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i >= len(data) {
		return -1
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case c-'1' < 9:
		i = digits(data, i+1)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(data []byte, i int) int {
	for i < len(data) && data[i]-'0' < 10 {
		i++
	}
	return i
}
