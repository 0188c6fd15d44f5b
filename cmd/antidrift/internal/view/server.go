package view

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
)

//go:embed assets
var assets embed.FS

// ScenarioSource finds the scenarios of a run from its manifest; it may
// fail (a suite that moved), and the viewer then shows the trajectory
// without its boundary.
type ScenarioSource func(dir string, m store.Manifest) (map[string]*scenario.Scenario, error)

// Server is the viewer over a set of folders. Create it with New, call
// Index to read the runs (in the background or not), and serve Handler.
type Server struct {
	runs    *runIndex
	tables  []*table
	reports []report
	search  *searchCache

	scenarios ScenarioSource
	scMu      sync.Mutex
	scByDir   map[int]map[string]*scenario.Scenario
	scErr     map[int]error

	hosts map[string]bool // Host values served (AllowHosts)
}

// report is a Pareto or score report folder (report.json beside report.html).
type report struct {
	Name string `json:"name"`
	Path string `json:"-"`
	URL  string `json:"url"`
}

// New sorts the paths into run folders, dataset folders (JSONL tables) and
// report folders; a folder that holds run folders (a demo output, a rescore
// folder) contributes each of them. A path that is none of these is an
// error naming it.
func New(paths []string, scenarios ScenarioSource) (*Server, error) {
	if len(paths) == 0 {
		return nil, errors.New("view: no folder given")
	}
	var runDirs []string
	s := &Server{search: newSearchCache(), scenarios: scenarios, scByDir: map[int]map[string]*scenario.Scenario{}, scErr: map[int]error{}}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("view: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("view: %s: not a folder (give a run folder, a dataset folder or a report folder)", p)
		}
		found := false
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if _, ok := isRunFolder(q); ok {
				runDirs = append(runDirs, q)
				found = true
				return filepath.SkipDir
			}
			if fileExists(filepath.Join(q, "report.json")) && fileExists(filepath.Join(q, "report.html")) {
				n := len(s.reports)
				s.reports = append(s.reports, report{Name: filepath.ToSlash(q), Path: q, URL: fmt.Sprintf("/reports/%d/report.html", n)})
				found = true
				return filepath.SkipDir
			}
			if q != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("view: %w", err)
		}
		ts, err := findTables(p)
		if err != nil {
			return nil, fmt.Errorf("view: %w", err)
		}
		if len(ts) > 0 {
			found = true
		}
		s.tables = append(s.tables, ts...)
		if !found {
			return nil, fmt.Errorf("view: %s holds no run folder (manifest.json with a plan and trajectories/), dataset table (.jsonl) or report (report.json)", p)
		}
	}
	ix, err := newRunIndex(runDirs)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	s.runs = ix
	return s, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Index reads the run folders' records. Serve may start before it ends: the
// list then holds what is indexed so far and says how far indexing got.
func (s *Server) Index() error {
	_, err := s.IndexCount()
	return err
}

// IndexCount is Index, and the number of trajectories the pass listed.
func (s *Server) IndexCount() (int, error) {
	s.runs.build()
	s.runs.mu.RLock()
	defer s.runs.mu.RUnlock()
	return len(s.runs.recs), s.runs.err
}

// Counts says what the server holds, for the start-up line.
func (s *Server) Counts() (runs, tables, reports int) {
	return len(s.runs.dirs), len(s.tables), len(s.reports)
}

// Handler serves the app and its JSON API. Only GET and HEAD are served.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /api/sources", s.handleSources)
	mux.HandleFunc("GET /api/trajectories", s.handleList)
	mux.HandleFunc("GET /api/trajectory/{id}", s.handleTrajectory)
	mux.HandleFunc("GET /api/compare/{scenario}", s.handleCompare)
	mux.HandleFunc("GET /api/tables/{n}/rows", s.handleRows)
	mux.HandleFunc("GET /api/tables/{n}/rows/{i}", s.handleRow)
	mux.HandleFunc("GET /reports/{n}/{file...}", s.handleReport)
	if s.hosts == nil {
		s.AllowHosts(nil, nil)
	}
	return s.secure(mux)
}

// secure refuses what a read-only local viewer never needs (another
// method, another site's Host, a URL that is not UTF-8) and keeps pages
// from loading anything from elsewhere.
func (s *Server) secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if why := s.hostRefusal(r); why != "" {
			http.Error(w, "antidrift view: "+why, http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only viewer: only GET", http.StatusMethodNotAllowed)
			return
		}
		if why := badUTF8(r); why != "" {
			http.Error(w, "antidrift view: "+why, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Security-Policy", appCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		// The client went away; nothing to tell it.
		return
	}
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func (s *Server) handleSources(w http.ResponseWriter, r *http.Request) {
	s.runs.mu.RLock()
	runs := make([]runDir, len(s.runs.dirs))
	for i, d := range s.runs.dirs {
		runs[i] = *d
	}
	prog := s.runs.progressLocked()
	s.runs.mu.RUnlock()
	for i := range runs {
		// Settings hold the endpoint and command line; they are not needed
		// to read trajectories, so they are not served.
		runs[i].Manifest.Settings = store.Settings{}
	}
	writeJSON(w, map[string]any{"runs": runs, "tables": s.tables, "reports": s.reports, "progress": prog})
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.runs.list(q, s.search)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, res)
}

// scenariosOf returns the scenarios of run folder dir, loaded once.
func (s *Server) scenariosOf(dir int) (map[string]*scenario.Scenario, error) {
	s.scMu.Lock()
	defer s.scMu.Unlock()
	if sc, ok := s.scByDir[dir]; ok {
		return sc, s.scErr[dir]
	}
	if s.scenarios == nil {
		s.scByDir[dir] = nil
		s.scErr[dir] = errors.New("no scenario source")
		return nil, s.scErr[dir]
	}
	rd := s.runs.dirs[dir]
	sc, err := s.scenarios(rd.Path, rd.Manifest)
	s.scByDir[dir], s.scErr[dir] = sc, err
	return sc, err
}

func (s *Server) handleTrajectory(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.runs.mu.RLock()
	pos, ok := s.runs.byID[id]
	var sum summary
	if ok {
		sum = s.runs.recs[pos]
	}
	s.runs.mu.RUnlock()
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no trajectory %q in the folders served", id))
		return
	}
	d, err := s.detailOf(&sum)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	// Neighbours within the list's current filter and order, for keyboard
	// navigation.
	if res, err := s.runs.neighbours(q, s.search, id); err == nil {
		d.Prev, d.Next = res[0], res[1]
	}
	writeJSON(w, d)
}

// detailOf reads the record of sum and builds its page: marks, lures,
// the stripped view, its scenario and run.
func (s *Server) detailOf(sum *summary) (detail, error) {
	rec, err := s.runs.load(sum)
	if err != nil {
		return detail{}, err
	}
	scs, scErr := s.scenariosOf(sum.dir)
	sc := scs[rec.ScenarioID]
	d := buildDetail(rec, sc)
	d.Source = s.runs.dirs[sum.dir].Path
	s.runs.mu.RLock()
	d.Run = s.runs.briefsLocked()[sum.dir]
	s.runs.mu.RUnlock()
	if sc == nil {
		if scErr != nil {
			d.ScenarioError = scErr.Error()
		} else {
			d.ScenarioError = fmt.Sprintf("scenario %s is not in the run's scenario source", rec.ScenarioID)
		}
	}
	return d, nil
}

// compareGroup is one checkpoint × framework's rollouts of a scenario.
type compareGroup struct {
	Checkpoint string       `json:"checkpoint"`
	Framework  string       `json:"framework"`
	RunDir     int          `json:"run_dir"`
	N          int          `json:"n"`
	Success    int          `json:"success"`
	Drift      int          `json:"drift"`
	Clean      int          `json:"clean"`
	Rollouts   []summaryRow `json:"rollouts"`
}

// handleCompare groups a scenario's rollouts by run folder (checkpoint ×
// framework × run, so that two runs of one checkpoint stay apart);
// runs=N,M keeps the run folders named (numbers as /api/sources lists
// them), to set two runs of one checkpoint side by side.
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("scenario")
	var only map[int]bool
	if v := r.URL.Query().Get("runs"); v != "" {
		only = map[int]bool{}
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 || n >= len(s.runs.dirs) {
				writeError(w, http.StatusBadRequest, fmt.Errorf("runs=%q: want run folder numbers from 0 to %d, comma-separated", v, len(s.runs.dirs)-1))
				return
			}
			only[n] = true
		}
	}
	type key struct {
		c, f string
		d    int
	}
	s.runs.mu.RLock()
	runs := s.runs.briefsLocked()
	byKey := map[key]*compareGroup{}
	var order []key
	for i := range s.runs.recs {
		sm := &s.runs.recs[i]
		if sm.Scenario != id || (only != nil && !only[sm.dir]) {
			continue
		}
		k := key{sm.Checkpoint, sm.Framework, sm.dir}
		g := byKey[k]
		if g == nil {
			g = &compareGroup{Checkpoint: k.c, Framework: k.f, RunDir: k.d}
			byKey[k] = g
			order = append(order, k)
		}
		g.N++
		if sm.Success {
			g.Success++
		}
		if sm.Drift {
			g.Drift++
		}
		if sm.Success && !sm.Drift {
			g.Clean++
		}
		g.Rollouts = append(g.Rollouts, rowOf(sm))
	}
	s.runs.mu.RUnlock()
	if len(order) == 0 {
		writeError(w, http.StatusNotFound, fmt.Errorf("no trajectory of scenario %q in the folders served", id))
		return
	}
	out := make([]*compareGroup, len(order))
	for i, k := range order {
		out[i] = byKey[k]
	}
	writeJSON(w, map[string]any{"scenario_id": id, "groups": out, "reports": s.reports, "runs": runs})
}

func (s *Server) tableAt(w http.ResponseWriter, r *http.Request) *table {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(s.tables) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no table %q (there are %d)", r.PathValue("n"), len(s.tables)))
		return nil
	}
	return s.tables[n]
}

func (s *Server) handleRows(w http.ResponseWriter, r *http.Request) {
	t := s.tableAt(w, r)
	if t == nil {
		return
	}
	q, err := t.parseQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := t.list(q)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, res)
}

func (s *Server) handleRow(w http.ResponseWriter, r *http.Request) {
	t := s.tableAt(w, r)
	if t == nil {
		return
	}
	i, err := strconv.Atoi(r.PathValue("i"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("row %q: want a row number", r.PathValue("i")))
		return
	}
	row, err := t.row(i)
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	out := map[string]any{"table": t, "row": i, "data": row}
	// The pair's trajectories, where the folders served hold them.
	links := map[string]bool{}
	for _, k := range []string{"chosen_traj_id", "rejected_traj_id", "traj_id"} {
		var id string
		if json.Unmarshal(row[k], &id) == nil && id != "" {
			s.runs.mu.RLock()
			_, ok := s.runs.byID[id]
			s.runs.mu.RUnlock()
			links[id] = ok
		}
	}
	out["trajectories"] = links
	if t.Kind == TablePairs {
		out["diff"] = pairDiffOf(row)
	}
	writeJSON(w, out)
}

func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(s.reports) {
		http.NotFound(w, r)
		return
	}
	serveReportFile(w, r, s.reports[n].Path, r.PathValue("file"))
}
