package scenario

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// DecodeJSON's fast path must decide and decode exactly as encoding/json:
// over every JSON file of the module (the built-in suite, the fixtures,
// the invalid-scenario corpus) and thousands of damaged copies of them.
func TestDecodeJSONMatchesEncodingJSON(t *testing.T) {
	var docs [][]byte
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl")) {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(b) < 1<<20 {
				docs = append(docs, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, []byte(`{"a":1.0,"b":1e0,"c":-0,"d":[1,"x",null,true]}`), []byte("{}\f"), []byte(`{} {}`),
		[]byte(`{"a":1}]`), []byte(" \t\r\n{\"a\": \"\\u00e9\\ud83d\\ude00\"} \n"), []byte(`{"a":"\ud800"}`), []byte(`{"a":1,"a":2}`),
		[]byte(`01`), []byte(`1.`), []byte(`"\x01"`), []byte{'"', 0xff, '"'}, []byte(``), []byte(`nul`))
	rng := rand.New(rand.NewPCG(3, 4))
	junk := []byte(`"{}[]:,\ 0-1.e5tfnu` + "\x00\x0c\x7f\xff\xc3")
	var all [][]byte
	for _, d := range docs {
		all = append(all, d)
		for range 6 {
			if len(d) == 0 {
				break
			}
			i := rng.IntN(len(d))
			m := append([]byte(nil), d...)
			switch rng.IntN(3) {
			case 0:
				m = m[:i]
			case 1:
				m[i] = junk[rng.IntN(len(junk))]
			default:
				m = append(m[:i:i], append([]byte{junk[rng.IntN(len(junk))]}, d[i:]...)...)
			}
			all = append(all, m)
		}
	}
	fast := 0
	for i, d := range all {
		got, gerr := DecodeJSON(d)
		want, werr := decodeJSONStd(d)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("input %d %.300q: got %v, %v; encoding/json: %v, %v", i, d, got, gerr, want, werr)
		}
		if _, ok := decodeJSONFast(d); ok {
			fast++
		}
	}
	t.Logf("%d inputs, %d decoded on the fast path", len(all), fast)
	if fast == 0 {
		t.Fatal("the fast path decoded nothing")
	}
}
