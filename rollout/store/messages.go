package store

// The fast path's messages: a record's messages (most of its bytes) are
// decoded by the scanning walker rather than by reflection.

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// walkedMessages decodes a record's messages as []trajectory.Message does
// (the record's bytes being valid UTF-8, as the fast path requires), by
// the walker. What it does not take as written — a key in another case or
// escaped, a member given twice, the messages given twice, null parsed
// arguments, a value of the wrong kind — is an error, and the line then
// goes to the reference path, which decides and words the error.
type walkedMessages []trajectory.Message

func (m *walkedMessages) UnmarshalJSON(b []byte) error {
	if *m != nil {
		return errScanLayout // given twice: decoding merges the second into the first
	}
	return whole(b, m.walk)
}

func (m *walkedMessages) walk(w *walker) error {
	ms, err := walkList(w, w.message)
	*m = ms
	return err
}

// walkList reads an array as a []T decodes, each element read into a new
// T by elem: null gives nil, [] an empty slice, not nil.
func walkList[T any](w *walker, elem func(*T) error) ([]T, error) {
	var out []T
	isNull, err := w.array(func() error {
		var zero T
		out = append(out, zero)
		return elem(&out[len(out)-1])
	})
	switch {
	case err != nil:
		return nil, err
	case isNull:
		return nil, nil
	case out == nil:
		return []T{}, nil
	}
	return out, nil
}

// decodeMessage decodes one message as trajectory.Message does (b valid
// UTF-8), or fails as walkedMessages does.
func decodeMessage(b []byte) (trajectory.Message, error) {
	var msg trajectory.Message
	err := whole(b, func(w *walker) error { return w.message(&msg) })
	return msg, err
}

// Message members, as bits of what an object has given.
const (
	mRole = 1 << iota
	mContent
	mReasoning
	mToolCalls
	mToolCallID
	mName
)

// message reads a message object (null leaves msg as it is, as decoding
// does) into msg.
func (w *walker) message(msg *trajectory.Message) error {
	var seen uint
	return w.object(func(key []byte) error {
		var bit uint
		var dst *string
		switch string(key) {
		case "role":
			bit, dst = mRole, &msg.Role
		case "content":
			bit, dst = mContent, &msg.Content
		case "reasoning":
			bit, dst = mReasoning, &msg.Reasoning
		case "tool_call_id":
			bit, dst = mToolCallID, &msg.ToolCallID
		case "name":
			bit, dst = mName, &msg.Name
		case "tool_calls":
			bit = mToolCalls
		default:
			return errScanLayout
		}
		if seen&bit != 0 {
			return errScanLayout
		}
		seen |= bit
		if dst != nil {
			return w.stringInto(dst)
		}
		return w.toolCalls(&msg.ToolCalls)
	})
}

func (w *walker) toolCalls(dst *[]trajectory.ToolCall) error {
	tcs, err := walkList(w, w.toolCall)
	*dst = tcs
	return err
}

// Tool call and function members, as bits.
const (
	cID = 1 << iota
	cType
	cRecovered
	cServerID
	cFunction
	fName
	fArguments
	fArgsError
	fRepair
	fParsed
)

func (w *walker) toolCall(tc *trajectory.ToolCall) error {
	var seen uint
	member := func(bit uint) error {
		if seen&bit != 0 {
			return errScanLayout
		}
		seen |= bit
		return nil
	}
	return w.object(func(key []byte) error {
		var bit uint
		var dst *string
		switch string(key) {
		case "id":
			bit, dst = cID, &tc.ID
		case "type":
			bit, dst = cType, &tc.Type
		case "recovered":
			bit, dst = cRecovered, &tc.Recovered
		case "server_id":
			bit, dst = cServerID, &tc.ServerID
		case "function":
			if err := member(cFunction); err != nil {
				return err
			}
			f := &tc.Function
			return w.object(func(key []byte) error {
				var bit uint
				var dst *string
				switch string(key) {
				case "name":
					bit, dst = fName, &f.Name
				case "arguments":
					bit, dst = fArguments, &f.Arguments
				case "arguments_error":
					bit, dst = fArgsError, &f.ArgsError
				case "arguments_repair":
					bit, dst = fRepair, &f.Repair
				case "parsed_arguments":
					if err := member(fParsed); err != nil {
						return err
					}
					if w.peek() == 'n' {
						return errScanLayout // null: the reference decides
					}
					start := w.i
					if err := w.value(); err != nil {
						return err
					}
					f.Parsed = json.RawMessage(slices.Clone(w.b[start:w.i]))
					return nil
				default:
					return errScanLayout
				}
				if err := member(bit); err != nil {
					return err
				}
				return w.stringInto(dst)
			})
		default:
			return errScanLayout
		}
		if err := member(bit); err != nil {
			return err
		}
		return w.stringInto(dst)
	})
}

// unescape is the value of a string whose bytes between the quotes are
// raw, as encoding/json decodes it: raw is valid UTF-8 and its escapes are
// well formed (walker.str checked them); a \u escape of half a surrogate
// pair not followed by the other half is U+FFFD.
func unescape(raw []byte) string {
	i := bytes.IndexByte(raw, '\\')
	if i < 0 {
		return string(raw)
	}
	out := make([]byte, 0, len(raw))
	for i >= 0 {
		out = append(out, raw[:i]...)
		c := raw[i+1]
		raw = raw[i+2:]
		switch c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hexRune(raw)
			raw = raw[4:]
			if utf16.IsSurrogate(r) {
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					if d := utf16.DecodeRune(r, hexRune(raw[2:])); d != unicode.ReplacementChar {
						out = utf8.AppendRune(out, d)
						raw = raw[6:]
						break
					}
				}
				r = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, c)
		}
		i = bytes.IndexByte(raw, '\\')
	}
	out = append(out, raw...)
	return string(out)
}

// hexRune is the rune of four hex digits (checked by walker.str).
func hexRune(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
