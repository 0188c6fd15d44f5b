package synth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/loosejson"
	"github.com/antidrift/antidrift/rollout/probe"
	"github.com/antidrift/antidrift/rollout/qc"
	"github.com/antidrift/antidrift/rollout/scenario"
)

const batteryPrefix = "probe battery: "

// validate loads a candidate as `scenarios validate` would, and adds the
// pipeline's own demands: format v2, the seed's domain, a stated
// jurisdiction and enough drift points.
func (p *pipeline) validate(raw []byte, sd Seed) (*scenario.Scenario, []string) {
	if len(raw) == 0 {
		return nil, []string{"the answer holds no scenario object (one JSON object with \"tools\" and \"required_calls\")"}
	}
	s, ps := scenario.Parse(sd.ID+".json", raw, p.cfg.Catalogue)
	var out []string
	for _, pr := range ps {
		// The file name is ours, not the model's: show the path and message.
		msg := pr.Msg
		if pr.Path != "" {
			msg = pr.Path + ": " + msg
		} else if pr.Line > 0 {
			msg = fmt.Sprintf("line %d column %d: %s", pr.Line, pr.Col, msg)
		}
		out = append(out, msg)
	}
	if s == nil {
		return nil, out
	}
	if s.Version() < 2 {
		out = append(out, `schema_version: must be 2`)
	}
	if s.Domain != sd.Domain {
		out = append(out, fmt.Sprintf("domain: %q, but the seed's domain is %q", s.Domain, sd.Domain))
	}
	if len(s.Jurisdictions) == 0 {
		out = append(out, "jurisdictions: state the organisation's jurisdiction (one of "+strings.Join(p.jurisdictions(), ", ")+")")
	}
	if n := len(s.Violations) + len(s.Boundary.Constraints); n < p.cfg.MinDriftPoints {
		out = append(out, fmt.Sprintf("violations: %d drift points (violations and constraints); at least %d are needed", n, p.cfg.MinDriftPoints))
	}
	if len(out) > 0 {
		return nil, out
	}
	return s, nil
}

// checkAll validates a candidate and, when it loads, runs its
// counterfactual probe battery.
func (p *pipeline) checkAll(ctx context.Context, raw []byte, sd Seed) (*scenario.Scenario, []string, *qc.Battery) {
	s, probs := p.validate(raw, sd)
	if s == nil {
		return nil, probs, nil
	}
	rep, err := probe.Check(ctx, s)
	if err != nil {
		return nil, []string{batteryPrefix + err.Error()}, nil
	}
	bat := &qc.Battery{Probes: len(rep.Results), Failed: rep.Failed, Failures: rep.Failures(), Unbuilt: rep.Unbuilt()}
	if !rep.Checked() {
		var out []string
		for _, f := range append(append([]string(nil), bat.Failures...), bat.Unbuilt...) {
			out = append(out, batteryPrefix+strings.TrimPrefix(f, s.ID+": "))
		}
		return nil, out, bat
	}
	return s, nil, bat
}

// jurisdictions are the catalogue's jurisdictions, sorted.
func (p *pipeline) jurisdictions() []string {
	seen := map[string]bool{}
	for _, pr := range p.cfg.Catalogue.Provisions {
		seen[pr.Jurisdiction] = true
	}
	out := make([]string, 0, len(seen))
	for j := range seen {
		out = append(out, j)
	}
	sort.Strings(out)
	return out
}

// parsePlaybook reads the designer's playbook: the one object with a
// compliant path and drift points, with at least min drift points.
func parsePlaybook(answer string, min int) (json.RawMessage, error) {
	objs := loosejson.Objects(answer, func(m map[string]any) bool {
		_, a := m["compliant_path"]
		_, b := m["drift_points"]
		return a && b
	})
	switch {
	case len(objs) == 0:
		return nil, fmt.Errorf(`no JSON object with "compliant_path" and "drift_points"`)
	case len(objs) > 1:
		return nil, fmt.Errorf("%d playbook objects; answer with one", len(objs))
	}
	o := objs[0]
	dp, _ := o.Value["drift_points"].([]any)
	if len(dp) < min {
		return nil, fmt.Errorf("the playbook has %d drift points; at least %d are needed", len(dp), min)
	}
	if cp, _ := o.Value["compliant_path"].([]any); len(cp) == 0 {
		return nil, fmt.Errorf("the playbook's compliant_path is empty")
	}
	return o.Raw, nil
}

// extractScenario finds the scenario object in an answer: the one object
// with "tools" and "required_calls".
func extractScenario(answer string) ([]byte, error) {
	objs := loosejson.Objects(answer, func(m map[string]any) bool {
		_, a := m["tools"]
		_, b := m["required_calls"]
		return a && b
	})
	switch {
	case len(objs) == 0:
		return nil, fmt.Errorf(`no JSON object with "tools" and "required_calls"`)
	case len(objs) > 1:
		return nil, fmt.Errorf("%d scenario objects; answer with one", len(objs))
	}
	return indent(objs[0].Raw), nil
}

func parseScenarioAnswer(answer string) error {
	_, err := extractScenario(answer)
	return err
}

// indent re-indents JSON for the files a reviewer reads, keeping key order.
func indent(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return raw
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}
