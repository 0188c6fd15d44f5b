package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// DecodeJSON parses JSON text into plain Go values (map[string]any, []any,
// string, bool, nil) keeping numbers as json.Number, so that 1, 1.0 and 1e0
// can be compared as the same number. It rejects trailing data.
func DecodeJSON(data []byte) (any, error) {
	if v, ok := decodeJSONFast(data); ok {
		return v, nil
	}
	return decodeJSONStd(data)
}

// decodeJSONFast decodes valid JSON with segmentio/encoding, which gives
// the values encoding/json gives (json.Number included) with far fewer
// allocations; ok is false for anything it or the JSON grammar refuses,
// for text that is not valid UTF-8 (encoding/json replaces invalid bytes
// with U+FFFD) and for text that might nest too deep, which decodeJSONStd then decides and words exactly
// as before (TestDecodeJSONMatchesEncodingJSON).
func decodeJSONFast(data []byte) (any, bool) {
	if !utf8.Valid(data) {
		return nil, false
	}
	if v, ok := decodeJSONSimple(data); ok {
		return v, true
	}
	if !shallow(data) {
		return nil, false
	}
	var v any
	rest, err := segjson.Parse(data, &v, segjson.UseNumber)
	if err != nil {
		return nil, false
	}
	for _, c := range rest {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, false
		}
	}
	return v, true
}

// shallow reports whether data cannot nest deeper than encoding/json's
// limit of 10,000 levels (which segmentio does not enforce): it holds
// at most that many opening brackets.
func shallow(data []byte) bool {
	return bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) <= 10000
}

func decodeJSONStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// Only white space may follow: Token reports io.EOF at the end, and
	// anything else (another value, or a stray "]" or "}") is trailing data.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// ParseArgs parses tool-call arguments, which must be a JSON object.
func ParseArgs(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	v, err := DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments are not a JSON object")
	}
	return obj, nil
}

// EqualUnordered is Equal with lists compared as multisets, at every
// depth: the same recipients, ids or attendees in another order are the
// same argument. Argument matching, the allowed and exact constraints and
// the fields of state items (contains, where) compare this way; a state
// path's own equals keeps its order (equals_set is the unordered one).
func EqualUnordered(a, b any) bool { return equal(a, b, true) }

// Equal compares two decoded JSON values after normalisation: object key
// order never matters and numbers compare by value.
func Equal(a, b any) bool { return equal(a, b, false) }

func equal(a, b any, unordered bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv, unordered) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		inOrder := true
		for i := range x {
			if !equal(x[i], y[i], unordered) {
				inOrder = false
				break
			}
		}
		if inOrder || !unordered {
			return inOrder
		}
		// Equality is an equivalence, so pairing each element with the
		// first unused equal one decides multiset equality.
		used := make([]bool, len(y))
	next:
		for _, xe := range x {
			for j, ye := range y {
				if !used[j] && equal(xe, ye, true) {
					used[j] = true
					continue next
				}
			}
			return false
		}
		return true
	case json.Number:
		switch y := b.(type) {
		case json.Number:
			return numbersEqual(x, y)
		case float64:
			return numbersEqual(x, json.Number(fmt.Sprint(y)))
		}
		return false
	case float64:
		return equal(json.Number(fmt.Sprint(x)), b, unordered)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false
}

func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	if canonicalInt(a) && canonicalInt(b) {
		// Two integers written without leading zeros differ in value
		// when they differ in text, except 0 and -0.
		return strings.TrimPrefix(string(a), "-") == "0" && strings.TrimPrefix(string(b), "-") == "0"
	}
	x, ok1 := exactNumber(a)
	y, ok2 := exactNumber(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// canonicalInt reports whether n is -?(0|[1-9][0-9]*).
func canonicalInt(n json.Number) bool {
	s := string(n)
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// exactNumber parses a JSON number exactly. Numbers written with a huge
// exponent (model output is untrusted) are refused rather than expanded into
// megabytes of digits; they then compare by their text alone.
func exactNumber(n json.Number) (*big.Rat, bool) {
	s := string(n)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || exp > 400 || exp < -400 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}

// numberText is a number's shortest form (7.0 and 7 both read "7"), for
// naming resources.
func numberText(n json.Number) string {
	r, ok := exactNumber(n)
	if !ok {
		return string(n)
	}
	if r.IsInt() {
		return r.Num().String()
	}
	if f, err := n.Float64(); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(n)
}

// Matcher decides whether a call's arguments match an argument subset and
// optional patterns. The zero Matcher matches every call.
type Matcher struct {
	want     map[string]any
	patterns map[string]*regexp.Regexp
	keys     []string        // sorted keys of want, for deterministic messages
	ordered  map[string]bool // arguments whose lists keep their order (Normalizers.Ordered)
}

// NewMatcher compiles an argument subset and its patterns.
func NewMatcher(args map[string]json.RawMessage, patterns map[string]string) (Matcher, error) {
	m := Matcher{}
	if len(args) > 0 {
		m.want = make(map[string]any, len(args))
		for k, raw := range args {
			v, err := DecodeJSON(raw)
			if err != nil {
				return Matcher{}, fmt.Errorf("args.%s: %w", k, err)
			}
			m.want[k] = v
			m.keys = append(m.keys, k)
		}
		sort.Strings(m.keys)
	}
	if len(patterns) > 0 {
		m.patterns = make(map[string]*regexp.Regexp, len(patterns))
		for k, p := range patterns {
			re, err := regexp.Compile(p)
			if err != nil {
				return Matcher{}, fmt.Errorf("patterns.%s: %w", k, err)
			}
			m.patterns[k] = re
		}
	}
	return m, nil
}

// Match reports whether args holds every wanted key with an equal value and
// every patterned key with a value the pattern matches. A pattern is matched
// against a string argument as it is and against any other value's JSON text.
func (m Matcher) Match(args map[string]any) bool {
	for k, want := range m.want {
		got, ok := args[k]
		if !ok || !equal(want, got, !m.ordered[k]) {
			return false
		}
	}
	for k, re := range m.patterns {
		got, ok := args[k]
		if !ok || !re.MatchString(valueText(got)) {
			return false
		}
	}
	return true
}

// Want returns the literal argument subset (decoded), keyed by name.
func (m Matcher) Want() map[string]any { return m.want }

// Pattern returns the compiled pattern for an argument, or nil.
func (m Matcher) Pattern(arg string) *regexp.Regexp { return m.patterns[arg] }

// Disjoint reports whether no call can match both m and o: some argument has
// different literal values, or one side's literal fails the other's pattern.
// It is conservative: two patterns on the same argument are assumed to
// overlap, since deciding regular-language intersection is not worth it here.
func (m Matcher) Disjoint(o Matcher) bool {
	for k, v := range m.want {
		if w, ok := o.want[k]; ok && !equal(v, w, !m.ordered[k] && !o.ordered[k]) {
			return true
		}
		if re := o.patterns[k]; re != nil && !re.MatchString(valueText(v)) {
			return true
		}
	}
	for k, w := range o.want {
		if re := m.patterns[k]; re != nil && !re.MatchString(valueText(w)) {
			return true
		}
	}
	return false
}

// valueText is the text a pattern sees: a string as it is, anything else
// as JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
