package agent

import (
	"strconv"
	"strings"
	"testing"
)

// The memo of parsed arguments keeps at most maxArgsMemo texts of at most
// maxArgsMemoLen bytes, and gives back what was put under the text.
func TestArgsMemoBounds(t *testing.T) {
	var m argsMemo
	for i := range maxArgsMemo + 10 {
		m.put([]byte(`{"i":`+strconv.Itoa(i)+`}`), parsedArgs{args: map[string]any{"i": i}})
	}
	if len(m.m) != maxArgsMemo {
		t.Fatalf("%d entries, want %d", len(m.m), maxArgsMemo)
	}
	if p, ok := m.get([]byte(`{"i":7}`)); !ok || p.args["i"] != 7 {
		t.Fatalf("get: %v %v", p, ok)
	}
	if _, ok := m.get([]byte(`{"i":` + strconv.Itoa(maxArgsMemo+5) + `}`)); ok {
		t.Fatal("an entry past the bound was kept")
	}
	var long argsMemo
	text := []byte(`{"body":"` + strings.Repeat("x", maxArgsMemoLen) + `"}`)
	long.put(text, parsedArgs{})
	if _, ok := long.get(text); ok {
		t.Fatal("a text longer than maxArgsMemoLen was kept")
	}
}
