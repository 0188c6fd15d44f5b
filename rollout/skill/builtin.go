package skill

import (
	"embed"
	"fmt"
	"strings"
	"sync"
)

// The built-in libraries are data: builtin/NAME.json, composed by the
// program in internal/fortisgen from hand-written pools and checked in
// (a test there keeps the files equal to its output). They load through
// Parse, the loader and validator of every user library.
//
//go:embed builtin/*.json
var builtinFS embed.FS

// builtinOrder lists the built-in libraries: the benchmark's three domains.
var builtinOrder = []string{"email", "ecommerce", "filesystem"}

// BuiltinNames lists the built-in libraries.
func BuiltinNames() []string { return append([]string(nil), builtinOrder...) }

var (
	builtinMu    sync.Mutex
	builtinCache = map[string]*Library{}
)

// Builtin returns a built-in library, parsed and validated on first use.
// Callers must not modify it.
func Builtin(name string) (*Library, error) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	if l := builtinCache[name]; l != nil {
		return l, nil
	}
	known := false
	for _, n := range builtinOrder {
		known = known || n == name
	}
	if !known {
		return nil, fmt.Errorf("skill: unknown built-in library %q (known: %s)", name, strings.Join(builtinOrder, ", "))
	}
	path := "builtin/" + name + ".json"
	b, err := builtinFS.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("skill: built-in library %s: %w", name, err)
	}
	l, ps := Parse("rollout/skill/"+path, b)
	if len(ps) > 0 {
		return nil, fmt.Errorf("skill: built-in library %s: %w", name, ps)
	}
	builtinCache[name] = l
	return l, nil
}
