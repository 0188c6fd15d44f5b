package view

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// query is a list request: filters, text search, sort and page.
type query struct {
	Checkpoint, Framework, Scenario, Domain, Status string
	Type, Kind, Provision                           string
	Success, Drift                                  string // "", "true", "false"
	Run                                             int    // run folder index + 1; 0 for every run
	Q                                               string
	Sort                                            string // a sortKeys name, "-" prefix for descending
	Page, Size                                      int
}

const maxPageSize = 500

var filterNames = []string{"checkpoint", "framework", "scenario", "domain", "status", "type", "kind", "provision", "success", "drift"}

// parseQuery reads a list request's parameters, refusing unknown values
// with a message that names the parameter.
func parseQuery(v url.Values) (query, error) {
	q := query{
		Checkpoint: v.Get("checkpoint"), Framework: v.Get("framework"), Scenario: v.Get("scenario"),
		Domain: v.Get("domain"), Status: v.Get("status"), Type: v.Get("type"), Kind: v.Get("kind"),
		Provision: v.Get("provision"), Success: v.Get("success"), Drift: v.Get("drift"),
		Q: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort"), Page: 1, Size: 50,
	}
	for _, b := range []struct{ name, val string }{{"success", q.Success}, {"drift", q.Drift}} {
		if b.val != "" && b.val != "true" && b.val != "false" {
			return q, fmt.Errorf("%s=%q: want true or false", b.name, b.val)
		}
	}
	if s := strings.TrimPrefix(q.Sort, "-"); s != "" && sortKeys[s] == nil {
		return q, fmt.Errorf("sort=%q: want one of %s (with - for descending)", q.Sort, strings.Join(sortNames(), ", "))
	}
	if s := v.Get("run"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, fmt.Errorf("run=%q: want a run folder's number (0 upwards, as /api/sources lists them)", s)
		}
		q.Run = n + 1
	}
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"page", &q.Page, 1 << 30}, {"size", &q.Size, maxPageSize}} {
		if s := v.Get(p.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > p.max {
				return q, fmt.Errorf("%s=%q: want an integer from 1 to %d", p.name, s, p.max)
			}
			*p.dst = n
		}
	}
	return q, nil
}

var sortKeys = map[string]func(a, b *summary) int{
	"checkpoint": func(a, b *summary) int { return cmp.Compare(a.Checkpoint, b.Checkpoint) },
	"run":        func(a, b *summary) int { return cmp.Compare(a.dir, b.dir) },
	"framework":  func(a, b *summary) int { return cmp.Compare(a.Framework, b.Framework) },
	"scenario":   func(a, b *summary) int { return cmp.Compare(a.Scenario, b.Scenario) },
	"domain":     func(a, b *summary) int { return cmp.Compare(a.Domain, b.Domain) },
	"rollout":    func(a, b *summary) int { return cmp.Compare(a.Rollout, b.Rollout) },
	"status":     func(a, b *summary) int { return cmp.Compare(a.Status, b.Status) },
	"success":    func(a, b *summary) int { return cmpBool(a.Success, b.Success) },
	"drift":      func(a, b *summary) int { return cmpBool(a.Drift, b.Drift) },
	"calls":      func(a, b *summary) int { return cmp.Compare(a.Calls, b.Calls) },
	"tokens":     func(a, b *summary) int { return cmp.Compare(a.Tokens, b.Tokens) },
}

func sortNames() []string {
	out := make([]string, 0, len(sortKeys))
	for k := range sortKeys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func (q *query) match(s *summary) bool {
	eq := func(want, got string) bool { return want == "" || want == got }
	has := func(want string, got []string) bool { return want == "" || slices.Contains(got, want) }
	flag := func(want string, got bool) bool { return want == "" || (want == "true") == got }
	return (q.Run == 0 || q.Run == s.dir+1) && eq(q.Checkpoint, s.Checkpoint) && eq(q.Framework, s.Framework) && eq(q.Scenario, s.Scenario) &&
		eq(q.Domain, s.Domain) && eq(q.Status, s.Status) && has(q.Type, s.Types) && has(q.Kind, s.Kinds) &&
		has(q.Provision, s.Provisions) && flag(q.Success, s.Success) && flag(q.Drift, s.Drift)
}

// groupStat is TSR, DR and CSR of one checkpoint × framework within the
// current filter, over the records whose status is scored
// (trajectory.Status.Scored, as `antidrift score` counts them); N counts
// those, Listed every record of the group.
type groupStat struct {
	Checkpoint string  `json:"checkpoint"`
	Framework  string  `json:"framework"`
	RunDir     int     `json:"run_dir"`
	N          int     `json:"n"`
	Listed     int     `json:"listed"`
	TSR        float64 `json:"tsr"`
	DR         float64 `json:"dr"`
	CSR        float64 `json:"csr"`
}

// listResult is a page of summaries.
type listResult struct {
	Total    int          `json:"total"`
	Page     int          `json:"page"`
	Size     int          `json:"size"`
	Rows     []summaryRow `json:"rows"`
	Groups   []groupStat  `json:"groups"`
	Progress progress     `json:"progress"`
	Facets   facets       `json:"facets"`
	// Runs tells the rows' run_dir apart: name, folder, start, settings.
	Runs []runBrief `json:"runs"`
}

// runBrief is a run folder as lists name it.
type runBrief struct {
	Path       string `json:"path"`
	Checkpoint string `json:"checkpoint"`
	Label      string `json:"label"`
	State      string `json:"state"`
	Records    int    `json:"records"`
	Planned    int    `json:"planned"`
	runLabel
}

func (ix *runIndex) briefsLocked() []runBrief {
	out := make([]runBrief, len(ix.dirs))
	for i, d := range ix.dirs {
		out[i] = runBrief{Path: d.Path, Checkpoint: d.Manifest.Plan.Checkpoint, Label: d.Label, State: d.State, Records: d.Records, Planned: d.Planned, runLabel: d.runLabel}
	}
	return out
}

type summaryRow struct {
	TrajID     string   `json:"traj_id"`
	RunDir     int      `json:"run_dir"`
	Checkpoint string   `json:"checkpoint"`
	Policy     string   `json:"policy"`
	Framework  string   `json:"framework"`
	Scenario   string   `json:"scenario_id"`
	Domain     string   `json:"domain"`
	Rollout    int      `json:"rollout"`
	Status     string   `json:"status"`
	Success    bool     `json:"success"`
	Drift      bool     `json:"drift"`
	Calls      int      `json:"calls"`
	Tokens     int      `json:"tokens"`
	Types      []string `json:"drift_types"`
	Kinds      []string `json:"violation_kinds"`
	Provisions []string `json:"provisions"`
}

func rowOf(s *summary) summaryRow {
	return summaryRow{
		TrajID: s.TrajID, RunDir: s.dir, Checkpoint: s.Checkpoint, Policy: s.Policy, Framework: s.Framework, Scenario: s.Scenario,
		Domain: s.Domain, Rollout: s.Rollout, Status: s.Status, Success: s.Success, Drift: s.Drift,
		Calls: s.Calls, Tokens: s.Tokens, Types: nonNil(s.Types), Kinds: nonNil(s.Kinds), Provisions: nonNil(s.Provisions),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// facets are the values each filter can take over the whole index, for the
// filter menus.
type facets map[string][]string

func (ix *runIndex) facetsLocked() facets {
	sets := map[string]map[string]bool{}
	for _, n := range filterNames {
		sets[n] = map[string]bool{}
	}
	for i := range ix.recs {
		s := &ix.recs[i]
		sets["checkpoint"][s.Checkpoint] = true
		sets["framework"][s.Framework] = true
		sets["scenario"][s.Scenario] = true
		sets["domain"][s.Domain] = true
		sets["status"][s.Status] = true
		for _, t := range s.Types {
			sets["type"][t] = true
		}
		for _, k := range s.Kinds {
			sets["kind"][k] = true
		}
		for _, p := range s.Provisions {
			sets["provision"][p] = true
		}
	}
	out := facets{}
	for n, set := range sets {
		if n == "success" || n == "drift" {
			continue
		}
		vals := make([]string, 0, len(set))
		for v := range set {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		out[n] = vals
	}
	return out
}

// selection returns the positions q selects, in q's order, with the
// summaries they index. Filtering and sorting work on the summaries in
// memory; a text search reads the lines of the records that pass the
// filters.
func (ix *runIndex) selection(q query, search *searchCache) ([]int, []summary, progress, error) {
	ix.mu.RLock()
	sel := make([]int, 0, len(ix.recs))
	for i := range ix.recs {
		if q.match(&ix.recs[i]) {
			sel = append(sel, i)
		}
	}
	prog := ix.progressLocked()
	// Indexing only appends: the summaries this slice header covers never
	// change, so they can be read after the lock is released.
	recs := ix.recs
	ix.mu.RUnlock()

	if q.Q != "" {
		var err error
		if sel, err = ix.search(recs, sel, q.Q, search, prog.Done); err != nil {
			return nil, nil, prog, err
		}
	}
	if key := strings.TrimPrefix(q.Sort, "-"); key != "" {
		less := sortKeys[key]
		desc := strings.HasPrefix(q.Sort, "-")
		slices.SortStableFunc(sel, func(a, b int) int {
			c := less(&recs[a], &recs[b])
			if desc {
				c = -c
			}
			return c
		})
	}
	return sel, recs, prog, nil
}

// list answers a list request: one page, the group metrics of the whole
// selection and the filter menus.
func (ix *runIndex) list(q query, search *searchCache) (listResult, error) {
	sel, recs, prog, err := ix.selection(q, search)
	if err != nil {
		return listResult{}, err
	}
	ix.mu.RLock()
	fac := ix.facetsLocked()
	runs := ix.briefsLocked()
	ix.mu.RUnlock()
	res := listResult{Total: len(sel), Page: q.Page, Size: q.Size, Progress: prog, Facets: fac, Rows: []summaryRow{}, Runs: runs}
	from := (q.Page - 1) * q.Size
	for i := from; i < len(sel) && i < from+q.Size; i++ {
		res.Rows = append(res.Rows, rowOf(&recs[sel[i]]))
	}
	res.Groups = groups(recs, sel)
	return res, nil
}

// neighbours returns the ids before and after id in the list q selects.
func (ix *runIndex) neighbours(q query, search *searchCache, id string) ([2]string, error) {
	sel, recs, _, err := ix.selection(q, search)
	if err != nil {
		return [2]string{}, err
	}
	var out [2]string
	for k, i := range sel {
		if recs[i].TrajID == id {
			if k > 0 {
				out[0] = recs[sel[k-1]].TrajID
			}
			if k+1 < len(sel) {
				out[1] = recs[sel[k+1]].TrajID
			}
			break
		}
	}
	return out, nil
}

func groups(recs []summary, sel []int) []groupStat {
	type key struct {
		c, f string
		d    int
	}
	acc := map[key]*[5]int{}
	for _, i := range sel {
		s := &recs[i]
		k := key{s.Checkpoint, s.Framework, s.dir}
		a := acc[k]
		if a == nil {
			a = &[5]int{}
			acc[k] = a
		}
		a[4]++
		if !trajectory.Status(s.Status).Scored() {
			continue
		}
		a[0]++
		if s.Success {
			a[1]++
		}
		if s.Drift {
			a[2]++
		}
		if s.Success && !s.Drift {
			a[3]++
		}
	}
	out := []groupStat{}
	for k, a := range acc {
		n := float64(max(a[0], 1))
		out = append(out, groupStat{Checkpoint: k.c, Framework: k.f, RunDir: k.d, N: a[0], Listed: a[4], TSR: float64(a[1]) / n, DR: float64(a[2]) / n, CSR: float64(a[3]) / n})
	}
	slices.SortFunc(out, func(a, b groupStat) int {
		return cmp.Or(cmp.Compare(a.Checkpoint, b.Checkpoint), cmp.Compare(a.Framework, b.Framework), cmp.Compare(a.RunDir, b.RunDir))
	})
	return out
}
