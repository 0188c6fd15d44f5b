package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Rows are built on every core and written in record order: the files of
// an export are the same, byte for byte, for any number of cores, for the
// record-ordered (trajectories) and the shuffled (kto) tables alike.
func TestExportRunsSameFilesForAnyCoreCount(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for _, p := range []string{"base", "dpo-1"} {
		dirs = append(dirs, simRun(t, filepath.Join(root, p), p, 3, 1, 8))
	}
	split := func(id string) string { return dataset.SplitOf(id, dataset.Ratios{0.8, 0.1, 0.1}, 7) }
	reward := func(rec *trajectory.Record) (float64, error) {
		if rec.Clean() {
			return 1, nil
		}
		return -0.5, nil
	}
	export := func(table string, procs int) map[string][]byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		out := filepath.Join(root, "out", table, strings.Repeat("p", procs))
		_, err := ExportRuns(RunsConfig{Dirs: dirs, Table: table, Out: out, Formats: AllFormats, Split: split, Reward: reward,
			ShuffleSeed: 3, Options: Options{RowGroupRows: 17, SplitFiles: true, ToolkitVersion: "test"}})
		require.NoError(t, err)
		files := map[string][]byte{}
		require.NoError(t, filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(out, p)
			files[rel] = bytes.ReplaceAll(b, []byte(out), []byte("OUT"))
			return err
		}))
		return files
	}
	for _, table := range []string{TableTrajectories, TableKTO} {
		want := export(table, 1)
		require.Contains(t, want, filepath.Join("data", table+"-train.parquet"))
		for _, procs := range []int{2, 4} {
			got := export(table, procs)
			require.Equal(t, len(want), len(got), "%s with %d cores: files", table, procs)
			for name, b := range want {
				require.True(t, bytes.Equal(b, got[name]), "%s with %d cores: %s differs from one core's", table, procs, name)
			}
		}
	}
}

// TestKTOPerTurnRowsScoreTheWholeRecord: a per-turn KTO row's reward is
// its record's, scored whole (not cut after the row's turn), each record
// is counted once however many rows it gives (a record with no kept turn
// too, as skipped), and a record whose scoring fails fails the export
// with that error.
func TestKTOPerTurnRowsScoreTheWholeRecord(t *testing.T) {
	root := t.TempDir()
	dirs := []string{simRun(t, filepath.Join(root, "base"), "base", 3, 1, 8)}
	recs, err := dataset.OpenRecords(dirs...)
	require.NoError(t, err)
	messages := map[string]int{}
	var promptOnly trajectory.Record
	require.NoError(t, recs.Each(func(r *trajectory.Record) error {
		messages[r.TrajID] = len(r.Messages)
		if promptOnly.TrajID == "" {
			promptOnly = *r
		}
		return nil
	}))
	require.NoError(t, recs.Close())
	// a record whose conversation ends at its prompt: no kept turn
	promptOnly.TrajID += "-prompt-only"
	promptOnly.Messages = promptOnly.Messages[:2]
	promptOnly.Steps = nil
	extra := filepath.Join(root, "prompt-only")
	require.NoError(t, os.MkdirAll(filepath.Join(extra, "trajectories"), 0o755))
	require.NoError(t, store.WriteManifest(extra, store.Manifest{Version: "test", Run: "run-p"}))
	line, err := json.Marshal(&promptOnly)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(extra, "trajectories", "part-0-of-1.jsonl"), append(line, '\n'), 0o644))
	dirs = append(dirs, extra)
	var failing string
	for id := range messages {
		failing = max(failing, id)
	}
	reward := func(rec *trajectory.Record) (float64, error) {
		if rec.TrajID == failing && strings.HasSuffix(root, "fail") {
			return 0, errors.New("no weight for this one")
		}
		return float64(len(rec.Messages)), nil // the whole record's length
	}
	out := filepath.Join(root, "out")
	res, err := ExportRuns(RunsConfig{Dirs: dirs, Table: TableKTO, Out: out, Formats: []string{FormatJSONL}, Reward: reward,
		ShuffleSeed: 3, Render: dataset.RenderOptions{Completion: dataset.CompletionTurn}, Options: Options{ToolkitVersion: "test"}})
	require.NoError(t, err)
	require.Equal(t, len(messages)+1, res.Records, "each record counted once")
	require.Equal(t, 1, res.Skipped, "the record with no kept turn")
	rows := 0
	b, err := os.ReadFile(filepath.Join(out, "kto.jsonl"))
	require.NoError(t, err)
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var row dataset.KTORow
		require.NoError(t, json.Unmarshal(line, &row))
		require.Equal(t, float64(messages[row.TrajID]), row.Reward, row.TrajID)
		rows++
	}
	require.Greater(t, rows, len(messages), "more rows than records: one per kept turn")
	root += "fail"
	_, err = ExportRuns(RunsConfig{Dirs: dirs, Table: TableKTO, Out: filepath.Join(t.TempDir(), "out"), Formats: []string{FormatJSONL}, Reward: reward,
		ShuffleSeed: 3, Render: dataset.RenderOptions{Completion: dataset.CompletionTurn}, Options: Options{ToolkitVersion: "test"}})
	require.ErrorContains(t, err, "no weight for this one")
}
