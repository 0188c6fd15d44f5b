package store

import (
	"bytes"
	"errors"
)

// The scanning decoder's check types walk the bytes of a value the JSON
// decoder has already found well-formed (segmentio and encoding/json both
// parse a value whole before handing it to UnmarshalJSON), checking that
// each field has the JSON kind its trajectory type takes, as decoding into
// it would, and keeping only what CheckRecord reads. They handle the
// layout antidrift writes: an object key that is not one of the type's
// field names exactly as written (another case, an escape, a field the
// type does not have) gives errScanLayout, and the line is decoded by the
// reference instead (DecodeRecordScan). A kind decoding would refuse gives
// errScanKind, with the same fall-back: the reference words the error.
var (
	errScanLayout = errors.New("store: a layout the scanning decoder leaves to the reference")
	errScanKind   = errors.New("store: a value of the wrong kind")
)

// walker reads one well-formed JSON value.
type walker struct {
	b []byte
	i int
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *walker) peek() byte {
	w.ws()
	if w.i < len(w.b) {
		return w.b[w.i]
	}
	return 0
}

// str reads a string (w at its opening quote) and returns its bytes
// between the quotes, escapes left as they are.
func (w *walker) str() []byte {
	w.i++
	start := w.i
	for {
		j := bytes.IndexByte(w.b[w.i:], '"')
		if j < 0 { // not well-formed: cannot happen after the decoder's parse
			w.i = len(w.b)
			return w.b[start:]
		}
		k := w.i + j
		n := 0
		for p := k - 1; p >= start && w.b[p] == '\\'; p-- {
			n++
		}
		w.i = k + 1
		if n%2 == 0 {
			return w.b[start:k]
		}
	}
}

// skip reads past one value of any kind.
func (w *walker) skip() {
	switch w.peek() {
	case '"':
		w.str()
	case '{', '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '"':
				w.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					w.i++
					return
				}
			}
			w.i++
		}
	default:
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return
			}
			w.i++
		}
	}
}

// null reads a null if one is next.
func (w *walker) null() bool {
	if w.peek() == 'n' {
		w.i += len("null")
		return true
	}
	return false
}

// stringOrNull checks a field a Go string takes.
func (w *walker) stringOrNull() error {
	switch w.peek() {
	case '"':
		w.str()
		return nil
	case 'n':
		w.i += len("null")
		return nil
	}
	return errScanKind
}

// boolOrNull checks a field a Go bool takes.
func (w *walker) boolOrNull() error {
	switch w.peek() {
	case 't':
		w.i += len("true")
	case 'f':
		w.i += len("false")
	case 'n':
		w.i += len("null")
	default:
		return errScanKind
	}
	return nil
}

// intOrNull reads a field a Go int takes: a plain integer of at most 18
// digits (null leaves v as it is). Anything else that is a number (a
// fraction, an exponent, a longer one) is left to the reference, which
// knows its range rules.
func (w *walker) intOrNull(v *int) error {
	c := w.peek()
	if c == 'n' {
		w.i += len("null")
		return nil
	}
	if c != '-' && (c < '0' || c > '9') {
		return errScanKind
	}
	start := w.i
	neg := c == '-'
	if neg {
		w.i++
	}
	n, digits := 0, 0
	for w.i < len(w.b) && w.b[w.i] >= '0' && w.b[w.i] <= '9' {
		n = n*10 + int(w.b[w.i]-'0')
		w.i++
		digits++
	}
	if digits == 0 || digits > 18 || (digits > 1 && w.b[start+btoi(neg)] == '0') {
		return errScanLayout
	}
	if w.i < len(w.b) {
		switch w.b[w.i] {
		case '.', 'e', 'E':
			return errScanLayout
		}
	}
	if neg {
		n = -n
	}
	*v = n
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// object reads an object (or null, which leaves everything as it is),
// calling field with each key, w at the key's value; field reads the
// value. A key with an escape is left to the reference.
func (w *walker) object(field func(key []byte) error) error {
	switch w.peek() {
	case 'n':
		w.i += len("null")
		return nil
	case '{':
	default:
		return errScanKind
	}
	w.i++
	if w.peek() == '}' {
		w.i++
		return nil
	}
	for {
		w.peek()
		key := w.str()
		if bytes.IndexByte(key, '\\') >= 0 {
			return errScanLayout
		}
		w.peek() // the colon
		w.i++
		w.peek()
		if err := field(key); err != nil {
			return err
		}
		if w.peek() == ',' {
			w.i++
			continue
		}
		w.i++ // '}'
		return nil
	}
}

// array reads an array (null: isNull), calling elem with w at each
// element; elem reads it.
func (w *walker) array(elem func() error) (isNull bool, err error) {
	switch w.peek() {
	case 'n':
		w.i += len("null")
		return true, nil
	case '[':
	default:
		return false, errScanKind
	}
	w.i++
	if w.peek() == ']' {
		w.i++
		return false, nil
	}
	for {
		w.peek()
		if err := elem(); err != nil {
			return false, err
		}
		if w.peek() == ',' {
			w.i++
			continue
		}
		w.i++ // ']'
		return false, nil
	}
}

// scanMsg is what CheckRecord reads of a message.
type scanMsg struct {
	role  string
	calls int
}

// scanMessages checks a record's messages as []trajectory.Message takes
// them and keeps each one's role and number of tool calls.
type scanMessages []scanMsg

func (m *scanMessages) UnmarshalJSON(b []byte) error {
	w := &walker{b: b}
	var out []scanMsg
	isNull, err := w.array(func() error {
		var msg scanMsg
		err := w.object(func(key []byte) error {
			switch string(key) {
			case "role":
				switch w.peek() {
				case 'n':
					w.i += len("null")
				case '"':
					raw := w.str()
					role, err := stringValue(raw)
					if err != nil {
						return err
					}
					msg.role = role
				default:
					return errScanKind
				}
				return nil
			case "content", "reasoning", "tool_call_id", "name":
				return w.stringOrNull()
			case "tool_calls":
				n := 0
				_, err := w.array(func() error {
					n++
					return w.object(func(key []byte) error {
						switch string(key) {
						case "id", "type", "recovered", "server_id":
							return w.stringOrNull()
						case "function":
							return w.object(func(key []byte) error {
								switch string(key) {
								case "name", "arguments", "arguments_error", "arguments_repair":
									return w.stringOrNull()
								case "parsed_arguments":
									w.skip()
									return nil
								}
								return errScanLayout
							})
						}
						return errScanLayout
					})
				})
				msg.calls = n // null: none, as decoding sets the slice to nil
				return err
			}
			return errScanLayout
		})
		out = append(out, msg)
		return err
	})
	if err != nil {
		return err
	}
	if isNull {
		*m = nil
		return nil
	}
	if out == nil {
		out = []scanMsg{}
	}
	*m = out
	return nil
}

// stringValue is a string's value: the known roles and outcomes without
// allocating, others decoded.
func stringValue(raw []byte) (string, error) {
	if v, ok := knownStrings[string(raw)]; ok {
		return string(v), nil
	}
	if plainASCII(raw) {
		return string(raw), nil
	}
	var s string
	err := recordJSON.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s)
	return s, err
}

// scanStp is what CheckRecord reads of a step.
type scanStp struct {
	turn, calls int
	unparsed    bool // every call noted was read from unparsed markup
}

// scanSteps checks a record's steps as []trajectory.Step takes them and
// keeps each one's turn and calls.
type scanSteps []scanStp

func (s *scanSteps) UnmarshalJSON(b []byte) error {
	w := &walker{b: b}
	var out []scanStp
	isNull, err := w.array(func() error {
		var st scanStp
		err := w.object(func(key []byte) error {
			switch string(key) {
			case "turn":
				return w.intOrNull(&st.turn)
			case "visible_tools":
				_, err := w.array(w.stringOrNull)
				return err
			case "calls":
				n, unparsed := 0, true
				_, err := w.array(func() error {
					n++
					var outcome string
					err := w.object(func(key []byte) error {
						switch string(key) {
						case "call":
							var c int
							return w.intOrNull(&c)
						case "id", "tool":
							return w.stringOrNull()
						case "outcome":
							switch w.peek() {
							case 'n':
								w.i += len("null")
							case '"':
								v, err := stringValue(w.str())
								if err != nil {
									return err
								}
								outcome = v
							default:
								return errScanKind
							}
							return nil
						case "drift":
							return w.boolOrNull()
						}
						return errScanLayout
					})
					unparsed = unparsed && outcome == "unparsed"
					return err
				})
				st.calls, st.unparsed = n, unparsed && n > 0
				return err
			case "format_error":
				return w.boolOrNull()
			case "finish_reason":
				return w.stringOrNull()
			case "usage":
				return w.object(func(key []byte) error {
					switch string(key) {
					case "prompt_tokens", "completion_tokens", "total_tokens":
						var n int
						return w.intOrNull(&n)
					}
					return errScanLayout
				})
			}
			return errScanLayout
		})
		out = append(out, st)
		return err
	})
	if err != nil {
		return err
	}
	if isNull {
		*s = nil
		return nil
	}
	if out == nil {
		out = []scanStp{}
	}
	*s = out
	return nil
}

// scanAnyArray checks a field []json.RawMessage takes (an array of
// anything, or null).
type scanAnyArray struct{}

func (*scanAnyArray) UnmarshalJSON(b []byte) error {
	w := &walker{b: b}
	switch w.peek() {
	case 'n', '[':
		return nil
	}
	return errScanKind
}

// scanStringArray checks a field []string takes.
type scanStringArray struct{}

func (*scanStringArray) UnmarshalJSON(b []byte) error {
	w := &walker{b: b}
	_, err := w.array(w.stringOrNull)
	return err
}

// plainASCII: no escape and no byte past ASCII (whose decoding may replace
// invalid UTF-8): the bytes are the value.
func plainASCII(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}
