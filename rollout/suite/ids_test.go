package suite_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/suite"
)

// LoadNamedIDs parses only the files named by the ids it is given: every
// built-in scenario file must be named by its id.
func TestFileNamesAreIDs(t *testing.T) {
	err := fs.WalkDir(suite.FS(), "scenarios", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := fs.ReadFile(suite.FS(), p)
		if err != nil {
			return err
		}
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if want := strings.TrimSuffix(path.Base(p), ".json"); s.ID != want {
			t.Errorf("%s: id %q, but the file is named %q", p, s.ID, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Loading some ids gives exactly what the whole suite gives for them.
func TestLoadNamedIDsEqualsTheWholeSuite(t *testing.T) {
	all, ps, _ := suite.LoadNamed(suite.Name, provisions.Builtin(), scenario.Options{})
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	ids := []string{all[3].ID, all[len(all)-1].ID, all[40].ID}
	got, ps, ok := suite.LoadNamedIDs(suite.Name, ids, provisions.Builtin(), scenario.Options{})
	if !ok || len(ps) > 0 {
		t.Fatal(ok, ps)
	}
	if len(got) != len(ids) {
		t.Fatalf("LoadNamedIDs gave %d scenarios, want %d", len(got), len(ids))
	}
	byID := map[string]*scenario.Scenario{}
	for _, s := range all {
		byID[s.ID] = s
	}
	for _, s := range got {
		if scenario.Hash([]*scenario.Scenario{s}) != scenario.Hash([]*scenario.Scenario{byID[s.ID]}) {
			t.Errorf("%s: loaded alone, it hashes differently", s.ID)
		}
	}
	// An id no file is named for: the whole suite, for the caller to refuse.
	whole, _, _ := suite.LoadNamedIDs(suite.Name, []string{"no-such-scenario"}, provisions.Builtin(), scenario.Options{})
	if len(whole) != len(all) {
		t.Errorf("an unknown id gave %d scenarios, want the whole suite's %d", len(whole), len(all))
	}
}
