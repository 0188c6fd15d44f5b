package main

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The floors of the repository, as the import graph must keep them: the
// dataset layer under pairs and rewards, export writing tables and building
// nothing, and no package climbing back up. Imports are read with go/build
// from every non-test file of the module (the tests may import anything).

const modulePath = "github.com/antidrift/antidrift"

// datasetAllowed are the module packages rollout/dataset may import directly.
// internal/plainjson (encoding/json's bytes without reflection) imports
// nothing of antidrift: the one string escaper the dataset layer shares
// with the environment's tool messages. internal/extsort (fixed-size
// values sorted in bounded memory, for the seeded KTO order) imports only
// internal/tempgate.
var datasetAllowed = []string{"rollout/trajectory", "rollout/scenario", "rollout/store", "internal/plainjson", "internal/extsort"}

// datasetDataLibraries are the third-party modules rollout/dataset may
// import (data libraries only: no HTTP client, no engine).
var datasetDataLibraries = []string{}

type modulePkgs map[string][]string // package (relative to the module) → its imports (module-relative or full paths)

func readModule(t *testing.T) modulePkgs {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	pkgs := modulePkgs{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "docs") {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		var imps []string
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				imps = append(imps, r)
			} else {
				imps = append(imps, imp)
			}
		}
		pkgs[rel] = imps
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, pkgs, "rollout/dataset", "walked the module from %s", root)
	return pkgs
}

// deps returns every module package pkg reaches, itself excluded, sorted.
func (m modulePkgs) deps(pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range m[p] {
			if _, ok := m[imp]; ok && !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// under reports whether pkg is top or one of its sub-packages.
func under(pkg, top string) bool { return pkg == top || strings.HasPrefix(pkg, top+"/") }

func TestImportGraph(t *testing.T) {
	m := readModule(t)
	forbid := []struct {
		from string   // a package and its sub-packages
		not  []string // must reach none of these (or their sub-packages)
		why  string
	}{
		{"export", []string{"pairs", "rewards", "rollout/engine", "rollout/agent", "rollout/policy"}, "export only writes tables; rows come from rollout/dataset"},
		{"pairs", []string{"rewards", "export", "rollout/engine", "rollout/agent", "rollout/policy"}, "pairs builds rows from rollout/dataset; cmd writes them"},
		{"rewards", []string{"pairs", "export"}, "rewards builds rows from rollout/dataset; cmd writes them"},
		{"rollout", []string{"pairs", "rewards", "export", "cmd"}, "the rollout floor never climbs up"},
		{"synth", []string{"pairs", "rewards", "export", "cmd"}, "synth makes scenarios; it never reaches the training-data side"},
		{"rollout/dataset", []string{"rollout/engine", "rollout/agent", "rollout/policy", "rollout/judge", "rollout/env"}, "the dataset layer reads records, it runs nothing"},
	}
	for _, f := range forbid {
		for pkg := range m {
			if !under(pkg, f.from) {
				continue
			}
			for _, d := range m.deps(pkg) {
				for _, n := range f.not {
					if under(d, n) && !under(d, f.from) {
						t.Errorf("%s reaches %s (%s)", pkg, d, f.why)
					}
				}
			}
		}
	}

	// The dataset layer's direct imports: the data types, the store, the
	// standard library and data libraries.
	for _, imp := range m["rollout/dataset"] {
		if _, ok := m[imp]; ok {
			if !slices.Contains(datasetAllowed, imp) {
				t.Errorf("rollout/dataset imports %s; it may import only %v of this module", imp, datasetAllowed)
			}
			continue
		}
		first := strings.Split(imp, "/")[0]
		if !strings.Contains(first, ".") {
			continue // standard library
		}
		if !slices.ContainsFunc(datasetDataLibraries, func(lib string) bool { return imp == lib || strings.HasPrefix(imp, lib+"/") }) {
			t.Errorf("rollout/dataset imports %s, which is not one of its data libraries %v", imp, datasetDataLibraries)
		}
	}

	// pairs and rewards build their rows from the dataset layer.
	for _, p := range []string{"pairs", "rewards", "export"} {
		if !slices.Contains(m[p], "rollout/dataset") {
			t.Errorf("%s does not import rollout/dataset", p)
		}
	}
}

// TestImportGraphCatchesAClimb checks the test itself: a package graph with
// an upward import is reported.
func TestImportGraphCatchesAClimb(t *testing.T) {
	m := modulePkgs{"export": {"rollout/dataset"}, "rollout/dataset": {"rewards"}, "rewards": {}}
	require.Equal(t, []string{"rewards", "rollout/dataset"}, m.deps("export"))
}

// TestPackageDocs: the packages of the dataset floors say in doc.go what
// they own and what they must not import.
func TestPackageDocs(t *testing.T) {
	for _, p := range []string{"rollout/dataset", "pairs", "rewards", "rewards/pareto", "rewards/report", "export"} {
		b, err := os.ReadFile(filepath.Join("../..", p, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go: %v", p, err)
			continue
		}
		s := string(b)
		if !strings.Contains(s, "Owns:") || !strings.Contains(strings.ToLower(s), "must not import") {
			t.Errorf("%s/doc.go does not say what the package owns (Owns:) and what it must not import", p)
		}
	}
}
