package synth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/antidrift/antidrift/rollout/store"
)

// Fingerprint is the part of a run's configuration that must match on a
// rerun: what produced the stored calls and rollouts. It never holds a key
// or a credential (base URLs are redacted by the caller).
type Fingerprint struct {
	Seeds       string            `json:"seeds"`      // source named by --seeds
	SeedsHash   string            `json:"seeds_hash"` // of the seeds' content
	Designer    string            `json:"designer"`
	Builder     string            `json:"builder"`
	Critic      string            `json:"critic"`
	Matcher     string            `json:"matcher"`
	Endpoints   map[string]string `json:"endpoints,omitempty"` // role → redacted base URL
	KeyEnvs     map[string]string `json:"api_key_envs,omitempty"`
	Probes      []string          `json:"probes"`
	Rollouts    int               `json:"rollouts"`
	MaxSteps    int               `json:"max_steps"`
	Seed        int64             `json:"seed"`
	Rounds      int               `json:"rounds"`
	Repairs     int               `json:"repairs"`
	MinCovered  int               `json:"min_covered"`
	MinDrifting int               `json:"min_drifting"`
	MaxTokens   int               `json:"max_tokens"`
	Temperature float64           `json:"temperature"`
	Prompts     map[string]string `json:"prompts"`
	Catalogue   string            `json:"catalogue_hash"`
	Join        []string          `json:"join,omitempty"`
}

const configName = "synth.json"

// ErrConfigChanged is returned when a run folder was made with another
// configuration and --force was not given.
var ErrConfigChanged = errors.New("the run folder was made with another configuration")

// claimFolder records fp in dir, or checks it against the one recorded.
func claimFolder(dir string, fp Fingerprint, force bool) error {
	name := filepath.Join(dir, configName)
	if !exists(name) {
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 && !(len(entries) == 1 && entries[0].Name() == store.LockName) {
			return fmt.Errorf("synth: %s is not empty and holds no %s: choose an empty or new folder", dir, configName)
		}
		return writeJSONAtomic(name, fp)
	}
	var old Fingerprint
	if err := readJSON(name, &old); err != nil {
		return err
	}
	if diff := fingerprintDiff(old, fp); len(diff) > 0 {
		if !force {
			return fmt.Errorf("synth: %s: %w (%s); rerun with --force to redo what changed", dir, ErrConfigChanged, strings.Join(diff, ", "))
		}
		return writeJSONAtomic(name, fp)
	}
	return nil
}

// fingerprintDiff names the fields that differ.
func fingerprintDiff(a, b Fingerprint) []string {
	var am, bm map[string]any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	json.Unmarshal(ja, &am)
	json.Unmarshal(jb, &bm)
	var out []string
	for k := range bm {
		if !reflect.DeepEqual(am[k], bm[k]) {
			out = append(out, k)
		}
	}
	for k := range am {
		if _, ok := bm[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
