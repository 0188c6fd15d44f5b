package scenario

import (
	"fmt"
	"strings"
	"time"
)

// FixedDuration reads an ISO 8601 duration of fixed length: weeks, days
// (of 24 hours), hours, minutes and seconds. Years and months have no
// fixed length, so an interval cannot be compared with them.
func FixedDuration(s string) (time.Duration, error) {
	d, err := ParseISODuration(s)
	if err != nil {
		return 0, err
	}
	if d.Years != 0 || d.Months != 0 {
		return 0, fmt.Errorf("%q has years or months, which have no fixed length: write weeks, days, hours, minutes or seconds", s)
	}
	return time.Duration(d.Days)*24*time.Hour + d.Clock, nil
}

// Bounds are the limits a DurationCheck states, read once.
type DurationBounds struct {
	Equals, AtLeast, AtMost *time.Duration
}

// Bounds reads the check's limits; the error names the first that is no
// fixed-length duration.
func (c *DurationCheck) Bounds() (DurationBounds, error) {
	var b DurationBounds
	for _, f := range []struct {
		name, text string
		dst        **time.Duration
	}{{"equals", c.Equals, &b.Equals}, {"at_least", c.AtLeast, &b.AtLeast}, {"at_most", c.AtMost, &b.AtMost}} {
		if f.text == "" {
			continue
		}
		d, err := FixedDuration(f.text)
		if err != nil {
			return b, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = &d
	}
	if b.Equals == nil && b.AtLeast == nil && b.AtMost == nil {
		return b, fmt.Errorf("needs equals, at_least or at_most")
	}
	if b.Equals != nil && (b.AtLeast != nil || b.AtMost != nil) {
		return b, fmt.Errorf("equals cannot be combined with at_least or at_most")
	}
	if b.AtLeast != nil && b.AtMost != nil && *b.AtLeast > *b.AtMost {
		return b, fmt.Errorf("at_least %s is above at_most %s: no interval can pass", c.AtLeast, c.AtMost)
	}
	return b, nil
}

// Span is the length of the interval an item spans from its start field
// to its end field ("" and false when either is absent or no instant or
// date: a local time with no offset names no instant).
func (c *DurationCheck) Span(item any) (time.Duration, string) {
	m, ok := item.(map[string]any)
	if !ok {
		return 0, "is not an object"
	}
	at := func(field string) (time.Time, string) {
		v, ok := LookupPath(m, field)
		if !ok {
			return time.Time{}, fmt.Sprintf("has no %s", field)
		}
		s, _ := v.(string)
		if t, ok := ParseInstant(s); ok {
			return t, ""
		}
		if d, ok := parseDate(strings.TrimSpace(s)); ok {
			t, _ := time.Parse("2006-01-02", d)
			return t, ""
		}
		return time.Time{}, fmt.Sprintf("%s = %q is no instant with an offset or date", field, s)
	}
	start, why := at(c.Start)
	if why != "" {
		return 0, why
	}
	end, why := at(c.End)
	if why != "" {
		return 0, why
	}
	return end.Sub(start), ""
}

// Holds checks a span against the bounds; it says why not.
func (b DurationBounds) Holds(d time.Duration) (bool, string) {
	switch {
	case b.Equals != nil && d != *b.Equals:
		return false, fmt.Sprintf("lasts %s, want %s", d, *b.Equals)
	case b.AtLeast != nil && d < *b.AtLeast:
		return false, fmt.Sprintf("lasts %s, want at least %s", d, *b.AtLeast)
	case b.AtMost != nil && d > *b.AtMost:
		return false, fmt.Sprintf("lasts %s, want at most %s", d, *b.AtMost)
	}
	return true, ""
}
