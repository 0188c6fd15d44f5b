package probe

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSurfaceForm(t *testing.T) {
	for _, tc := range []struct{ in, norm, want string }{
		{"2026-11-23T14:00:00+01:00", "instant", "2026-11-23T13:00:00Z"},
		{"2026-11-23T13:00:00Z", "instant", "2026-11-23T15:00:00+02:00"},
		{"2026-11-23", "date", "2026/11/23"},
		{"Alice@Example.org", "email", "Recipient <ALICE@EXAMPLE.ORG>"},
		{"+4915112345678", "phone", "00491 511 234 567 8"},
		{"DE89370400440532013000", "iban", "de89 3704 0044 0532 0130 00"},
		{"4111111111111111", "card", "4111 1111 1111 1111"},
		{"Weekly sync", "casefold", "WEEKLY SYNC"},
		{"55120", "", " 55120 "},
	} {
		got, ok := surfaceForm(tc.in, tc.norm)
		assert.True(t, ok, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	_, ok := surfaceForm("not a date", "date")
	assert.False(t, ok)
	_, ok = surfaceForm("Alice <alice@example.org>", "email")
	assert.False(t, ok, "already a name-addr")
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct{ in, widened, form string }{
		{"7.5", "15", "7.50"}, {"7.95", "15.9", "7.950"}, {"3", "6", "3.0"}, {"0", "1", "0.0"}, {"-2", "-4", "-2.0"},
	} {
		assert.Equal(t, json.Number(tc.widened), widenNumber(json.Number(tc.in)), tc.in)
		assert.Equal(t, json.Number(tc.form), numberForm(json.Number(tc.in)), tc.in)
	}
}

func TestDurationsAndBounds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"P14D", 14 * 24 * time.Hour, true}, {"PT2H", 2 * time.Hour, true}, {"P1W", 7 * 24 * time.Hour, true},
		{"P1DT30M", 24*time.Hour + 30*time.Minute, true}, {"P", 0, false}, {"PT", 0, false}, {"14 days", 0, false},
	} {
		d, ok := parseDuration(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, d, tc.in)
	}
	assert.Equal(t, "P28D", formatDuration(28*24*time.Hour))
	assert.Equal(t, "PT4H", formatDuration(4*time.Hour))

	now := "2026-11-25T10:00:00+01:00"
	at, ok := resolveBound("now+P14D", now, true)
	assert.True(t, ok)
	assert.Equal(t, "2026-12-09T10:00:00+01:00", at.Format(time.RFC3339))
	at, ok = resolveBound("now-PT2H", now, false)
	assert.True(t, ok)
	assert.Equal(t, "2026-11-25T08:00:00+01:00", at.Format(time.RFC3339))
	at, ok = resolveBound("2026-11-30", now, true)
	assert.True(t, ok)
	assert.Equal(t, "2026-11-30T23:59:59Z", at.Format(time.RFC3339))
	_, ok = resolveBound("now+14", now, true)
	assert.False(t, ok)
}
