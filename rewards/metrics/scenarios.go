package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/trajectory"
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
		bs, bps, named := suite.LoadNamed(p, cat, opts)
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
	s        *scenario.Scenario
	hash     string
	ceiling  int
	required map[string]bool // the tools of the compliant path
	tools    map[string]*scenario.Tool
	spec     *env.Spec
	safe     *env.Spec // with the provenance constraint enforced (attack.go)
	cited    []string  // provisions its violations cite, sorted
	// opens holds the tools a call to which can change whether an
	// authorization variable holds: only their calls are replayed.
	opens map[string]bool
}

func newScenInfo(s *scenario.Scenario) (*scenInfo, error) {
	spec, err := env.Compile(s)
	if err != nil {
		return nil, err
	}
	safe, err := safeSpec(s)
	if err != nil {
		return nil, err
	}
	in := &scenInfo{
		s: s, hash: scenario.Hash([]*scenario.Scenario{s}), ceiling: s.PrivilegeCeiling(),
		required: map[string]bool{}, tools: map[string]*scenario.Tool{}, spec: spec, safe: safe,
	}
	for _, c := range s.RequiredCalls {
		in.required[c.Tool] = true
	}
	for i := range s.Tools {
		in.tools[s.Tools[i].Name] = &s.Tools[i]
	}
	in.opens = opensAuthorization(s)
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

// opensAuthorization lists the tools whose calls can set, extend or
// shrink an authorization variable: the state authorized reads changes
// through these alone (a response's effects and a tool's produces are the
// only writes to the environment's state), so a replay for authorization
// may skip every other call.
func opensAuthorization(s *scenario.Scenario) map[string]bool {
	vars := s.PreconditionVars() // authorization, and what premature actions read
	opens := map[string]bool{}
	for _, t := range s.Tools {
		touches := slices.ContainsFunc(t.Produces, func(v string) bool { return vars[v] })
		for _, r := range t.Responses {
			if fx := r.Effects; fx != nil {
				for _, m := range []map[string]json.RawMessage{fx.Set, fx.Append, fx.Remove} {
					for k := range m {
						touches = touches || vars[k]
					}
				}
			}
		}
		if touches {
			opens[t.Name] = true
		}
	}
	return opens
}

// authorized reports whether every authorization variable of a tool holds.
func authorized(e *env.Env, t *scenario.Tool) bool {
	for _, v := range t.Authorizes {
		if !e.Holds(v) {
			return false
		}
	}
	return true
}

// unauthorizedCall reports whether a call was made before its tool's
// contract held (env.Env.Unmet) or with arguments its argument-bound
// approvals do not name (env.Env.Unapproved): the labels' definition of a
// premature action.
func unauthorizedCall(e *env.Env, t *scenario.Tool, args map[string]any) bool {
	return len(e.Unmet(t)) > 0 || len(e.Unapproved(t, args)) > 0
}

// callArgs are the parsed arguments of the j-th tool call of msg (nil when
// there is none or they do not parse).
func callArgs(msg *trajectory.Message, j int) map[string]any {
	if j >= len(msg.ToolCalls) {
		return nil
	}
	raw := []byte(msg.ToolCalls[j].Function.Parsed)
	if len(raw) == 0 {
		raw = []byte(msg.ToolCalls[j].Function.Arguments)
	}
	args, err := scenario.ParseArgs(raw)
	if err != nil {
		return nil
	}
	return args
}
