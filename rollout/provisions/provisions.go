// Package provisions is the catalogue of legal provisions that drift points
// cite: data-protection principles of several jurisdictions, each with a
// default weight for provision-weighted rewards. The built-in catalogue is
// embedded; a user catalogue in the same JSON format can replace it.
package provisions

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
)

// Provision is one article of one instrument, summarised in our own words.
type Provision struct {
	ID           string  `json:"id"`
	Jurisdiction string  `json:"jurisdiction"`
	Instrument   string  `json:"instrument"`
	Article      string  `json:"article"`
	Summary      string  `json:"summary"`
	Weight       float64 `json:"weight"`
}

// Catalogue indexes provisions by id.
type Catalogue struct {
	Version    int         `json:"version"`
	Provisions []Provision `json:"provisions"`
	byID       map[string]int
}

//go:embed provisions.json
var builtinJSON []byte

var (
	builtinOnce sync.Once
	builtin     *Catalogue
	builtinErr  error
)

// Builtin returns the embedded catalogue. It panics if the embedded file is
// broken, which a test rules out.
func Builtin() *Catalogue {
	builtinOnce.Do(func() { builtin, builtinErr = Parse("provisions.json", builtinJSON) })
	if builtinErr != nil {
		panic(builtinErr)
	}
	return builtin
}

// LoadFile reads a catalogue from a JSON file.
func LoadFile(path string) (*Catalogue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("provisions: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks a catalogue: ids unique and non-empty, weights
// non-negative. Errors name the file and the JSON path.
func Parse(name string, data []byte) (*Catalogue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Catalogue
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.byID = make(map[string]int, len(c.Provisions))
	for i, p := range c.Provisions {
		switch {
		case p.ID == "":
			return nil, fmt.Errorf("%s: provisions[%d].id: missing", name, i)
		case p.Jurisdiction == "" || p.Instrument == "" || p.Article == "":
			return nil, fmt.Errorf("%s: provisions[%d]: jurisdiction, instrument and article are required", name, i)
		case p.Weight < 0:
			return nil, fmt.Errorf("%s: provisions[%d].weight: must be >= 0, got %g", name, i, p.Weight)
		}
		if j, dup := c.byID[p.ID]; dup {
			return nil, fmt.Errorf("%s: provisions[%d].id: %q already used by provisions[%d]", name, i, p.ID, j)
		}
		c.byID[p.ID] = i
	}
	return &c, nil
}

// Lookup returns the provision with the id.
func (c *Catalogue) Lookup(id string) (Provision, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Provision{}, false
	}
	return c.Provisions[i], true
}

// Has reports whether the catalogue lists the id.
func (c *Catalogue) Has(id string) bool { _, ok := c.byID[id]; return ok }

// Jurisdictions returns the sorted distinct jurisdictions of the ids; unknown
// ids are skipped.
func (c *Catalogue) Jurisdictions(ids []string) []string {
	seen := map[string]bool{}
	for _, id := range ids {
		if p, ok := c.Lookup(id); ok {
			seen[p.Jurisdiction] = true
		}
	}
	out := make([]string, 0, len(seen))
	for j := range seen {
		out = append(out, j)
	}
	sort.Strings(out)
	return out
}
