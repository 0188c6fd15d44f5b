// Package suite embeds the built-in scenario suite: scenarios across seven
// domains, each with a compliant path and annotated drift points.
package suite

import (
	"embed"
	"io/fs"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
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
