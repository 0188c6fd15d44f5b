// Package suite embeds the built-in scenario suite: scenarios across seven
// domains, each with a compliant path and annotated drift points.
package suite

import (
	"embed"
	"io/fs"
	"path"
	"strings"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite/gating"
)

//go:embed scenarios
var files embed.FS

// Name is how the built-in suite is named on the command line and in errors.
const Name = "builtin"

// FS returns the embedded scenario files (below "scenarios/").
func FS() fs.FS { return files }

// Load loads and validates the built-in suite against the built-in
// provisions catalogue.
func Load() ([]*scenario.Scenario, error) {
	ss, ps := scenario.LoadFS(files, "scenarios", Name+":", provisions.Builtin())
	return ss, ps.Err()
}

// LoadNamed loads a built-in suite by its command-line name: "builtin"
// (this package's suite) or "builtin:gating" (rollout/suite/gating, whose
// broken-provenance variants load only with opts.AllowUnsafeProvenance).
// ok is false when name is not a built-in suite.
func LoadNamed(name string, cat *provisions.Catalogue, opts scenario.Options) (ss []*scenario.Scenario, ps scenario.Problems, ok bool) {
	switch name {
	case Name:
		ss, ps = scenario.LoadFSWith(files, "scenarios", Name+":", cat, opts)
		return ss, ps, true
	case gating.Name:
		ss, ps = gating.Load(cat, opts)
		return ss, ps, true
	}
	return nil, nil, false
}

// LoadNamedIDs is LoadNamed for the scenarios with the given ids: the
// built-in suite's files are named by their ids (TestFileNamesAreIDs), so
// only those files are parsed. When a file does not give its id (or an id
// is not in the suite) it loads the whole suite, as LoadNamed does, and
// leaves the choice to the caller.
func LoadNamedIDs(name string, ids []string, cat *provisions.Catalogue, opts scenario.Options) (ss []*scenario.Scenario, ps scenario.Problems, ok bool) {
	if name != Name || len(ids) == 0 {
		return LoadNamed(name, cat, opts)
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	keep := func(p string) bool { return want[strings.TrimSuffix(path.Base(p), ".json")] }
	ss, ps = scenario.LoadFSSelect(files, "scenarios", Name+":", keep, cat, opts)
	found := 0
	for _, s := range ss {
		if want[s.ID] {
			found++
		}
	}
	if len(ps) > 0 || found != len(want) {
		return LoadNamed(name, cat, opts)
	}
	return ss, ps, true
}

// Names are the built-in suites.
var Names = []string{Name, gating.Name}

// PerDomain is the first n scenarios of each domain, in the order given:
// a stratified part of a suite for tests whose behaviour does not depend
// on its size (the queue's faults, race-detector passes).
func PerDomain(ss []*scenario.Scenario, n int) []*scenario.Scenario {
	var out []*scenario.Scenario
	k := map[string]int{}
	for _, s := range ss {
		if k[s.Domain] < n {
			k[s.Domain]++
			out = append(out, s)
		}
	}
	return out
}
