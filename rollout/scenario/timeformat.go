package scenario

import (
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
)

// Time formats are asserted. JSON Schema 2020-12 makes "format" an
// annotation (jsonschema/v6 checks none unless told to), so without this a
// local time such as "2027-03-04T10:00:00" in a "format": "date-time"
// field passed the schema, and the window constraint that then could not
// read it labelled the call drift. A value that names no instant is a
// malformed argument, not a time outside the boundary: the schema rejects
// it, the mock tool answers with an error the agent can correct, and the
// drift detector, which checks windows only on schema-valid calls, labels
// nothing.
//
// Only the time formats are asserted, and with the readers the normalisers
// and windows use (ParseInstant, parseDate), so that every value a window
// can place passes and nothing else does; other formats ("email", "uri",
// ...) stay annotations, as before. The check is a vocabulary of its own,
// so it applies wherever a "format" sits in the schema (nested
// properties, items, anyOf branches, $defs).

// TimeFormats are the "format" values whose strings must name a time:
// "date-time" an instant (with a UTC offset or Z), "date" a day.
var TimeFormats = []string{"date-time", "date"}

// IsTimeFormat reports whether a "format" value is one of TimeFormats.
func IsTimeFormat(f string) bool { return f == "date-time" || f == "date" }

var timeFormatVocab = &jsonschema.Vocabulary{
	URL:     "urn:antidrift:vocab:time-format",
	Compile: compileTimeFormat,
}

func compileTimeFormat(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	if f, ok := obj["format"].(string); ok && IsTimeFormat(f) {
		return timeFormat(f), nil
	}
	return nil, nil
}

// timeFormat checks one string against a time format.
type timeFormat string

func (f timeFormat) Validate(ctx *jsonschema.ValidatorContext, v any) {
	s, ok := v.(string)
	if !ok {
		return // "type" speaks for other values
	}
	if msg := TimeFormatProblem(string(f), s); msg != "" {
		ctx.AddError(timeFormatError(msg))
	}
}

// timeFormatError is the schema error of a value its time format cannot
// read; the text says what to write instead.
type timeFormatError string

func (e timeFormatError) KeywordPath() []string                   { return []string{"format"} }
func (e timeFormatError) LocalizedString(*message.Printer) string { return string(e) }

// TimeFormatProblem says why s is not a value of the time format f
// ("date-time" or "date"), and what to write instead; "" when it is one
// (or f is no time format). A "date-time" must name an instant: a local
// time without an offset does not.
func TimeFormatProblem(f, s string) string {
	t := strings.TrimSpace(s)
	switch f {
	case "date-time":
		if _, ok := ParseInstant(t); ok {
			return ""
		}
		if _, ok := ParseInstant(t + "Z"); ok {
			return fmt.Sprintf("%s has no UTC offset, so it names no instant: write it as %s+01:00 (with the offset it is in) or in UTC ending in Z", t, t)
		}
		if dateShaped(t) {
			return fmt.Sprintf("%s is a date, not a date-time: write the time and its offset, e.g. %sT09:00:00+01:00", t, t)
		}
		return fmt.Sprintf("%q is not an RFC 3339 date-time: write it as YYYY-MM-DDThh:mm:ss with a UTC offset (+01:00) or Z", s)
	case "date":
		if _, ok := parseDate(t); ok {
			return ""
		}
		if len(t) > 10 && dateShaped(t[:10]) {
			return fmt.Sprintf("%s is not a date: write the day alone, %s", t, t[:10])
		}
		return fmt.Sprintf("%q is not a date: write it as YYYY-MM-DD", s)
	}
	return ""
}
