package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// TableKind is what a dataset table holds, told from its columns.
type TableKind string

// Table kinds.
const (
	TablePairs        TableKind = "pairs"        // prompt, chosen, rejected
	TableKTO          TableKind = "kto"          // prompt, completion, label
	TableRewards      TableKind = "rewards"      // prompt, completion, reward, advantage
	TableTrajectories TableKind = "trajectories" // one row per trajectory
)

func (k TableKind) String() string { return string(k) }

// kindOf tells a table's kind from the keys of its first row.
func kindOf(keys map[string]json.RawMessage) (TableKind, bool) {
	has := func(ks ...string) bool {
		for _, k := range ks {
			if _, ok := keys[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("prompt", "chosen", "rejected"):
		return TablePairs, true
	case has("prompt", "completion", "label"):
		return TableKTO, true
	case has("prompt", "completion", "reward"):
		return TableRewards, true
	case has("traj_id", "messages"):
		return TableTrajectories, true
	}
	return "", false
}

// table is one JSONL dataset file, indexed by line.
type table struct {
	Name string    `json:"name"` // path relative to the folder given
	Path string    `json:"path"`
	Kind TableKind `json:"kind"`
	Rows int       `json:"rows"`

	offs []int64
	lens []int32
	// cells are the summary columns of every row, for filters, sort and
	// the list (tablequery.go); the message lists stay in the file.
	cells tableCells

	facetOnce sync.Once
	facetVals map[string][]string
	searchMu  sync.Mutex
	searches  map[string]map[int]bool
}

// maxTableFiles bounds how many JSONL files one dataset folder may hold.
const maxTableFiles = 256

// findTables indexes the JSONL dataset tables below dir. Files whose
// first row is no known table are skipped.
func findTables(dir string) ([]*table, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// A run folder's records are trajectories, not a table.
			if _, ok := isRunFolder(p); ok {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") {
			paths = append(paths, p)
			if len(paths) > maxTableFiles {
				return fmt.Errorf("%s: more than %d .jsonl files; give the dataset folder itself", dir, maxTableFiles)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []*table
	for _, p := range paths {
		t, err := indexTable(p)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		t.Name = filepath.ToSlash(filepath.Join(filepath.Base(dir), rel))
		out = append(out, t)
	}
	return out, nil
}

// indexTable records where each row of a JSONL file starts; nil when the
// file is empty or its first row is not a known table.
func indexTable(path string) (*table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &table{Path: path}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	line := 0
	for {
		l, err := r.ReadBytes('\n')
		if len(l) > 0 && l[len(l)-1] == '\n' {
			line++
			if len(bytes.TrimSpace(l)) > 0 {
				if t.Kind == "" {
					var keys map[string]json.RawMessage
					if jerr := json.Unmarshal(l, &keys); jerr != nil {
						return nil, fmt.Errorf("%s:%d: not a JSON object: %v", path, line, jerr)
					}
					k, ok := kindOf(keys)
					if !ok {
						return nil, nil
					}
					t.Kind = k
				}
				var rc rowCellsLine
				if jerr := json.Unmarshal(l, &rc); jerr != nil {
					return nil, fmt.Errorf("%s:%d: not a JSON object (a %s table row): %v", path, line, t.Kind, jerr)
				}
				t.offs = append(t.offs, off)
				t.lens = append(t.lens, int32(len(l)))
				t.cells.add(rc.cells())
			}
			off += int64(len(l))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if t.Kind == "" {
		return nil, nil // empty: nothing to show
	}
	t.Rows = len(t.offs)
	return t, nil
}

// row reads row i as a JSON object.
func (t *table) row(i int) (map[string]json.RawMessage, error) {
	if i < 0 || i >= len(t.offs) {
		return nil, fmt.Errorf("%s: row %d out of range (0–%d)", t.Name, i, len(t.offs)-1)
	}
	f, err := os.Open(t.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, t.lens[i])
	if _, err := f.ReadAt(b, t.offs[i]); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Path, err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: row %d: %w", t.Path, i, err)
	}
	return out, nil
}

// rowSummaryKeys are the columns shown in a table's list, filtered, sorted
// and kept in memory: the metadata, never the message lists.
var rowSummaryKeys = []string{
	"pair_id", "traj_id", "scenario_id", "domain", "split", "pair_type", "label", "checkpoint",
	"chosen_checkpoint", "rejected_checkpoint", "divergence_step", "chosen_reward", "rejected_reward",
	"reward_gap", "reward", "advantage", "group_id", "framework", "turn", "drift_types", "violation_kinds",
	"success", "drift", "status",
}

// rowCellsLine decodes only a row's summary columns (rowSummaryKeys): the
// message lists are skipped, not copied.
type rowCellsLine struct {
	PairId             json.RawMessage `json:"pair_id"`
	TrajId             json.RawMessage `json:"traj_id"`
	ScenarioId         json.RawMessage `json:"scenario_id"`
	Domain             json.RawMessage `json:"domain"`
	Split              json.RawMessage `json:"split"`
	PairType           json.RawMessage `json:"pair_type"`
	Label              json.RawMessage `json:"label"`
	Checkpoint         json.RawMessage `json:"checkpoint"`
	ChosenCheckpoint   json.RawMessage `json:"chosen_checkpoint"`
	RejectedCheckpoint json.RawMessage `json:"rejected_checkpoint"`
	DivergenceStep     json.RawMessage `json:"divergence_step"`
	ChosenReward       json.RawMessage `json:"chosen_reward"`
	RejectedReward     json.RawMessage `json:"rejected_reward"`
	RewardGap          json.RawMessage `json:"reward_gap"`
	Reward             json.RawMessage `json:"reward"`
	Advantage          json.RawMessage `json:"advantage"`
	GroupId            json.RawMessage `json:"group_id"`
	Framework          json.RawMessage `json:"framework"`
	Turn               json.RawMessage `json:"turn"`
	DriftTypes         json.RawMessage `json:"drift_types"`
	ViolationKinds     json.RawMessage `json:"violation_kinds"`
	Success            json.RawMessage `json:"success"`
	Drift              json.RawMessage `json:"drift"`
	Status             json.RawMessage `json:"status"`
}

func (r *rowCellsLine) cells() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(rowSummaryKeys))
	for _, kv := range []struct {
		k string
		v json.RawMessage
	}{
		{"pair_id", r.PairId},
		{"traj_id", r.TrajId},
		{"scenario_id", r.ScenarioId},
		{"domain", r.Domain},
		{"split", r.Split},
		{"pair_type", r.PairType},
		{"label", r.Label},
		{"checkpoint", r.Checkpoint},
		{"chosen_checkpoint", r.ChosenCheckpoint},
		{"rejected_checkpoint", r.RejectedCheckpoint},
		{"divergence_step", r.DivergenceStep},
		{"chosen_reward", r.ChosenReward},
		{"rejected_reward", r.RejectedReward},
		{"reward_gap", r.RewardGap},
		{"reward", r.Reward},
		{"advantage", r.Advantage},
		{"group_id", r.GroupId},
		{"framework", r.Framework},
		{"turn", r.Turn},
		{"drift_types", r.DriftTypes},
		{"violation_kinds", r.ViolationKinds},
		{"success", r.Success},
		{"drift", r.Drift},
		{"status", r.Status},
	} {
		if kv.v != nil {
			out[kv.k] = kv.v
		}
	}
	return out
}
