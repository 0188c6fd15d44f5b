package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// ExportOptions say what an export holds.
type ExportOptions struct {
	// Filter selects the trajectories as the list does: its URL parameters
	// (checkpoint, drift, q, sort, run, ...).
	Filter url.Values
	// Limit is the most trajectories, and rows per dataset table, written.
	Limit int
}

// ExportResult says what was written.
type ExportResult struct {
	Trajectories int // written
	Selected     int // selected by the filter (more than written when over the limit)
	Tables       int
	TableRows    int
	Reports      int
}

// exportCSP is the exported page's policy (a meta tag: a static site sets
// no headers).
const exportCSP = "default-src 'none'; script-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'none'; object-src 'none'"

// tableChunk is how many rows of a dataset table one data file holds.
const tableChunk = 200

// Export writes a self-contained static copy of what the filter selects
// into dir: the app (index.html, app.js, style.css) and the data as
// script files (data/*.js) it reads instead of the API, so that the site
// opens from file:// or any static host with the same pages, read-only.
// Lists, filters, sort, search, pairs and compare run in the page over
// the exported records. The same folders and filter give byte-identical
// files. dir must be empty or not exist: nothing is overwritten.
func (s *Server) Export(dir string, opt ExportOptions) (ExportResult, error) {
	var res ExportResult
	if opt.Limit < 1 {
		return res, fmt.Errorf("export: limit %d: want at least 1", opt.Limit)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return res, fmt.Errorf("export: %s is not empty: give a new folder (nothing is overwritten)", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("export: %w", err)
	}
	if err := s.Index(); err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	q, err := parseQuery(opt.Filter)
	if err != nil {
		return res, fmt.Errorf("export: filter: %w", err)
	}
	sel, recs, _, err := s.runs.selection(q, s.search)
	if err != nil {
		return res, fmt.Errorf("export: %w", err)
	}
	res.Selected = len(sel)
	if len(sel) > opt.Limit {
		sel = sel[:opt.Limit]
	}
	w := &exportWriter{dir: dir}
	w.mkdir("data/t")

	// The app, with the data's entry point loaded before it.
	for _, name := range []string{"app.js", "style.css"} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return res, err
		}
		w.write(name, b)
	}
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		return res, err
	}
	page = bytes.Replace(page, []byte(`<script src="app.js"></script>`),
		[]byte(`<script src="data/index.js"></script>`+"\n"+`<script src="app.js"></script>`), 1)
	// The server's policy, as far as a page can set it itself: its own
	// scripts and styles only, nothing fetched, no frames, no forms.
	page = bytes.Replace(page, []byte(`<meta charset="utf-8">`),
		[]byte(`<meta charset="utf-8">`+"\n"+`<meta http-equiv="Content-Security-Policy" content="`+exportCSP+`">`), 1)
	w.write("index.html", page)

	// One file per trajectory, its page as the API serves it; prev and
	// next are found in the page, within its own filter.
	rows := make([]summaryRow, len(sel))
	files := map[string]int{}
	search := make([]string, len(sel))
	for k, i := range sel {
		sum := recs[i]
		rows[k] = rowOf(&sum)
		files[sum.TrajID] = k
		d, err := s.detailOf(&sum)
		if err != nil {
			return res, fmt.Errorf("export: %w", err)
		}
		w.data(fmt.Sprintf("t/%d", k), d)
		var text strings.Builder
		for _, m := range d.Record.Messages {
			text.WriteString(strings.ToLower(messageText(m)) + "\n")
		}
		search[k] = text.String()
	}
	w.data("search", search)
	res.Trajectories = len(sel)

	s.runs.mu.RLock()
	runs := make([]runDir, len(s.runs.dirs))
	for i, d := range s.runs.dirs {
		runs[i] = *d
		runs[i].Manifest.Settings = store.Settings{}
	}
	briefs := s.runs.briefsLocked()
	s.runs.mu.RUnlock()

	// Dataset tables: their summary columns in the index, their rows (with
	// a pair's diff and its searchable text) in files of tableChunk rows.
	type exportTable struct {
		*table
		Exported int                 `json:"exported"`
		Columns  []string            `json:"columns"`
		Cells    map[string][]string `json:"cells"`
		Facets   map[string][]string `json:"facets"`
	}
	tables := []exportTable{}
	for n, t := range s.tables {
		et := exportTable{table: t, Exported: min(t.Rows, opt.Limit), Columns: t.columns(), Cells: map[string][]string{}, Facets: t.facets()}
		for _, c := range et.Columns {
			et.Cells[c] = t.cells.cols[c][:et.Exported]
		}
		for from := 0; from < et.Exported; from += tableChunk {
			var chunk []map[string]any
			for i := from; i < min(from+tableChunk, et.Exported); i++ {
				row, err := t.row(i)
				if err != nil {
					return res, fmt.Errorf("export: %w", err)
				}
				links := map[string]bool{}
				for _, k := range []string{"chosen_traj_id", "rejected_traj_id", "traj_id"} {
					var id string
					if json.Unmarshal(row[k], &id) == nil && id != "" {
						_, links[id] = files[id]
					}
				}
				line, _ := json.Marshal(row)
				text, _ := rowText(line)
				out := map[string]any{"row": i, "data": row, "trajectories": links, "text": strings.ToLower(text)}
				if t.Kind == TablePairs {
					out["diff"] = pairDiffOf(row)
				}
				chunk = append(chunk, out)
			}
			w.data(fmt.Sprintf("tables/%d/%d", n, from/tableChunk), chunk)
		}
		res.TableRows += et.Exported
		tables = append(tables, et)
	}
	res.Tables = len(tables)

	// Report folders, copied as they are (regular files only).
	reports := []report{}
	for n, r := range s.reports {
		to := fmt.Sprintf("reports/%d", n)
		if err := w.copyTree(r.Path, to); err != nil {
			return res, fmt.Errorf("export: %w", err)
		}
		reports = append(reports, report{Name: r.Name, URL: to + "/report.html"})
	}
	res.Reports = len(reports)

	var scored []string
	for _, st := range trajectory.Statuses {
		if st.Scored() {
			scored = append(scored, string(st))
		}
	}
	filter := map[string]string{}
	for k := range opt.Filter {
		filter[k] = opt.Filter.Get(k)
	}
	w.script("index.js", "window.ANTIDRIFT_STATIC = ", map[string]any{
		"rows": rows, "runs": briefs, "sources": map[string]any{"runs": runs, "tables": tables, "reports": reports},
		"scored": scored, "filter": filter, "selected": res.Selected, "limit": opt.Limit,
	}, ";\n")
	return res, w.err
}

// exportWriter writes the site's files, keeping the first error.
type exportWriter struct {
	dir string
	err error
}

func (w *exportWriter) mkdir(rel string) {
	if w.err == nil {
		w.err = os.MkdirAll(filepath.Join(w.dir, filepath.FromSlash(rel)), 0o755)
	}
}

func (w *exportWriter) write(rel string, b []byte) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	if w.err = os.MkdirAll(filepath.Dir(p), 0o755); w.err == nil {
		w.err = os.WriteFile(p, b, 0o644)
	}
}

// script writes data/REL as a script that hands v to the page: a page
// opened from file:// may not fetch files, but it may load scripts.
func (w *exportWriter) script(rel, prefix string, v any, suffix string) {
	b, err := json.Marshal(v)
	if err != nil {
		w.err = errors.Join(w.err, err)
		return
	}
	w.write("data/"+rel, append(append([]byte(prefix), b...), suffix...))
}

// data writes one data file the page loads when it needs it, data/NAME.js.
func (w *exportWriter) data(name string, v any) {
	q, _ := json.Marshal(name)
	w.script(name+".js", "window.ANTIDRIFT_DATA("+string(q)+", ", v, ");\n")
}

// copyTree copies a report folder's regular files (no symlink is
// followed) into the site.
func (w *exportWriter) copyTree(from, to string) error {
	if w.err != nil {
		return w.err
	}
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		var b bytes.Buffer
		if _, err := io.Copy(&b, src); err != nil {
			return err
		}
		w.write(to+"/"+filepath.ToSlash(rel), b.Bytes())
		return w.err
	})
}
