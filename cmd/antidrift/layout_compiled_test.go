package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The consumers of a scenario read one compiled value (scenario.Compiled):
// none compiles the scenario's schemas, normalisers, constraints or facts
// itself, so that a run compiles a scenario once and every consumer
// compares values the same way.
var compiledConsumers = []string{"rollout/env", "rollout/drift", "rollout/judge", "rollout/probe", "rollout/agent", "rollout/engine"}

// compileFuncs are the scenario package's compilers of a scenario's parts.
var compileFuncs = map[string]bool{"CompileArgSchema": true, "CompileNormalizers": true, "CompileConstraints": true, "CompileFact": true}

func TestScenarioConsumersReadOneCompiledValue(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	for _, pkg := range compiledConsumers {
		dir := filepath.Join(root, pkg)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		n := 0
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			n++
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			require.NoError(t, err)
			ast.Inspect(f, func(node ast.Node) bool {
				sel, ok := node.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "scenario" && compileFuncs[sel.Sel.Name] {
					t.Errorf("%s: %s calls scenario.%s: take the compiled scenario (scenario.Compile, env.CompileFrom, drift.NewDetectorFrom) instead", pkg, fset.Position(sel.Pos()), sel.Sel.Name)
				}
				return true
			})
		}
		require.NotZero(t, n, "no Go files in %s", pkg)
	}
}
