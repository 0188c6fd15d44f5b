package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/internal/racetest"
	"github.com/antidrift/antidrift/rollout/exposure"
	"github.com/antidrift/antidrift/rollout/scenario"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/suite"
	"github.com/antidrift/antidrift/rollout/suite/gating"
	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/stretchr/testify/require"
)

var exposureField = regexp.MustCompile(`,"exposure":\{[^}]*\}`)

// Records store their exposure at rollout; scoring reads it instead of
// replaying. A run scores the same with its stored exposures as with them
// taken out (replayed, as records written before antidrift stored them),
// and every stored exposure equals the replay of the record as scoring
// reads it (no text).
func TestStoredExposureScoresAsAReplay(t *testing.T) {
	t.Run("builtin", func(t *testing.T) {
		stored := filepath.Join(t.TempDir(), "stored")
		corpus.DemoRun(t, stored, "sim:dpo-1", 1)
		ss, err := suite.Load()
		require.NoError(t, err)
		checkStoredExposure(t, stored, ss)
	})
	// Injections, forged authorizations and broken provenance (the safe
	// replay differs from the stated one).
	t.Run("gating", func(t *testing.T) {
		racetest.WholeSuiteStatistics(t, "the builtin subtest (the same decoding goroutines and replay)")
		ss, ps := gating.Load(nil, scenario.Options{AllowUnsafeProvenance: true})
		require.Empty(t, ps)
		stored := filepath.Join(t.TempDir(), "stored")
		corpus.RunSuite(t, stored, "sim:base", 2, gating.Name, ss, true)
		checkStoredExposure(t, stored, ss)
		b, err := os.ReadFile(filepath.Join(stored, "trajectories", "part-0-of-1.jsonl"))
		require.NoError(t, err)
		for _, part := range []string{`"ran_calls":[`, `"induced_calls":[`, `"safe_unauthorized":true`} {
			require.Containsf(t, string(b), part, "the gating run exercises %s", part)
		}
	})
}

func checkStoredExposure(t *testing.T, stored string, ss []*scenario.Scenario) {
	byID := map[string]*scenario.Scenario{}
	for _, s := range ss {
		byID[s.ID] = s
	}

	// Every record holds one, equal to a replay of its lean reading.
	files, err := filepath.Glob(filepath.Join(stored, "trajectories", "*.jsonl"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		for _, line := range corpus.FileLines(t, f) {
			var full, lean trajectory.Record
			require.NoError(t, store.DecodeRecord(line, &full))
			require.NoError(t, store.DecodeRecordLean(line, &lean))
			require.Truef(t, full.Exposure.Current(), "%s: no current exposure stored", full.TrajID)
			info, err := exposure.NewInfo(byID[full.ScenarioID])
			require.NoError(t, err)
			x, err := exposure.Of(&lean, info)
			require.NoError(t, err)
			require.Equalf(t, *full.Exposure, x, "%s: the stored exposure differs from the replay", full.TrajID)
			n++
		}
	}
	require.Greater(t, n, 20)

	// The same run without them.
	replayed := filepath.Join(t.TempDir(), "replayed")
	require.NoError(t, os.CopyFS(replayed, os.DirFS(stored)))
	for _, f := range files {
		rel, _ := filepath.Rel(stored, f)
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out := exposureField.ReplaceAll(b, nil)
		require.Equal(t, 0, bytes.Count(out, []byte(`"exposure"`)))
		require.NoError(t, os.WriteFile(filepath.Join(replayed, rel), out, 0o644))
	}
	for _, by := range [][]Key{DefaultKeys, {ByDriftType, ByDomain}} {
		score := func(dir string) []byte {
			runs, err := ReadRuns([]string{dir})
			require.NoError(t, err)
			res, err := Score(runs, Options{By: by, Bootstrap: Bootstrap{Replicates: 20, Seed: 1}}, nil)
			require.NoError(t, err)
			b, err := json.Marshal(res)
			require.NoError(t, err)
			return b
		}
		require.Equal(t, string(score(replayed)), string(score(stored)), "by %v", by)
	}
}

// Score counts each run's records against its plan as it reads them: the
// same counts store.Count makes with a pass of its own, for a complete run
// and for one with a record removed and one outside the plan.
func TestScoreCountsPresenceAsCountDoes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS(basicDir)))
	check := func() store.Presence {
		t.Helper()
		runs, err := ReadRuns([]string{dir})
		require.NoError(t, err)
		res, err := Score(runs, Options{Bootstrap: Bootstrap{Replicates: 5, Seed: 1}}, nil)
		require.NoError(t, err)
		want, err := store.Count(dir)
		require.NoError(t, err)
		require.Equal(t, []store.Presence{want}, res.Presence)
		return want
	}
	require.False(t, check().Partial())
	files, err := filepath.Glob(filepath.Join(dir, "trajectories", "*.jsonl"))
	require.NoError(t, err)
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	lines := bytes.SplitAfter(bytes.TrimRight(b, "\n"), []byte("\n"))
	require.Greater(t, len(lines), 2)
	var last trajectory.Record
	require.NoError(t, store.DecodeRecord(lines[len(lines)-1], &last))
	// One record fewer, and a copy of it moved past the plan's rollouts.
	moved := bytes.Replace(lines[len(lines)-1], []byte(`"rollout":`+fmt.Sprint(last.Rollout)), []byte(`"rollout":99`), 1)
	moved = bytes.Replace(moved, []byte(last.TrajID), []byte("moved-"+last.TrajID), 1)
	out := append(bytes.Join(lines[:len(lines)-1], nil), '\n')
	require.NoError(t, os.WriteFile(files[0], out, 0o644))
	require.Equal(t, 1, check().Missing())
	require.NoError(t, os.WriteFile(files[0], append(out, append(bytes.TrimRight(moved, "\n"), '\n')...), 0o644))
	require.Equal(t, 1, check().Outside)
}
