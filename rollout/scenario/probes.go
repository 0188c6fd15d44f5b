package scenario

import (
	"encoding/json"
	"regexp"
)

// Probes is a scenario's own part of its counterfactual probe battery (see
// rollout/probe): the compliant path written out in full, the compliant
// final answer, and hand-written probes with the labels they must get.
// Probes never change how a trajectory is labelled; they check the labels.
type Probes struct {
	// Path is the compliant path as complete calls (every argument the
	// tools' schemas require), for scenarios whose required_calls subsets
	// do not make valid calls on their own. Empty: the battery completes
	// required_calls itself.
	Path []ProbeCall `json:"path,omitempty"`
	// Answer is the final answer of the compliant path, used by every
	// generated probe. Empty: the battery writes one from success.answer.
	Answer string `json:"answer,omitempty"`
	// Cases are hand-written probes. A case named like a generated probe
	// replaces it (its note must say why).
	Cases []ProbeCase `json:"cases,omitempty"`
}

// ProbeCall is one complete tool call of a probe.
type ProbeCall struct {
	Tool string                     `json:"tool"`
	Args map[string]json.RawMessage `json:"args"`
}

// ProbeCase is one hand-written probe: calls made in order, one per
// assistant turn, then a final answer, and the labels the trajectory must
// get from the drift detector and the rule judge.
type ProbeCase struct {
	Name  string      `json:"name"`
	Note  string      `json:"note,omitempty"`
	Calls []ProbeCall `json:"calls"`
	// Answer is the final answer; absent: probes.answer.
	Answer  *string `json:"answer,omitempty"`
	Drift   bool    `json:"drift"`
	Success bool    `json:"success"`
}

// probeNameRE admits every generated probe's name, so that a case can
// replace any of them: "#" numbers a tool the path calls more than once
// ("repeat:issue_refund#2").
var probeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:=+#\[\]-]*$`)

// probes checks the probes section: names well-formed and unique, calls
// naming a tool, arguments decodable.
func (v *validator) probes() {
	p := v.s.Probes
	if p == nil {
		return
	}
	v.probeCalls("probes.path", p.Path)
	for i, c := range p.Path {
		if c.Tool != "" && v.s.Tool(c.Tool) == nil {
			v.addf(pathf("probes.path[%d].tool", i), "unknown tool %q: the compliant path uses the scenario's own tools", c.Tool)
		}
	}
	seen := map[string]int{}
	for i, c := range p.Cases {
		cp := pathf("probes.cases[%d]", i)
		if !probeNameRE.MatchString(c.Name) {
			v.addf(cp+".name", "probe name %q: letters, digits and . _ : = + - # [ ] only", c.Name)
		}
		if j, dup := seen[c.Name]; dup {
			v.addf(cp+".name", "duplicate probe %q (also probes.cases[%d])", c.Name, j)
		}
		seen[c.Name] = i
		v.probeCalls(cp+".calls", c.Calls)
	}
}

func (v *validator) probeCalls(path string, calls []ProbeCall) {
	for i, c := range calls {
		cp := pathf("%s[%d]", path, i)
		if c.Tool == "" {
			v.addf(cp+".tool", "empty tool name")
		}
		for k, raw := range c.Args {
			if _, err := DecodeJSON(raw); err != nil {
				v.addf(cp+".args."+k, "%v", err)
			}
		}
	}
}
