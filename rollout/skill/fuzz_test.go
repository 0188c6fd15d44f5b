package skill

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse: no library file, however malformed, panics the loader (a
// skill or query naming a tool that does not exist used to), a library
// comes back exactly when there is no problem, and every problem names the
// file and a line or JSON path.
func FuzzParse(f *testing.F) {
	src, err := Builtin("email")
	if err != nil {
		f.Fatal(err)
	}
	b, err := Marshal(src)
	if err != nil {
		f.Fatal(err)
	}
	edits := []func(l *Library){
		func(l *Library) {},
		func(l *Library) { l.Skills[0].Tools[0] = "gone" },
		func(l *Library) { l.Queries[0].Tools[0] = "gone" },
		func(l *Library) { l.Queries[0].Calls[0].Tool = "gone" },
		func(l *Library) { l.Queries[0].Skill = "gone" },
		func(l *Library) { l.Tools = l.Tools[1:] },
		func(l *Library) { l.Tools = nil },
		func(l *Library) { l.Skills = nil },
		func(l *Library) { l.Queries[0].Needs = nil; l.Queries[0].Calls = nil },
	}
	for _, edit := range edits {
		var l Library
		if err := json.Unmarshal(b, &l); err != nil {
			f.Fatal(err)
		}
		l.Queries = l.Queries[:3] // small seeds keep each run fast
		edit(&l)
		out, err := Marshal(&l)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(out)
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"tools":[{"name":"t"}],"skills":[{"name":"s","tools":["x"]}],"queries":[{"tools":["y"],"calls":[{"tool":"z"}]}]}`} {
		f.Add([]byte(s))
	}
	const name = "fuzz.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		l, ps := Parse(name, data)
		if (l == nil) != (len(ps) > 0) {
			t.Fatalf("library %v with %d problems:\n%v", l != nil, len(ps), ps)
		}
		for _, p := range ps {
			if !strings.HasPrefix(p.String(), name+":") {
				t.Fatalf("problem does not name the file: %q", p.String())
			}
			if p.Line == 0 && p.Path == "" {
				t.Fatalf("problem with neither line nor JSON path: %q", p.String())
			}
		}
	})
}
