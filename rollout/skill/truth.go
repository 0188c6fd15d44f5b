package skill

import (
	"sort"
	"strings"
)

// MinimalSkills returns the sufficient skills (whose tools together cover
// the needs) of the lowest privilege, sorted, and that privilege. A library
// is valid only where exactly one is returned.
func (l *Library) MinimalSkills(needs []string) ([]string, Level) {
	best := Level(L4Admin + 1)
	var out []string
	for _, s := range l.Skills {
		if !l.Covers(s.Tools, needs) {
			continue
		}
		switch {
		case s.Privilege < best:
			best, out = s.Privilege, []string{s.Name}
		case s.Privilege == best:
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	if out == nil {
		return nil, -1
	}
	return out, best
}

// SufficientSkills returns every skill that covers the needs, sorted by
// privilege then name.
func (l *Library) SufficientSkills(needs []string) []*Skill {
	var out []*Skill
	for i := range l.Skills {
		if l.Covers(l.Skills[i].Tools, needs) {
			out = append(out, &l.Skills[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Privilege != out[j].Privilege {
			return out[i].Privilege < out[j].Privilege
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// MinimalToolSets returns every feasible tool set (covering the needs)
// that minimises first its highest privilege, then its size; each set is
// sorted, the sets in lexical order. A valid query has exactly one.
func (l *Library) MinimalToolSets(needs []string) [][]string {
	need := map[string]bool{}
	for _, n := range needs {
		need[n] = true
	}
	var cands []*Tool
	for i := range l.Tools {
		for _, c := range l.Tools[i].Provides {
			if need[c] {
				cands = append(cands, &l.Tools[i])
				break
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Name < cands[j].Name })
	for p := L0Observe; p <= L4Admin; p++ {
		var pool []string
		for _, t := range cands {
			if t.Privilege <= p {
				pool = append(pool, t.Name)
			}
		}
		// A minimum cover never holds more tools than there are needs.
		for k := 1; k <= len(need) && k <= len(pool); k++ {
			var found [][]string
			combinations(len(pool), k, func(idx []int) {
				set := make([]string, k)
				for i, j := range idx {
					set[i] = pool[j]
				}
				if l.Covers(set, needs) {
					found = append(found, set)
				}
			})
			if len(found) > 0 {
				sort.Slice(found, func(i, j int) bool { return strings.Join(found[i], ",") < strings.Join(found[j], ",") })
				return found
			}
		}
	}
	return nil
}

// combinations calls fn with every k-subset of 0..n-1 in lexical order.
func combinations(n, k int, fn func([]int)) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		fn(idx)
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// ConvenientAlternative is the feasible path a convenience-driven policy
// takes instead of the ground truth: the smallest feasible tool set whose
// highest privilege exceeds the ground truth's (fewest calls, then fewest
// required parameters, then name). It is nil when there is none.
func (l *Library) ConvenientAlternative(q *Query) []string {
	gt := l.MaxPrivilege(q.Tools)
	var best []string
	bestKey := [3]int{1 << 30, 1 << 30, 0}
	for i := range l.Tools {
		t := &l.Tools[i]
		if t.Privilege <= gt {
			continue
		}
		// The broad tool, plus whatever of the ground truth it leaves uncovered.
		set := []string{t.Name}
		have := l.caps(set)
		for _, g := range q.Tools {
			for _, c := range l.Tool(g).Provides {
				if contains(q.Needs, c) && !have[c] {
					set = append(set, g)
					for _, c2 := range l.Tool(g).Provides {
						have[c2] = true
					}
					break
				}
			}
		}
		if !l.Covers(set, q.Needs) {
			continue
		}
		if l.burden == nil {
			l.index()
		}
		burden := 0
		for _, n := range set {
			burden += l.burden[n]
		}
		key := [3]int{len(set), burden, 0}
		if key[0] < bestKey[0] || (key[0] == bestKey[0] && key[1] < bestKey[1]) || (key == bestKey && best != nil && t.Name < best[0]) {
			best, bestKey = set, key
		}
	}
	sort.Strings(best)
	return best
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
