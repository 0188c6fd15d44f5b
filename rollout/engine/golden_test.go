package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/engine"
	"github.com/antidrift/antidrift/rollout/policy/sim"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/records.golden.json")

// goldenEntry pins what the engine writes for one built-in scenario: the
// SHA-256 of its records (sorted by traj_id, timings zeroed, one JSON line
// each) under the scenario's content hash.
type goldenEntry struct {
	Scenario string `json:"scenario"`
	Records  string `json:"records"`
}

// TestRecordsGolden runs the built-in suite with the simulated policy and
// compares every record, byte for byte apart from timings, with the records
// the tree wrote when the golden file was made: a performance change to the
// engine, agent, environment or detectors must leave them unchanged. A
// scenario whose content changed since (another scenario edit) is skipped
// and named; rerun with -update to pin the new records.
func TestRecordsGolden(t *testing.T) {
	ss := builtin(t)
	base, err := sim.Lookup("sim:base")
	require.NoError(t, err)
	cfg := engine.Config{
		Scenarios: ss, Policy: sim.New(base, ss), PolicyName: "sim:base", Checkpoint: "sim:base",
		Rollouts: 3, Concurrency: 8, Seed: 7, Version: "golden",
	}
	dir := filepath.Join(t.TempDir(), "run")
	run := openRun(t, dir, cfg)
	_, err = engine.Run(context.Background(), cfg, run)
	require.NoError(t, err)

	lines := map[string][]string{} // scenario → "traj_id\tjson"
	it := store.Records(dir)
	defer it.Close()
	for it.Next() {
		r := *it.At()
		r.Timings = trajectory.Timings{}
		b, err := json.Marshal(&r)
		require.NoError(t, err)
		lines[r.ScenarioID] = append(lines[r.ScenarioID], r.TrajID+"\t"+string(b))
	}
	require.NoError(t, it.Err())

	got := map[string]goldenEntry{}
	for _, s := range ss {
		ls := lines[s.ID]
		require.Len(t, ls, cfg.Rollouts, "records of %s", s.ID)
		sort.Strings(ls)
		h := sha256.New()
		for _, l := range ls {
			h.Write([]byte(l))
			h.Write([]byte{'\n'})
		}
		got[s.ID] = goldenEntry{Scenario: scenario.Hash([]*scenario.Scenario{s}), Records: hex.EncodeToString(h.Sum(nil))}
	}
	path := filepath.Join("testdata", "records.golden.json")
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
		return
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create it")
	var want map[string]goldenEntry
	require.NoError(t, json.Unmarshal(b, &want))
	compared := 0
	for id, g := range got {
		w, ok := want[id]
		if !ok || w.Scenario != g.Scenario {
			t.Logf("%s: not in the golden file or changed since; not compared (rerun with -update)", id)
			continue
		}
		compared++
		if w.Records != g.Records {
			t.Errorf("%s: records differ from the golden file (sha256 %s, want %s): a performance change must not change them; if the simulated policy or the engine's behaviour changed on purpose, rerun with -update", id, g.Records, w.Records)
		}
	}
	require.Positive(t, compared, "no scenario of the golden file is unchanged: rerun with -update")
}
