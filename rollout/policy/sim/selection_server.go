package sim

import (
	"sync"

	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/skill"
)

// selectionSet holds the server's simulated selection policies, built on
// the first selection prompt from the built-in skill libraries and any
// added with AddLibraries.
type selectionSet struct {
	mu       sync.Mutex
	extra    []*skill.Library
	policies map[string]*SelectionPolicy
}

// AddLibraries makes the server answer selection prompts of more skill
// libraries, beside the built-in ones. Call it before serving.
func (s *Server) AddLibraries(libs ...*skill.Library) {
	s.selection.mu.Lock()
	defer s.selection.mu.Unlock()
	s.selection.extra = append(s.selection.extra, libs...)
	s.selection.policies = nil
}

func hasSelectionProfile(name string) bool {
	_, err := LookupSelection(name)
	return err == nil
}

// policyFor returns the selection policy of a profile when the request is
// one of its selection prompts, else nil.
func (ss *selectionSet) policyFor(name string, req policy.Request) *SelectionPolicy {
	if !hasSelectionProfile(name) {
		return nil
	}
	ss.mu.Lock()
	if ss.policies == nil {
		libs := append([]*skill.Library(nil), ss.extra...)
		added := map[string]bool{}
		for _, l := range libs {
			added[l.Name] = true
		}
		for _, n := range skill.BuiltinNames() {
			if l, err := skill.Builtin(n); err == nil && !added[n] {
				libs = append(libs, l)
			}
		}
		ss.policies = map[string]*SelectionPolicy{}
		for _, p := range append(append([]SelectionProfile(nil), SelectionProfiles...), BaselineProfiles...) {
			ss.policies[p.Name] = NewSelection(p, libs...)
		}
	}
	sp := ss.policies[name]
	ss.mu.Unlock()
	if _, ok := sp.Recognise(req); !ok {
		return nil
	}
	return sp
}
