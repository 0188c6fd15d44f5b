package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"unicode/utf8"
)

// The scanning decoder's walkers read a record's messages, steps, tools and
// tool order strictly (every byte checked as JSON's grammar has it),
// checking that each field has the JSON kind its trajectory type takes, as
// decoding into it would, and keeping only what CheckRecord reads. They
// handle the layout antidrift writes: an object key that is not one of the
// type's field names exactly as written (another case, an escape, a field
// the type does not have) gives errScanLayout, and the line is decoded by
// the reference instead (DecodeRecordScan). Malformed JSON or a kind
// decoding would refuse gives errScanKind, with the same fall-back: the
// reference decides, and words the error.
var (
	errScanLayout = errors.New("store: a layout the scanning decoder leaves to the reference")
	errScanKind   = errors.New("store: a value of the wrong kind")
)

// walker reads one well-formed JSON value.
type walker struct {
	b []byte
	i int
	// keep, when set, is told what DecodeRecordPrompt keeps beyond the
	// scan's shapes.
	keep *promptKeep
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
// between the quotes, escapes left as they are; ok is false when the
// string is malformed (a control character, a bad escape, no end).
func (w *walker) str() (raw []byte, ok bool) {
	b := w.b
	i := w.i + 1
	start := i
	for {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character (most of a record is text).
		for i+8 <= len(b) && !special(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			w.i = len(b)
			return nil, false
		}
		switch c := b[i]; {
		case c == '"':
			w.i = i + 1
			return b[start:i], true
		case c == '\\':
			if i+1 >= len(b) {
				w.i = len(b)
				return nil, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !hex4(b[i+2:i+6]) {
					w.i = len(b)
					return nil, false
				}
				i += 6
			default:
				w.i = len(b)
				return nil, false
			}
		case c < 0x20:
			w.i = len(b)
			return nil, false
		default:
			i++
		}
	}
}

// special reports whether one of the eight bytes of x may be a quote, a
// backslash or a control character (never false when one is).
func special(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0
}

func hex4(h []byte) bool {
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// value reads one well-formed value of any kind, strictly.
func (w *walker) value() error {
	switch w.peek() {
	case '"':
		if _, ok := w.str(); !ok {
			return errScanKind
		}
		return nil
	case '{':
		return w.object(func([]byte) error { return w.value() })
	case '[':
		_, err := w.array(w.value)
		return err
	case 't':
		return w.literal("true")
	case 'f':
		return w.literal("false")
	case 'n':
		return w.literal("null")
	}
	return w.number()
}

func (w *walker) literal(lit string) error {
	if !bytes.HasPrefix(w.b[w.i:], []byte(lit)) {
		return errScanKind
	}
	w.i += len(lit)
	return nil
}

// number reads a number as JSON's grammar has it.
func (w *walker) number() error {
	b, i := w.b, w.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return errScanKind
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return errScanKind
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return errScanKind
		}
	}
	w.i = i
	return nil
}

// skipLoose reads past one value of any kind without checking it (the
// decoder that reads it next does): it stops at the end of the bytes
// whatever they hold.
func (w *walker) skipLoose() {
	switch w.peek() {
	case '"':
		w.skipString()
	case '{', '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '"':
				w.skipString()
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

// skipString reads past a string (w at its opening quote) without
// checking it.
func (w *walker) skipString() {
	w.i++
	start := w.i
	for {
		j := bytes.IndexByte(w.b[w.i:], '"')
		if j < 0 {
			w.i = len(w.b)
			return
		}
		k := w.i + j
		n := 0
		for p := k - 1; p >= start && w.b[p] == '\\'; p-- {
			n++
		}
		w.i = k + 1
		if n%2 == 0 {
			return
		}
	}
}

// stringOrNull checks a field a Go string takes.
func (w *walker) stringOrNull() error {
	switch w.peek() {
	case '"':
		if _, ok := w.str(); !ok {
			return errScanKind
		}
		return nil
	case 'n':
		return w.literal("null")
	}
	return errScanKind
}

// boolOrNull checks a field a Go bool takes.
func (w *walker) boolOrNull() error {
	switch w.peek() {
	case 't':
		return w.literal("true")
	case 'f':
		return w.literal("false")
	case 'n':
		return w.literal("null")
	}
	return errScanKind
}

// intOrNull reads a field a Go int takes: a plain integer of at most 18
// digits (null leaves v as it is). Anything else that is a number (a
// fraction, an exponent, a longer one) is left to the reference, which
// knows its range rules.
func (w *walker) intOrNull(v *int) error {
	c := w.peek()
	if c == 'n' {
		return w.literal("null")
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
// calling field with each key (as written, escapes kept), w at the key's
// value; field reads the value.
func (w *walker) object(field func(key []byte) error) error {
	switch w.peek() {
	case 'n':
		return w.literal("null")
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
		if w.peek() != '"' {
			return errScanKind
		}
		// A key with an escape matches no field name as written: the
		// typed walks leave it to the reference (errScanLayout).
		key, ok := w.str()
		if !ok {
			return errScanKind
		}
		if w.peek() != ':' {
			return errScanKind
		}
		w.i++
		w.peek()
		if err := field(key); err != nil {
			return err
		}
		switch w.peek() {
		case ',':
			w.i++
		case '}':
			w.i++
			return nil
		default:
			return errScanKind
		}
	}
}

// array reads an array (null: isNull), calling elem with w at each
// element; elem reads it.
func (w *walker) array(elem func() error) (isNull bool, err error) {
	switch w.peek() {
	case 'n':
		return true, w.literal("null")
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
		switch w.peek() {
		case ',':
			w.i++
		case ']':
			w.i++
			return false, nil
		default:
			return false, errScanKind
		}
	}
}

// once guards an object member that holds objects: given twice, decoding
// merges the second value into the first's (a member the second leaves
// out keeps the first's value), which the walks leave to the reference.
type once bool

func (o *once) first() error {
	if *o {
		return errScanLayout
	}
	*o = true
	return nil
}

// walkedCache remembers values a walk accepted, by their bytes: a run
// repeats a few tools arrays and visible-tool lists thousands of times
// (every record of a scenario carries the same), so each is walked once.
// A value is looked up by its first bytes, then compared whole with what
// follows in the line: bytes that begin with a value the walk accepted
// hold that value, and a walk would stop where it ends (whatever follows
// is read next, as after a walk). It is bounded in entries and bytes;
// once full it only answers.
type walkedCache struct {
	mu     sync.RWMutex
	byHead map[string][]string
	n, sum int
}

const (
	walkedCacheEntries = 1 << 12
	walkedCacheBytes   = 16 << 20
	walkedCacheHead    = 32 // bytes a lookup keys on; shorter values are walked
)

// walk walks the value at w with walk, unless it begins with a value
// accepted before.
func (c *walkedCache) walk(w *walker, walk func(*walker) error) error {
	vs := w.i
	if len(w.b)-vs >= walkedCacheHead {
		head := w.b[vs : vs+walkedCacheHead]
		c.mu.RLock()
		cands := c.byHead[string(head)]
		c.mu.RUnlock()
		for _, v := range cands {
			if bytes.HasPrefix(w.b[vs:], []byte(v)) {
				w.i = vs + len(v)
				return nil
			}
		}
	}
	if err := walk(w); err != nil {
		return err
	}
	if n := w.i - vs; n >= walkedCacheHead {
		c.mu.Lock()
		if c.n < walkedCacheEntries && c.sum+n <= walkedCacheBytes {
			if c.byHead == nil {
				c.byHead = map[string][]string{}
			}
			v := string(w.b[vs:w.i])
			head := v[:walkedCacheHead]
			if !slices.Contains(c.byHead[head], v) {
				c.byHead[head] = append(c.byHead[head], v)
				c.n++
				c.sum += n
			}
		}
		c.mu.Unlock()
	}
	return nil
}

// The values remembered: tools arrays, and lists of tool names.
var walkedTools, walkedNames walkedCache

// scanMsg is what CheckRecord reads of a message.
type scanMsg struct {
	role  string
	calls int
}

// scanMessages checks a record's messages as []trajectory.Message takes
// them and keeps each one's role and number of tool calls.
type scanMessages []scanMsg

func (m *scanMessages) UnmarshalJSON(b []byte) error { return whole(b, m.walk) }

// whole walks a value that must fill b.
func whole(b []byte, walk func(w *walker) error) error {
	w := &walker{b: b}
	if err := walk(w); err != nil {
		return err
	}
	// nothing but whitespace after the value (peek's 0 would also be a NUL byte)
	if w.ws(); w.i != len(w.b) {
		return errScanKind
	}
	return nil
}

func (m *scanMessages) walk(w *walker) error {
	var out []scanMsg
	_, err := w.array(func() error {
		var msg scanMsg
		start := w.i
		var parsed []json.RawMessage // each call's parsed arguments, by kind (w.keep)
		var calls once
		err := w.object(func(key []byte) error {
			switch string(key) {
			case "role":
				return w.stringInto(&msg.role)
			case "content", "reasoning", "tool_call_id", "name":
				return w.stringOrNull()
			case "tool_calls":
				if err := calls.first(); err != nil {
					return err
				}
				n := 0
				_, err := w.array(func() error {
					n++
					if w.keep != nil {
						parsed = append(parsed, nil)
					}
					var function once
					return w.object(func(key []byte) error {
						switch string(key) {
						case "id", "type", "recovered", "server_id":
							return w.stringOrNull()
						case "function":
							if err := function.first(); err != nil {
								return err
							}
							return w.object(func(key []byte) error {
								switch string(key) {
								case "name", "arguments", "arguments_error", "arguments_repair":
									return w.stringOrNull()
								case "parsed_arguments":
									vs := w.i
									err := w.value()
									if err == nil && w.keep != nil {
										parsed[len(parsed)-1] = argumentsKind(w.b[vs:w.i])
									}
									return err
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
		if err == nil && w.keep != nil {
			w.keep.msgs = append(w.keep.msgs, w.b[start:w.i])
			w.keep.parsed = append(w.keep.parsed, slices.Clone(parsed))
		}
		return err
	})
	if err != nil {
		return err
	}
	*m = out // only lengths are read: null and [] alike give none
	return nil
}

// stringInto reads a field a Go string takes into *dst (null leaves it
// as it is, as decoding does).
func (w *walker) stringInto(dst *string) error {
	switch w.peek() {
	case 'n':
		return w.literal("null")
	case '"':
		raw, ok := w.str()
		if !ok {
			return errScanKind
		}
		v, err := stringValue(raw)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
	return errScanKind
}

// stringValue is a string's value: the known roles and outcomes without
// allocating, valid UTF-8 unescaped as encoding/json does (unescape),
// and other bytes (what the reference path walks) decoded by it, with
// its U+FFFD replacements.
func stringValue(raw []byte) (string, error) {
	if v, ok := knownStrings[string(raw)]; ok {
		return v, nil
	}
	if utf8.Valid(raw) {
		return unescape(raw), nil
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

func (s *scanSteps) UnmarshalJSON(b []byte) error { return whole(b, s.walk) }

func (s *scanSteps) walk(w *walker) error {
	var out []scanStp
	_, err := w.array(func() error {
		var st scanStp
		var visible sharedList
		var calls once
		err := w.object(func(key []byte) error {
			switch string(key) {
			case "turn":
				return w.intOrNull(&st.turn)
			case "visible_tools":
				vs := w.i
				if err := walkedNames.walk(w, scanStringArray{}.walk); err != nil {
					return err
				}
				if w.keep != nil {
					return visible.UnmarshalJSON(w.b[vs:w.i])
				}
				return nil
			case "calls":
				if err := calls.first(); err != nil {
					return err
				}
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
							return w.stringInto(&outcome)
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
		if err == nil && w.keep != nil {
			w.keep.visible = append(w.keep.visible, visible)
		}
		return err
	})
	if err != nil {
		return err
	}
	*s = out // only lengths are read: null and [] alike give none
	return nil
}

// scanAnyArray checks a field []json.RawMessage takes (an array of
// anything, or null).
type scanAnyArray struct{}

func (*scanAnyArray) UnmarshalJSON(b []byte) error { return whole(b, scanAnyArray{}.walk) }

func (scanAnyArray) walk(w *walker) error {
	switch w.peek() {
	case 'n', '[':
		return w.value()
	}
	return errScanKind
}

// scanStringArray checks a field []string takes.
type scanStringArray struct{}

func (*scanStringArray) UnmarshalJSON(b []byte) error { return whole(b, scanStringArray{}.walk) }

func (scanStringArray) walk(w *walker) error {
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
