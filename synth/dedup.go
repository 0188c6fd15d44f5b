package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
)

// Similarity thresholds: a scenario is a duplicate of another when both
// have the same tool set and path shape and their instructions share most
// word pairs, or when the instructions are near-identical whatever the
// tools.
const (
	dupSameShape   = 0.6
	dupInstruction = 0.9
)

type shape struct {
	id, tools, path string
	words           map[string]bool
}

func shapeOf(s *scenario.Scenario) shape {
	var tools, path []string
	for _, t := range s.Tools {
		tools = append(tools, t.Name)
	}
	sort.Strings(tools)
	for _, c := range s.RequiredCalls {
		path = append(path, c.Tool)
	}
	return shape{id: s.ID, tools: strings.Join(tools, ","), path: strings.Join(path, ">"), words: bigrams(s.Instruction)}
}

var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+`)

func bigrams(text string) map[string]bool {
	ws := wordRE.FindAllString(strings.ToLower(text), -1)
	out := map[string]bool{}
	for i := 0; i+1 < len(ws); i++ {
		out[ws[i]+" "+ws[i+1]] = true
	}
	if len(ws) == 1 {
		out[ws[0]] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if b[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// duplicateOf names the first scenario of pool that s duplicates.
func duplicateOf(s shape, pool []shape) string {
	for _, k := range pool {
		j := jaccard(s.words, k.words)
		if j >= dupInstruction || (s.tools == k.tools && s.path == k.path && j >= dupSameShape) {
			return k.id
		}
	}
	return ""
}

var idSuffix = regexp.MustCompile(`^(.*)-(\d{3,})$`)

// uniqueID returns id, or the first free one with a higher numeric suffix.
func uniqueID(id string, taken map[string]bool) string {
	if !taken[id] {
		return id
	}
	stem, n := id, 1
	if m := idSuffix.FindStringSubmatch(id); m != nil {
		stem = m[1]
		n, _ = strconv.Atoi(m[2])
	}
	for {
		n++
		c := fmt.Sprintf("%s-%03d", stem, n)
		if !taken[c] {
			return c
		}
	}
}

// finish deduplicates the accepted scenarios in seed order, against the
// suites they join and each other, gives each an id no other uses, and
// writes them under accepted/<domain>/. The folder is derived: it is
// rebuilt on every run.
func (p *pipeline) finish(outcomes []Outcome) error {
	accDir := filepath.Join(p.cfg.Dir, "accepted")
	if err := os.RemoveAll(accDir); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	taken := map[string]bool{}
	var pool []shape
	for _, s := range p.cfg.Join {
		taken[s.ID] = true
		pool = append(pool, shapeOf(s))
	}
	for i := range outcomes {
		o := &outcomes[i]
		if o.Status != StatusAccepted {
			continue
		}
		// The seed's candidate, where the pipeline left it (o.Accepted
		// names the accepted/ copy once a run has finished).
		cand := filepath.ToSlash(filepath.Join("seeds", o.Seed, "scenario.json"))
		raw, err := os.ReadFile(filepath.Join(p.cfg.Dir, filepath.FromSlash(cand)))
		if err != nil {
			return fmt.Errorf("synth: %s: %w", o.Seed, err)
		}
		s, ps := scenario.Parse(cand, raw, p.cfg.Catalogue)
		if len(ps) > 0 {
			return fmt.Errorf("synth: %s: the accepted scenario no longer loads: %w", o.Seed, ps.Err())
		}
		sh := shapeOf(s)
		if dup := duplicateOf(sh, pool); dup != "" {
			o.Status, o.DuplicateOf, o.ScenarioID, o.Accepted = StatusDuplicate, dup, s.ID, ""
			if err := p.storeOutcome(*o); err != nil {
				return err
			}
			continue
		}
		id := uniqueID(s.ID, taken)
		if id != s.ID {
			if raw, err = setID(raw, id); err != nil {
				return err
			}
		}
		rel := filepath.ToSlash(filepath.Join("accepted", s.Domain, id+".json"))
		if err := writeFileAtomic(filepath.Join(p.cfg.Dir, filepath.FromSlash(rel)), raw); err != nil {
			return err
		}
		o.ScenarioID, o.Accepted = id, rel
		if err := p.storeOutcome(*o); err != nil {
			return err
		}
		taken[id] = true
		sh.id = id
		pool = append(pool, sh)
	}
	return nil
}

// storeOutcome rewrites a seed's outcome.json with what deduplication
// decided, so that it agrees with summary.json (a duplicate says so, an
// accepted scenario names its file under accepted/).
func (p *pipeline) storeOutcome(o Outcome) error {
	return writeJSONAtomic(filepath.Join(p.cfg.Dir, "seeds", o.Seed, "outcome.json"), o)
}

func setID(raw []byte, id string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(id)
	doc["id"] = b
	out, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	return indent(out), nil
}

// marshal encodes v without escaping <, > and & (scenario text keeps them).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}
