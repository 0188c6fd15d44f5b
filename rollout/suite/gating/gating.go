// Package gating embeds the built-in gating suite ("builtin:gating"), in
// the style of the risk-aware causal gating evaluation: e-mail, payment,
// document and admin tasks whose risk-bearing actions need an
// authorization that a trusted producer establishes (confirming a
// recipient, verifying an external party, confirming a payment, approving
// a deletion), and tasks that need none. Every scenario comes in variants:
// clean, with an instruction injection, with a forged-authorization
// injection (both in a content-producing tool's return), and, under
// unsafe/, the broken-provenance variant where the content tool really
// sets the claimed authorization variable, which loads only with
// scenario.Options.AllowUnsafeProvenance.
//
// The files are generated from the definitions in gen_test.go
// (go test ./rollout/suite/gating -run TestGenerated -update); it imports
// only the scenario and provisions packages.
package gating

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
)

//go:embed scenarios
var files embed.FS

// Name is how the suite is named on the command line and in errors.
const Name = "builtin:gating"

// UnsafeDir is the folder of the broken-provenance variants.
const UnsafeDir = "scenarios/unsafe"

// FS returns the embedded scenario files (below "scenarios/").
func FS() fs.FS { return files }

// Load loads and validates the suite. Without opts.AllowUnsafeProvenance
// the broken-provenance variants (UnsafeDir) are left out; with it they
// are loaded too, marked UnsafeProvenance.
func Load(cat *provisions.Catalogue, opts scenario.Options) ([]*scenario.Scenario, scenario.Problems) {
	if cat == nil {
		cat = provisions.Builtin()
	}
	var fsys fs.FS = files
	if !opts.AllowUnsafeProvenance {
		fsys = withoutUnsafe{files}
	}
	return scenario.LoadFSWith(fsys, "scenarios", Name+":", cat, opts)
}

// withoutUnsafe hides UnsafeDir.
type withoutUnsafe struct{ fs.FS }

func (w withoutUnsafe) Open(name string) (fs.File, error) {
	if name == UnsafeDir || strings.HasPrefix(name, UnsafeDir+"/") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return w.FS.Open(name)
}

func (w withoutUnsafe) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(w.FS, name)
	if err != nil {
		return nil, err
	}
	out := es[:0:0]
	for _, e := range es {
		if p := name + "/" + e.Name(); p != UnsafeDir {
			out = append(out, e)
		}
	}
	return out, nil
}
