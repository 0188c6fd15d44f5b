package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/exposure"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
)

// LoadRunScenarios loads the scenarios a run was rolled out on: from the
// manifest's plan.scenario_source ("builtin", or paths joined by commas, as
// the rollout command line gave them), or from override when it is not
// empty, restricted to plan.scenario_ids in their order. The result must
// hash to plan.scenario_hash: scenarios that changed since the rollout
// would give wrong least-privilege and exposure figures, so a mismatch is
// an error.
func LoadRunScenarios(dir string, m store.Manifest, override []string, cat *provisions.Catalogue) ([]*scenario.Scenario, error) {
	if cat == nil {
		cat = provisions.Builtin()
	}
	manifest := dir + "/manifest.json"
	source := override
	from := "--scenarios"
	if len(source) == 0 {
		if m.Plan.ScenarioSource == "" {
			return nil, fmt.Errorf("%s: plan.scenario_source is empty; pass --scenarios with the files the run used", manifest)
		}
		source = strings.Split(m.Plan.ScenarioSource, ",")
		from = "plan.scenario_source"
	}
	if m.Plan.ScenarioHash == "" {
		return nil, fmt.Errorf("%s: plan.scenario_hash is missing", manifest)
	}
	var ss []*scenario.Scenario
	var ps scenario.Problems
	opts := scenario.Options{AllowUnsafeProvenance: m.Plan.AllowUnsafeProvenance}
	// Built-in suites and files combine ("builtin,extra/"), as rollout
	// loaded them.
	var files []string
	for _, p := range source {
		bs, bps, named := suite.LoadNamedIDs(p, m.Plan.ScenarioIDs, cat, opts)
		if named {
			ss, ps = append(ss, bs...), append(ps, bps...)
			continue
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %s names %q, which does not exist here; pass --scenarios with the files the run used", manifest, from, p)
		}
		files = append(files, p)
	}
	if len(files) > 0 {
		ls, lps := scenario.LoadWith(files, cat, opts)
		ss, ps = append(ss, ls...), append(ps, lps...)
	}
	if len(ps) > 0 {
		return nil, fmt.Errorf("%s: scenarios from %s %q do not load:\n%w", manifest, from, strings.Join(source, ","), ps)
	}
	byID := make(map[string]*scenario.Scenario, len(ss))
	for _, s := range ss {
		byID[s.ID] = s
	}
	sel := make([]*scenario.Scenario, 0, len(m.Plan.ScenarioIDs))
	for i, id := range m.Plan.ScenarioIDs {
		s := byID[id]
		if s == nil {
			return nil, fmt.Errorf("%s: plan.scenario_ids[%d]: scenario %q is not in %s %q; pass --scenarios with the files the run used", manifest, i, id, from, strings.Join(source, ","))
		}
		sel = append(sel, s)
	}
	if h := scenario.Hash(sel); h != m.Plan.ScenarioHash {
		return nil, fmt.Errorf("%s: plan.scenario_hash: the scenarios from %s %q hash to %.12s…, the run was rolled out on %.12s…: they changed since the rollout; pass --scenarios with the files the run used",
			manifest, from, strings.Join(source, ","), h, m.Plan.ScenarioHash)
	}
	return sel, nil
}

// scenInfo is what the metrics need of one scenario, computed once.
type scenInfo struct {
	s     *scenario.Scenario
	hash  string
	x     *exposure.Info
	cited []string // provisions its violations cite, sorted
}

func newScenInfo(s *scenario.Scenario) (*scenInfo, error) {
	x, err := exposure.NewInfo(s)
	if err != nil {
		return nil, err
	}
	in := &scenInfo{s: s, hash: scenario.Hash([]*scenario.Scenario{s}), x: x}
	seen := map[string]bool{}
	for _, v := range s.Violations {
		for _, p := range v.Provisions {
			if !seen[p] {
				seen[p] = true
				in.cited = append(in.cited, p)
			}
		}
	}
	sort.Strings(in.cited)
	return in, nil
}
