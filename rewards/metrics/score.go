package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// RunInfo is a run folder's manifest, as scoring read it.
type RunInfo struct {
	Dir      string
	Manifest store.Manifest
}

// ReadRuns reads the manifests of run folders, refusing a folder given
// twice or two folders holding the same run shard (which would count its
// trajectories twice).
func ReadRuns(dirs []string) ([]RunInfo, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no run folder given")
	}
	var out []RunInfo
	seen := map[string]string{}
	for _, d := range dirs {
		m, err := store.ReadManifest(d)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not a run folder (no manifest.json)", d)
		}
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		for _, id := range []string{"dir\x00" + abs, "run\x00" + m.Run + "\x00" + m.Plan.Checkpoint + "\x00" + m.Plan.Framework + "\x00" + m.Plan.Shard} {
			if prev, dup := seen[id]; dup {
				return nil, fmt.Errorf("%s and %s hold the same run (%s, shard %s): give each run once", prev, d, m.Run, m.Plan.Shard)
			}
			seen[id] = d
		}
		out = append(out, RunInfo{Dir: d, Manifest: m})
	}
	return out, nil
}

// DefaultK is the k of pass^k unless chosen: the smallest number of
// rollouts per scenario among the runs' plans.
func DefaultK(runs []RunInfo) int {
	k := 0
	for _, r := range runs {
		if n := r.Manifest.Plan.Rollouts; n > 0 && (k == 0 || n < k) {
			k = n
		}
	}
	if k == 0 {
		k = 1
	}
	return k
}

// Score streams the records of the runs through an accumulator. The
// scenarios of each run are loaded from its manifest (or from
// scenariosOverride) and checked against its scenario hash. opts.K = 0
// means DefaultK.
func Score(runs []RunInfo, opts Options, scenariosOverride []string) (*Result, error) {
	if opts.K == 0 {
		opts.K = DefaultK(runs)
	}
	acc, err := New(opts)
	if err != nil {
		return nil, err
	}
	loaded := map[string][]*scenario.Scenario{}
	for _, r := range runs {
		key := r.Manifest.Plan.ScenarioSource + "\x00" + strings.Join(scenariosOverride, ",") + "\x00" + r.Manifest.Plan.ScenarioHash
		ss, ok := loaded[key]
		if !ok {
			if ss, err = LoadRunScenarios(r.Dir, r.Manifest, scenariosOverride, opts.Catalogue); err != nil {
				return nil, err
			}
			loaded[key] = ss
		} else if err := checkIDs(r, ss); err != nil {
			return nil, err
		}
		if err := acc.AddScenarios(ss); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Dir, err)
		}
	}
	presence := make([]store.Presence, len(runs))
	for i, r := range runs {
		c := store.NewPresenceCounter(r.Dir, r.Manifest)
		if err := addRun(acc, r.Dir, c, opts.Relabel); err != nil {
			return nil, err
		}
		presence[i] = c.Presence()
	}
	if acc.Records() == 0 {
		dirs := make([]string, len(runs))
		for i, r := range runs {
			dirs[i] = r.Dir
		}
		return nil, fmt.Errorf("no trajectories in %s", strings.Join(dirs, ", "))
	}
	res := acc.Result()
	res.Presence = presence
	return res, nil
}

// checkIDs makes sure a run whose scenarios were loaded for another run with
// the same source and hash lists the same ids (a hash covers the ids).
func checkIDs(r RunInfo, ss []*scenario.Scenario) error {
	if len(ss) != len(r.Manifest.Plan.ScenarioIDs) {
		return fmt.Errorf("%s: plan.scenario_ids: %d ids for scenario hash %.12s…, another run has %d", filepath.Join(r.Dir, "manifest.json"), len(r.Manifest.Plan.ScenarioIDs), r.Manifest.Plan.ScenarioHash, len(ss))
	}
	return nil
}

func addRun(acc *Accumulator, dir string, presence *store.PresenceCounter, relabel func(*trajectory.Record) (bool, error)) error {
	// Scoring needs labels, matches and the stored exposure: the iterator
	// scans for those. A record without an exposure this build can read
	// comes with its steps and tool calls instead; it is replayed on the
	// decoding goroutines.
	it := store.Records(dir).Scan(acc.replay)
	defer it.Close()
	for it.Next() {
		file, line := it.Pos()
		presence.Add(file, line, it.At().ScenarioID, it.At().Rollout)
		if relabel != nil {
			keep, err := relabel(it.At())
			if err != nil {
				file, line := it.Pos()
				return fmt.Errorf("%s:%d: %w", file, line, err)
			}
			if !keep {
				continue
			}
		}
		if err := acc.Add(it.At()); err != nil {
			file, line := it.Pos()
			return fmt.Errorf("%s:%d: %w", file, line, err)
		}
	}
	return it.Err()
}
