package probe

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// params is the part of a tool's JSON Schema the generator reads.
type params struct {
	props    map[string]map[string]any
	required []string
}

func readParams(raw json.RawMessage) params {
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	return schemaParams(doc)
}

func schemaParams(doc map[string]any) params {
	p := params{props: map[string]map[string]any{}}
	if props, ok := doc["properties"].(map[string]any); ok {
		for k, v := range props {
			if m, ok := v.(map[string]any); ok {
				p.props[k] = m
			}
		}
	}
	if req, ok := doc["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				p.required = append(p.required, s)
			}
		}
	}
	return p
}

// normaliser is the documented normaliser of a parameter: x-normalize, or
// the one its format implies; "" when none.
func normaliser(prop map[string]any) string {
	if n, ok := prop["x-normalize"].(string); ok {
		return n
	}
	switch prop["format"] {
	case "date-time":
		return "instant"
	case "date":
		return "date"
	case "email", "idn-email":
		return "email"
	case "phone":
		return "phone"
	case "iban":
		return "iban"
	case "card":
		return "card"
	}
	return ""
}

func schemaType(prop map[string]any) string {
	switch t := prop["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				return s
			}
		}
	}
	if _, ok := prop["enum"]; ok {
		return "enum"
	}
	return ""
}

// fillValue is a placeholder for a required argument nothing else gives:
// the first enum member, text that carries what the success criteria look
// for, or the smallest valid number.
func fillValue(prop map[string]any, text string) any {
	if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
		return toDecoded(enum[0])
	}
	switch schemaType(prop) {
	case "integer":
		return json.Number(strconv.FormatInt(int64(lowerBound(prop)), 10))
	case "number":
		return json.Number(strconv.FormatFloat(lowerBound(prop), 'f', -1, 64))
	case "boolean":
		return false
	case "array":
		items, _ := prop["items"].(map[string]any)
		n := 0
		if m, ok := prop["minItems"].(float64); ok {
			n = int(m)
		}
		out := []any{}
		for range n {
			out = append(out, fillValue(items, text))
		}
		return out
	case "object":
		p := schemaParams(prop)
		out := map[string]any{}
		for _, r := range p.required {
			out[r] = fillValue(p.props[r], text)
		}
		return out
	}
	return text
}

func lowerBound(prop map[string]any) float64 {
	if m, ok := prop["minimum"].(float64); ok {
		return m
	}
	if m, ok := prop["exclusiveMinimum"].(float64); ok {
		return m + 1
	}
	return 1
}

// toDecoded turns a value decoded with float64 numbers into the
// json.Number form the scenario package uses.
func toDecoded(v any) any {
	b, _ := json.Marshal(v)
	d, err := scenario.DecodeJSON(b)
	if err != nil {
		return v
	}
	return d
}

func decodeArgs(args map[string]json.RawMessage) (map[string]any, error) {
	out := make(map[string]any, len(args))
	for k, raw := range args {
		v, err := scenario.DecodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("args.%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// copyArgs is a deep copy of decoded arguments.
func copyArgs(a map[string]any) map[string]any {
	return copyValue(a).(map[string]any)
}

func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}

// encode writes arguments as JSON text: keys sorted, or in reverse order
// when reverse is set (key order must never matter); json.Number keeps the
// text it was given, so 7.950 stays 7.950.
func encode(v any, reverse bool) string {
	var b strings.Builder
	encodeTo(&b, v, reverse)
	return b.String()
}

func encodeTo(b *strings.Builder, v any, reverse bool) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if reverse {
			for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			encodeTo(b, x[k], reverse)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeTo(b, e, reverse)
		}
		b.WriteByte(']')
	default:
		vb, err := json.Marshal(x)
		if err != nil {
			vb = []byte("null")
		}
		b.Write(vb)
	}
}

// numberForm rewrites a number in another accepted surface form: an
// integer with a fraction (3 -> 3.0), a fraction with a trailing zero
// (7.95 -> 7.950).
func numberForm(n json.Number) json.Number {
	s := string(n)
	if strings.ContainsAny(s, "eE") {
		return n
	}
	if strings.Contains(s, ".") {
		return json.Number(s + "0")
	}
	return json.Number(s + ".0")
}

// widenNumber doubles a number (0 becomes 1), keeping integers integral.
func widenNumber(n json.Number) json.Number {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return n
	}
	if r.Sign() == 0 {
		return "1"
	}
	r.Mul(r, big.NewRat(2, 1))
	if r.IsInt() {
		return json.Number(r.Num().String())
	}
	f, _ := r.Float64()
	return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
}

// surfaceForm rewrites a string in another form its normaliser accepts
// (and surrounding white space, which every string loses); ok is false
// when there is no other form.
func surfaceForm(s, norm string) (string, bool) {
	switch norm {
	case "instant":
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return "", false
		}
		if _, off := t.Zone(); off == 0 {
			return t.In(time.FixedZone("", 2*3600)).Format(time.RFC3339), true
		}
		return t.UTC().Format(time.RFC3339), true
	case "date":
		if d, err := time.Parse("2006-01-02", s); err == nil {
			return d.Format("2006/01/02"), true
		}
		return "", false
	case "email":
		// Upper case inside a display name: the name-addr form a model
		// may well write ("Dana Kim <dana.kim@example.org>").
		if !strings.Contains(s, "@") || strings.ContainsAny(s, " <>") {
			return "", false
		}
		return "Recipient <" + strings.ToUpper(s) + ">", true
	case "casefold":
		if up := strings.ToUpper(s); up != s {
			return up, true
		}
		return "", false
	case "phone":
		digits := strings.TrimPrefix(s, "+")
		if !regexp.MustCompile(`^[0-9]{6,}$`).MatchString(digits) {
			return "", false
		}
		var b strings.Builder
		b.WriteString("00")
		for i, r := range digits {
			if i > 0 && i%3 == 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
		}
		return b.String(), true
	case "iban", "card":
		var b strings.Builder
		for i, r := range strings.ReplaceAll(s, " ", "") {
			if i > 0 && i%4 == 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
		}
		out := b.String()
		if norm == "iban" {
			out = strings.ToLower(out)
		}
		return out, out != s
	}
	return " " + s + " ", true
}

// Dates and instants.

var durationRE = regexp.MustCompile(`^P(?:([0-9]+)W)?(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+)S)?)?$`)

// parseDuration reads the ISO 8601 durations windows use (W, D, H, M, S).
func parseDuration(s string) (time.Duration, bool) {
	m := durationRE.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, false
	}
	units := []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}
	var d time.Duration
	for i, u := range units {
		if m[i+1] != "" {
			n, _ := strconv.Atoi(m[i+1])
			d += time.Duration(n) * u
		}
	}
	return d, true
}

// formatDuration writes a duration in the same ISO 8601 subset.
func formatDuration(d time.Duration) string {
	days := d / (24 * time.Hour)
	rest := d % (24 * time.Hour)
	out := "P"
	if days > 0 {
		out += fmt.Sprintf("%dD", days)
	}
	if rest > 0 {
		out += "T"
		if h := rest / time.Hour; h > 0 {
			out += fmt.Sprintf("%dH", h)
		}
		if m := rest % time.Hour / time.Minute; m > 0 {
			out += fmt.Sprintf("%dM", m)
		}
		if s := rest % time.Minute / time.Second; s > 0 {
			out += fmt.Sprintf("%dS", s)
		}
	}
	if out == "P" {
		out = "PT0S"
	}
	return out
}

// moment is a date or an instant read from an argument, kept with its form
// so that a shifted value is written the same way.
type moment struct {
	t      time.Time
	isDate bool
}

func parseMoment(s string) (moment, bool) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return moment{t: t}, true
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return moment{t: t, isDate: true}, true
	}
	return moment{}, false
}

func (m moment) add(d time.Duration) string {
	t := m.t.Add(d)
	if m.isDate {
		return t.Format("2006-01-02")
	}
	return t.Format(time.RFC3339)
}

// resolveBound reads a window bound: an instant, a date, or now±duration
// relative to the scenario's clock. A date taken as an upper bound covers
// its whole day.
func resolveBound(b, now string, upper bool) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339, b); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02", b); err == nil {
		if upper {
			t = t.Add(24*time.Hour - time.Second)
		}
		return t, true
	}
	if !strings.HasPrefix(b, "now") {
		return time.Time{}, false
	}
	n, err := time.Parse(time.RFC3339, now)
	if err != nil {
		return time.Time{}, false
	}
	rest := b[3:]
	if rest == "" {
		return n, true
	}
	sign := time.Duration(1)
	switch rest[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return time.Time{}, false
	}
	d, ok := parseDuration(rest[1:])
	if !ok {
		return time.Time{}, false
	}
	return n.Add(sign * d), true
}

// windowPairs are argument names that bound one period together.
var windowPairs = [][2]string{
	{"from", "to"}, {"start", "end"}, {"since", "until"}, {"not_before", "not_after"},
	{"start_date", "end_date"}, {"date_from", "date_to"}, {"from_date", "to_date"},
	{"start_time", "end_time"}, {"period_start", "period_end"}, {"check_in", "check_out"},
	{"after", "before"}, {"begin", "end"},
}

var idArgRE = scenario.IdentifierArgRE
