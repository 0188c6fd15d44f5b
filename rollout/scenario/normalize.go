package scenario

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Normalizer names: the values of a parameter's "x-normalize", and the
// canonical forms they produce.
const (
	NormInstant  = "instant"  // the same instant in UTC, RFC 3339
	NormDate     = "date"     // YYYY-MM-DD
	NormEmail    = "email"    // lower case
	NormPhone    = "phone"    // "+" and digits
	NormIBAN     = "iban"     // upper case, no spaces
	NormCard     = "card"     // digits only
	NormCasefold = "casefold" // lower case, inner white space collapsed
	NormTrim     = "trim"     // surrounding white space removed (every string)
)

// NormalizerNames lists the names "x-normalize" accepts, in a fixed order.
var NormalizerNames = []string{NormInstant, NormDate, NormEmail, NormPhone, NormIBAN, NormCard, NormCasefold, NormTrim}

// formatNormalizer maps JSON Schema "format" values to normalisers. Other
// formats are an open vocabulary and normalise nothing.
var formatNormalizer = map[string]string{
	"date-time": NormInstant, "date": NormDate, "email": NormEmail, "idn-email": NormEmail,
	"phone": NormPhone, "iban": NormIBAN, "card": NormCard,
}

// KnownNormalizer reports whether name is a normaliser ("date-time" is
// accepted as a synonym of "instant").
func KnownNormalizer(name string) bool {
	if name == "date-time" {
		return true
	}
	for _, n := range NormalizerNames {
		if n == name {
			return true
		}
	}
	return false
}

// Normalize returns the canonical form of a string under a normaliser. A
// value the normaliser cannot read (a date-time that does not parse) is
// only trimmed, so that it still compares with itself.
func Normalize(name, s string) string {
	s = strings.TrimSpace(s)
	switch name {
	case NormInstant, "date-time":
		if t, ok := ParseInstant(s); ok {
			return t.UTC().Format(time.RFC3339Nano)
		}
	case NormDate:
		if d, ok := parseDate(s); ok {
			return d
		}
	case NormEmail:
		return normEmail(s)
	case NormPhone:
		return normPhone(s)
	case NormIBAN:
		return strings.ToUpper(strings.Join(strings.Fields(s), ""))
	case NormCard:
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			if r == ' ' || r == '-' {
				return -1
			}
			return r
		}, s)
	case NormCasefold:
		if f, ok := casefoldASCII(s); ok {
			return f
		}
		return strings.ToLower(strings.Join(strings.Fields(s), " "))
	}
	return s
}

// casefoldASCII is strings.ToLower(strings.Join(strings.Fields(s), " "))
// for ASCII text (ok false for any other), in one pass: s itself when it
// is already folded.
func casefoldASCII(s string) (string, bool) {
	same := true // the output so far equals s's prefix
	var buf [256]byte
	out := buf[:0]
	space := false // a space is due before the next word
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return "", false
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' {
			if len(out) > 0 {
				space = true
			}
			if c != ' ' || len(out) == 0 || (i > 0 && isASCIISpace(s[i-1])) {
				same = false // not a single space between words
			}
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
			same = false
		}
		out = append(out, c)
	}
	if space {
		same = false // trailing white space
	}
	if same {
		return s, true
	}
	return string(out), true
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

var instantLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04Z07:00",
}

// ParseInstant reads an RFC 3339 date-time (also with a space for "T",
// without seconds, or with a +hhmm offset). A date-time must carry an
// offset or Z: a local time names no instant.
func ParseInstant(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if !instantShaped(s) {
		return time.Time{}, false // no layout can read it: spare time.Parse's errors
	}
	if len(s) > 10 && (s[10] == 't' || s[10] == ' ') {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	for _, l := range instantLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// instantShaped reports whether some instant layout might read s (before
// ParseInstant's rewrites): at least "YYYY-MM-DDTh:mmZ", with the date's
// digits and dashes in place (year, month and day are fixed-width in the
// layouts), a "T", "t" or " " after it and the colon after the hour (which
// time.Parse reads as one or two digits). Every layout needs all of that,
// so nothing else parses.
func instantShaped(s string) bool {
	if len(s) < len("2006-01-02T1:04Z") || !dateShaped(s[:10]) {
		return false
	}
	return (s[10] == 'T' || s[10] == 't' || s[10] == ' ') && (s[12] == ':' || s[13] == ':')
}

// dateShaped reports whether s is "YYYY-MM-DD" in form: ten characters,
// digits with dashes at 4 and 7.
func dateShaped(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < 10; i++ {
		c := s[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func parseDate(s string) (string, bool) {
	for _, l := range []string{"2006-01-02", "2006/01/02", "2006.01.02"} {
		if t, err := time.Parse(l, s); err == nil {
			return t.Format("2006-01-02"), true
		}
	}
	if len(s) > 10 {
		if _, ok := ParseInstant(s); ok {
			return s[:10], true // the date as written, in its own offset
		}
	}
	return "", false
}

// normEmail is the address, lower-cased: a display name around it ("Ana
// Silva <ana@x.example>", the RFC 5322 name-addr form) and a "mailto:"
// prefix go, since neither changes whom a message reaches.
func normEmail(s string) string {
	if len(s) > 7 && strings.EqualFold(s[:7], "mailto:") {
		s = strings.TrimSpace(s[7:])
	}
	if strings.HasSuffix(s, ">") {
		if i := strings.LastIndexByte(s, '<'); i >= 0 {
			if addr := strings.TrimSpace(s[i+1 : len(s)-1]); strings.Contains(addr, "@") && !strings.ContainsAny(addr, " <>,") {
				s = addr
			}
		}
	}
	return strings.ToLower(s)
}

// normPhone is E.164-like: "+" and digits. Spaces, dashes, dots, slashes
// and brackets are dropped, a leading "00" reads as "+", a "tel:" prefix
// goes, and so does a bracketed trunk "(0)" after a country code. Anything
// else is no phone number and is compared as written.
func normPhone(s string) string {
	t := strings.TrimSpace(s)
	if len(t) > 4 && strings.EqualFold(t[:4], "tel:") { // an RFC 3966 URI
		t = t[4:]
	}
	if strings.HasPrefix(t, "+") || strings.HasPrefix(t, "00") || strings.HasPrefix(t, "(+") {
		// "+44 (0)20 7946 0958": the bracketed national trunk 0 is not
		// dialled after a country code.
		t = dropTrunkZero(t)
	}
	var b strings.Builder
	for _, r := range t {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && b.Len() == 0: // "+1 …", "(+1) …"
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')' || r == '/' || unicode.IsSpace(r):
		default:
			return s // not a phone number: compare as written
		}
	}
	out := b.String()
	if strings.HasPrefix(out, "00") {
		out = "+" + out[2:]
	}
	return out
}

// dropTrunkZero removes the first bracketed trunk zero, white space
// inside the brackets allowed: "(0)", "(0 )", "( 0 )".
func dropTrunkZero(t string) string {
	for i := 0; i < len(t); i++ {
		if t[i] != '(' {
			continue
		}
		j := i + 1
		skip := func() {
			for j < len(t) {
				r, n := utf8.DecodeRuneInString(t[j:])
				if !unicode.IsSpace(r) {
					return
				}
				j += n
			}
		}
		skip()
		if j >= len(t) || t[j] != '0' {
			continue
		}
		j++
		skip()
		if j < len(t) && t[j] == ')' {
			return t[:i] + t[j+1:]
		}
	}
	return t
}

// Normalizers are a tool's per-parameter normalisers, keyed by argument
// path ("to", "meeting.start", "attendees" for the items of an array).
// The zero value normalises only number forms and white space.
type Normalizers struct {
	byPath map[string]string
	// ordered holds the argument paths whose lists keep their order
	// ("x-ordered": true: a ranking, a sequence of steps); every other
	// list compares as a multiset (EqualUnordered).
	ordered map[string]bool
}

// CompileNormalizers reads the normalisers of a tool's parameters: each
// property's "x-normalize", else its "format", through nested "properties"
// and "items". An unknown "x-normalize" name is an error naming its path in
// the parameters.
func CompileNormalizers(params json.RawMessage) (Normalizers, error) {
	n := Normalizers{byPath: map[string]string{}}
	if len(params) == 0 {
		return n, nil
	}
	// DecodeJSON allocates a fraction of what json.Unmarshal does (Prepare
	// runs this for every tool of every scenario of a run); what Unmarshal
	// would refuse, a number out of float64's range, is refused here too.
	v, err := DecodeJSON(params)
	if err != nil || !floatRange(v) {
		return n, nil // the schema check reports it
	}
	root, _ := v.(map[string]any)
	if v != nil && root == nil {
		return n, nil // not an object: as Unmarshal's type error
	}
	var errs []string
	var walk func(schema map[string]any, argPath, schemaPath string)
	walk = func(schema map[string]any, argPath, schemaPath string) {
		if argPath != "" {
			if o, _ := schema["x-ordered"].(bool); o {
				if n.ordered == nil {
					n.ordered = map[string]bool{}
				}
				n.ordered[argPath] = true
			}
			if x, ok := schema["x-normalize"]; ok {
				name, _ := x.(string)
				if !KnownNormalizer(name) {
					errs = append(errs, fmt.Sprintf("%s.x-normalize: unknown normaliser %q (want one of %s)", schemaPath, fmt.Sprint(asFloats(x)), strings.Join(NormalizerNames, ", ")))
				} else {
					n.byPath[argPath] = name
				}
			} else if f, ok := schema["format"].(string); ok && formatNormalizer[f] != "" {
				n.byPath[argPath] = formatNormalizer[f]
			}
		}
		if props, ok := schema["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if sub, ok := props[k].(map[string]any); ok {
					walk(sub, joinPath(argPath, k), schemaPath+".properties."+k)
				}
			}
		}
		if items, ok := schema["items"].(map[string]any); ok {
			walk(items, argPath, schemaPath+".items")
		}
	}
	walk(root, "", "parameters")
	if len(errs) > 0 {
		return n, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return n, nil
}

// floatRange reports whether every number in v fits a float64, as
// json.Unmarshal into an interface needs.
func floatRange(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, err := x.Float64()
		return err == nil
	case map[string]any:
		for _, e := range x {
			if !floatRange(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !floatRange(e) {
				return false
			}
		}
	}
	return true
}

// asFloats is v with its numbers as float64, as json.Unmarshal gives them
// (for messages that print a value).
func asFloats(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = asFloats(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = asFloats(e)
		}
		return out
	}
	return v
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// For returns the normaliser of an argument path ("" for none).
func (n Normalizers) For(path string) string { return n.byPath[path] }

// Ordered reports whether the list at an argument path keeps its order
// ("x-ordered": true).
func (n Normalizers) Ordered(path string) bool { return n.ordered[path] }

// Args returns a normalised copy of a call's arguments: every string
// trimmed and, where a normaliser is declared, in its canonical form.
func (n Normalizers) Args(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = n.value(k, v)
	}
	return out
}

// ArgsShared is Args, except that arguments that normalising would leave
// as they are come back as they are, not copied: the result may be args
// itself, and neither may be modified. It is for the per-call paths
// (environment, drift detector, judge), which only read arguments.
func (n Normalizers) ArgsShared(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	for k, v := range args {
		if !n.same(k, v) {
			return n.Args(args)
		}
	}
	return args
}

// same reports whether value(path, v) equals v (the same strings, numbers
// and structure), without building it.
func (n Normalizers) same(path string, v any) bool {
	switch x := v.(type) {
	case string:
		return normalizeSame(n.byPath[path], x)
	case []any:
		for _, e := range x {
			if !n.same(path, e) {
				return false
			}
		}
	case map[string]any:
		for k, e := range x {
			sub := k
			if len(n.byPath) > 0 { // the path matters only when a normaliser is declared
				sub = joinPath(path, k)
			}
			if !n.same(sub, e) {
				return false
			}
		}
	}
	return true
}

// normalizeSame reports whether Normalize(name, s) == s, without
// allocating for the common forms.
func normalizeSame(name, s string) bool {
	if strings.TrimSpace(s) != s {
		return false // every form is trimmed
	}
	switch name {
	case "", NormTrim, NormEmail, NormCard:
		return Normalize(name, s) == s // trimming, ToLower and Map return s itself when unchanged
	case NormDate:
		if dateShaped(s) {
			// time.Parse("2006-01-02") reads it back as written, or fails
			// on every layout (and it is no instant): either way, s.
			return true
		}
	case NormInstant, "date-time":
		t, ok := ParseInstant(s)
		if !ok {
			return true // only trimmed
		}
		var buf [64]byte
		return string(t.UTC().AppendFormat(buf[:0], time.RFC3339Nano)) == s
	}
	return Normalize(name, s) == s
}

// Value normalises one value found at an argument path.
func (n Normalizers) Value(path string, v any) any { return n.value(path, v) }

func (n Normalizers) value(path string, v any) any {
	switch x := v.(type) {
	case string:
		if s := Normalize(n.byPath[path], x); s != x {
			return s
		}
		return v // unchanged: keep the boxed value rather than box a copy
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.value(path, e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = n.value(joinPath(path, k), e)
		}
		return out
	}
	return v
}

// Matcher compiles an argument subset with the literals in canonical form,
// for matching against arguments normalised with Args.
func (n Normalizers) Matcher(args map[string]json.RawMessage, patterns map[string]string) (Matcher, error) {
	m, err := NewMatcher(args, patterns)
	if err != nil {
		return m, err
	}
	for k, v := range m.want {
		m.want[k] = n.value(k, v)
		if n.ordered[k] {
			if m.ordered == nil {
				m.ordered = map[string]bool{}
			}
			m.ordered[k] = true
		}
	}
	return m, nil
}
