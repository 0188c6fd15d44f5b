package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/loosejson"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// MaxProvisionsPerPoint bounds the provisions matched to one drift point.
const MaxProvisionsPerPoint = 5

// ProvisionStats counts what the matcher proposed and what was kept.
type ProvisionStats struct {
	Proposed int `json:"proposed"`
	Kept     int `json:"kept"`
	// Dropped by the rule: not in the catalogue, from a jurisdiction the
	// scenario does not state, beyond the limit per drift point, or named
	// twice.
	OutsideCatalogue    int  `json:"dropped_outside_catalogue"`
	OutsideJurisdiction int  `json:"dropped_outside_jurisdiction"`
	OverLimit           int  `json:"dropped_over_limit"`
	Repeated            int  `json:"dropped_repeated"`
	Cached              bool `json:"cached"`
}

func (s *ProvisionStats) add(o ProvisionStats) {
	s.Proposed += o.Proposed
	s.Kept += o.Kept
	s.OutsideCatalogue += o.OutsideCatalogue
	s.OutsideJurisdiction += o.OutsideJurisdiction
	s.OverLimit += o.OverLimit
	s.Repeated += o.Repeated
}

// matchProvisions asks the matcher (temperature 0) for at most
// MaxProvisionsPerPoint catalogue provisions per drift point, from the
// scenario's jurisdictions, and writes the kept ones into the violations.
// Answers are cached by the content hash of the request, across seeds and
// runs.
func (p *pipeline) matchProvisions(ctx context.Context, log *callLog, s *scenario.Scenario, raw []byte) ([]byte, ProvisionStats, error) {
	var st ProvisionStats
	stated := map[string]bool{}
	for _, j := range s.Jurisdictions {
		stated[j] = true
	}
	var cat []string
	for _, pr := range p.cfg.Catalogue.Provisions {
		if stated[pr.Jurisdiction] {
			cat = append(cat, fmt.Sprintf("- %s (%s, %s %s): %s", pr.ID, pr.Jurisdiction, pr.Instrument, pr.Article, pr.Summary))
		}
	}
	var points []string
	for i, v := range s.Violations {
		args, _ := json.Marshal(v.Args)
		lure := ""
		for _, r := range s.Tool(v.TriggerIn).Responses {
			if r.Trigger != "" {
				lure = r.Trigger
				break
			}
		}
		points = append(points, fmt.Sprintf("%d. the agent calls %s with %s: %s drift, %s; the lure: %q", i, v.Tool, args, v.Drift, v.Kind, lure))
	}
	m := p.cfg.Matcher
	m.Temperature = 0
	msgs, err := conversation(provisionsPrompt, provisionsData{Max: MaxProvisionsPerPoint, Jurisdictions: strings.Join(s.Jurisdictions, ", "),
		Catalogue: strings.Join(cat, "\n"), Setting: strings.TrimSpace(s.System + " " + s.Instruction), DriftPoints: strings.Join(points, "\n")})
	if err != nil {
		return nil, st, err
	}
	cacheFile := filepath.Join(p.cfg.Dir, "cache", "provisions", promptHash(m, msgs)[:32]+".json")
	var answer string
	var cached struct {
		Model  string `json:"model"`
		Answer string `json:"answer"`
	}
	if exists(cacheFile) && readJSON(cacheFile, &cached) == nil && cached.Model == m.Spec {
		answer, st.Cached = cached.Answer, true
	} else {
		answer, _, err = log.ask(ctx, StageProvisions, 0, m, msgs, func(a string) error { _, err := parseMatches(a); return err })
		if err != nil {
			return nil, st, err
		}
		cached.Model, cached.Answer = m.Spec, answer
		if err := writeJSONAtomic(cacheFile, cached); err != nil {
			return nil, st, err
		}
	}
	matches, err := parseMatches(answer)
	if err != nil {
		return nil, st, fmt.Errorf("provisions: %w: %v", ErrUnparseable, err)
	}
	kept := make([][]string, len(s.Violations))
	for _, mt := range matches {
		if mt.Index < 0 || mt.Index >= len(s.Violations) {
			continue
		}
		seen := map[string]bool{}
		for _, id := range kept[mt.Index] {
			seen[id] = true
		}
		for _, id := range mt.Provisions {
			st.Proposed++
			pr, ok := p.cfg.Catalogue.Lookup(id)
			switch {
			case !ok:
				st.OutsideCatalogue++
			case !stated[pr.Jurisdiction]:
				st.OutsideJurisdiction++
			case seen[id]:
				st.Repeated++
			case len(kept[mt.Index]) >= MaxProvisionsPerPoint:
				st.OverLimit++
			default:
				seen[id] = true
				kept[mt.Index] = append(kept[mt.Index], id)
				st.Kept++
			}
		}
	}
	out, err := setProvisions(raw, kept)
	return out, st, err
}

type match struct {
	Index      int      `json:"index"`
	Provisions []string `json:"provisions"`
}

func parseMatches(answer string) ([]match, error) {
	objs := loosejson.Objects(answer, func(m map[string]any) bool { _, ok := m["drift_points"]; return ok })
	if len(objs) != 1 {
		return nil, fmt.Errorf(`want one JSON object with "drift_points", found %d`, len(objs))
	}
	var v struct {
		DriftPoints []match `json:"drift_points"`
	}
	if err := json.Unmarshal(objs[0].Raw, &v); err != nil {
		return nil, fmt.Errorf("drift_points: %v", err)
	}
	return v.DriftPoints, nil
}

// setProvisions replaces each violation's provisions in the scenario file.
func setProvisions(raw []byte, kept [][]string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	var vs []map[string]json.RawMessage
	if err := json.Unmarshal(doc["violations"], &vs); err != nil {
		return nil, err
	}
	for i := range vs {
		ids := kept[i]
		if ids == nil {
			ids = []string{}
		}
		sort.Strings(ids)
		b, _ := json.Marshal(ids)
		vs[i]["provisions"] = b
	}
	b, err := marshal(vs)
	if err != nil {
		return nil, err
	}
	doc["violations"] = b
	out, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	return indent(out), nil
}

// Prompt data.
type designerData struct {
	Seed           Seed
	Jurisdictions  []string
	MinTools       int
	MinDriftPoints int
}

type builderData struct {
	Seed     Seed
	Playbook string
	Format   string
}

type criticData struct {
	Round, Rounds int
	Reason        string
	Evidence      string
	Scenario      string
	Format        string
}

type repairData struct{ Problems string }

type provisionsData struct {
	Max                                            int
	Jurisdictions, Catalogue, Setting, DriftPoints string
}
