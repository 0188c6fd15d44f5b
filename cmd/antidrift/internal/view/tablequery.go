package view

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// tableCells holds a table's summary columns (rowSummaryKeys), one value
// per row: a string column's text, a number's or a boolean's JSON, a list
// column's JSON (its members are what a filter matches). "" is a row
// without the column. Values repeat (scenarios, splits), so they are
// interned.
type tableCells struct {
	cols   map[string][]string
	intern map[string]string
	rows   int
}

func (c *tableCells) add(row map[string]json.RawMessage) {
	if c.cols == nil {
		c.cols, c.intern = map[string][]string{}, map[string]string{}
	}
	for _, k := range rowSummaryKeys {
		v, ok := row[k]
		if !ok {
			if col := c.cols[k]; col != nil {
				c.cols[k] = append(col, "")
			}
			continue
		}
		col := c.cols[k]
		if col == nil {
			col = make([]string, c.rows, c.rows+1)
		}
		text := string(v)
		var s string
		if json.Unmarshal(v, &s) == nil {
			text = s
		}
		if in, ok := c.intern[text]; ok {
			text = in
		} else if len(c.intern) < 1<<16 {
			c.intern[text] = text
		}
		c.cols[k] = append(col, text)
	}
	c.rows++
}

// members are a list cell's values; a scalar is its own one member.
func members(cell string) []string {
	if strings.HasPrefix(cell, "[") {
		var xs []any
		if json.Unmarshal([]byte(cell), &xs) == nil {
			out := make([]string, 0, len(xs))
			for _, x := range xs {
				if s, ok := x.(string); ok {
					out = append(out, s)
				} else {
					b, _ := json.Marshal(x)
					out = append(out, string(b))
				}
			}
			return out
		}
	}
	return []string{cell}
}

// maxFacetValues: a column with more distinct values (ids, rewards) is
// sorted and searched, not offered as a filter menu.
const maxFacetValues = 200

// tableFacets are the filter menus of a table: each column with few
// distinct values, and those values.
func (t *table) facets() map[string][]string {
	t.facetOnce.Do(func() {
		t.facetVals = map[string][]string{}
		for _, k := range rowSummaryKeys {
			col := t.cells.cols[k]
			if col == nil || strings.HasSuffix(k, "_id") {
				continue
			}
			set := map[string]bool{}
			for _, v := range col {
				for _, m := range members(v) {
					if m != "" {
						set[m] = true
					}
				}
				if len(set) > maxFacetValues {
					break
				}
			}
			if len(set) == 0 || len(set) > maxFacetValues {
				continue
			}
			vals := make([]string, 0, len(set))
			for v := range set {
				vals = append(vals, v)
			}
			slices.Sort(vals)
			t.facetVals[k] = vals
		}
	})
	return t.facetVals
}

// tableQuery is a table list request: column filters, text search, sort
// and page.
type tableQuery struct {
	Filters    [][2]string // column, value
	Q          string
	Sort       string
	Page, Size int
}

// parseTableQuery reads a table request: any summary column the table has
// is a filter (its value, or a member of a list column); q, sort, page and
// size as for trajectories.
func (t *table) parseQuery(v url.Values) (tableQuery, error) {
	q := tableQuery{Q: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort"), Page: 1, Size: 50}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch k {
		case "q", "sort":
		case "page", "size":
			lim := 1 << 30
			if k == "size" {
				lim = maxPageSize
			}
			n, err := strconv.Atoi(v.Get(k))
			if err != nil || n < 1 || n > lim {
				return q, fmt.Errorf("%s=%q: want an integer from 1 to %d", k, v.Get(k), lim)
			}
			if k == "page" {
				q.Page = n
			} else {
				q.Size = n
			}
		default:
			if t.cells.cols[k] == nil {
				return q, fmt.Errorf("%s: table %s has no column %q to filter on (it has %s)", k, t.Name, k, strings.Join(t.columns(), ", "))
			}
			if val := v.Get(k); val != "" {
				q.Filters = append(q.Filters, [2]string{k, val})
			}
		}
	}
	if s := strings.TrimPrefix(q.Sort, "-"); s != "" && t.cells.cols[s] == nil {
		return q, fmt.Errorf("sort=%q: table %s has no column %q (it has %s)", q.Sort, t.Name, s, strings.Join(t.columns(), ", "))
	}
	return q, nil
}

// columns are the summary columns the table has, in display order.
func (t *table) columns() []string {
	var out []string
	for _, k := range rowSummaryKeys {
		if t.cells.cols[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// cellCompare orders two cells: numbers as numbers, else as text; a row
// without the column last.
func cellCompare(a, b string) int {
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(a, b)
}

// selection returns the rows q selects, in q's order.
func (t *table) selection(q tableQuery) ([]int, error) {
	sel := make([]int, 0, t.Rows)
	for i := 0; i < t.Rows; i++ {
		keep := true
		for _, f := range q.Filters {
			cell := t.cells.cols[f[0]][i]
			if cell != f[1] && !(strings.HasPrefix(cell, "[") && slices.Contains(members(cell), f[1])) {
				keep = false
				break
			}
		}
		if keep {
			sel = append(sel, i)
		}
	}
	if q.Q != "" {
		hits, err := t.search(strings.ToLower(q.Q))
		if err != nil {
			return nil, err
		}
		out := sel[:0]
		for _, i := range sel {
			if hits[i] {
				out = append(out, i)
			}
		}
		sel = out
	}
	if key := strings.TrimPrefix(q.Sort, "-"); key != "" {
		col, desc := t.cells.cols[key], strings.HasPrefix(q.Sort, "-")
		slices.SortStableFunc(sel, func(a, b int) int {
			c := cellCompare(col[a], col[b])
			if desc && col[a] != "" && col[b] != "" {
				c = -c
			}
			return c
		})
	}
	return sel, nil
}

// tableMessageKeys are the columns that hold message lists.
var tableMessageKeys = []string{"prompt", "chosen", "rejected", "completion", "messages"}

// rowText is the searchable text of a row's messages: contents and tool
// calls' names and arguments, as the trajectory search reads them.
func rowText(line []byte) (string, error) {
	var row map[string]json.RawMessage
	if err := json.Unmarshal(line, &row); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, k := range tableMessageKeys {
		msgs, ok := pairMessages(row[k])
		if !ok {
			// Another shape (a rendered text): its strings as they are.
			var s string
			if json.Unmarshal(row[k], &s) == nil {
				b.WriteString(s + "\n")
			}
			continue
		}
		for _, m := range msgs {
			b.WriteString(m.Content + "\n")
			for _, c := range m.ToolCalls {
				b.WriteString(c.Function.Name + " " + argsText(c.Function.Arguments) + "\n")
			}
		}
	}
	return b.String(), nil
}

// search finds the rows whose messages contain needle (lower case): a
// raw-byte prefilter where the needle cannot be JSON-escaped, then an
// exact check on the decoded messages. The last few searches are kept.
func (t *table) search(needle string) (map[int]bool, error) {
	t.searchMu.Lock()
	if hits, ok := t.searches[needle]; ok {
		t.searchMu.Unlock()
		return hits, nil
	}
	t.searchMu.Unlock()
	workers := runtime.GOMAXPROCS(0)
	prefilter := jsonSafe(needle)
	nb := []byte(needle)
	parts := make([][]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			f, err := os.Open(t.Path)
			if err != nil {
				errs[w] = err
				return
			}
			defer f.Close()
			var buf, low []byte
			for i := w; i < t.Rows; i += workers {
				buf = slices.Grow(buf[:0], int(t.lens[i]))[:t.lens[i]]
				if _, err := f.ReadAt(buf, t.offs[i]); err != nil {
					errs[w] = fmt.Errorf("%s: %w", t.Path, err)
					return
				}
				if prefilter && !lowerContains(buf, nb, &low) {
					continue
				}
				text, err := rowText(buf)
				if err != nil {
					errs[w] = fmt.Errorf("%s: row %d: %w", t.Path, i, err)
					return
				}
				if strings.Contains(strings.ToLower(text), needle) {
					parts[w] = append(parts[w], i)
				}
			}
		}(w)
	}
	wg.Wait()
	hits := map[int]bool{}
	for w := range parts {
		if errs[w] != nil {
			return nil, errs[w]
		}
		for _, i := range parts[w] {
			hits[i] = true
		}
	}
	t.searchMu.Lock()
	if t.searches == nil || len(t.searches) >= searchCacheSize {
		t.searches = map[string]map[int]bool{}
	}
	t.searches[needle] = hits
	t.searchMu.Unlock()
	return hits, nil
}

// tableRows answers a table list request: one page of summary rows, the
// number selected and the filter menus.
func (t *table) list(q tableQuery) (map[string]any, error) {
	sel, err := t.selection(q)
	if err != nil {
		return nil, err
	}
	rows := []map[string]any{}
	from := (q.Page - 1) * q.Size
	cols := t.columns()
	for k := from; k < len(sel) && k < from+q.Size; k++ {
		i := sel[k]
		r := map[string]any{"row": i}
		for _, c := range cols {
			if v := t.cells.cols[c][i]; v != "" {
				r[c] = v
			}
		}
		rows = append(rows, r)
	}
	return map[string]any{"table": t, "total": len(sel), "page": q.Page, "size": q.Size, "rows": rows,
		"columns": cols, "facets": t.facets()}, nil
}
