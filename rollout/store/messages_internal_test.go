package store

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnescapeMatchesEncodingJSON: a string's value is encoding/json's,
// for strings of every escape, surrogate pairs whole, halved, reversed or
// followed by something else, and text past ASCII.
func TestUnescapeMatchesEncodingJSON(t *testing.T) {
	parts := []string{`a`, ` `, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u00e9`, `\u20AC`, `\u0000`,
		`\uD83D\uDE00`, `\ud83d\ude00`, `\uD83D`, `\uDE00`, `\uDE00\uD83D`, `\uD83D\u0041`, `\uD83D\uD83D\uDE00`, `\uD83Dx`, `\uD83D\`,
		`é`, `€`, `😀`, `\u2028`, `<`, `&`, `u`, `\u`}
	rng := rand.New(rand.NewPCG(3, 4))
	var cases []string
	for _, p := range parts {
		cases = append(cases, p, "x"+p+"y")
	}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		cases = append(cases, b.String())
	}
	for _, raw := range cases {
		line := `"` + raw + `"`
		var want string
		wantErr := json.Unmarshal([]byte(line), &want)
		w := &walker{b: []byte(line)}
		got, ok := w.str()
		if wantErr != nil {
			require.False(t, ok && w.i == len(line), "%s: encoding/json refuses it (%v)", line, wantErr)
			continue
		}
		require.True(t, ok, line)
		require.Equal(t, want, unescape(got), line)
	}
}
