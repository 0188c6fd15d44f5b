package dataset_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/antidrift/antidrift/internal/corpus"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// walk passes n records with traj_ids 0..n-1 through one reused Record,
// failing at record failAt (when ≥ 0), as a store walk does.
func walk(n, failAt int) func(fn func(*trajectory.Record) error) error {
	return func(fn func(*trajectory.Record) error) error {
		var rec trajectory.Record
		for i := range n {
			if i == failAt {
				return fmt.Errorf("record %d did not load", i)
			}
			rec = trajectory.Record{TrajID: strconv.Itoa(i), Messages: []trajectory.Message{{Role: "user", Content: strconv.Itoa(i)}}}
			if err := fn(&rec); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestMapOrdered(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d cores", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for _, tc := range []struct {
				name                                string
				n, loadFail, buildFail, consumeFail int
				want                                string // the error
				consumed                            int
			}{
				{name: "all", n: 1000, loadFail: -1, buildFail: -1, consumeFail: -1, consumed: 1000},
				{name: "none", n: 0, loadFail: -1, buildFail: -1, consumeFail: -1},
				{name: "build fails", n: 1000, loadFail: -1, buildFail: 517, consumeFail: -1, want: "build 517", consumed: 517},
				{name: "consume fails", n: 1000, loadFail: -1, buildFail: -1, consumeFail: 300, want: "consume 300", consumed: 300},
				{name: "load fails", n: 1000, loadFail: 700, buildFail: -1, consumeFail: -1, want: "record 700 did not load", consumed: 700},
				{name: "consume fails before a load error", n: 1000, loadFail: 700, buildFail: -1, consumeFail: 650, want: "consume 650", consumed: 650},
				{name: "a load error before a build error", n: 1000, loadFail: 40, buildFail: 41, consumeFail: -1, want: "record 40 did not load", consumed: 40},
				{name: "build fails before consume would", n: 1000, loadFail: -1, buildFail: 5, consumeFail: 6, want: "build 5", consumed: 5},
			} {
				t.Run(tc.name, func(t *testing.T) {
					var got []string
					build := func(rec *trajectory.Record) (string, error) {
						if rec.TrajID == strconv.Itoa(tc.buildFail) {
							return "", errors.New("build " + rec.TrajID)
						}
						return rec.TrajID + ":" + rec.Messages[0].Content, nil
					}
					err := dataset.MapOrdered(walk(tc.n, tc.loadFail), build, func(s string) error {
						if s == fmt.Sprintf("%d:%d", tc.consumeFail, tc.consumeFail) {
							return errors.New("consume " + strconv.Itoa(tc.consumeFail))
						}
						got = append(got, s)
						return nil
					})
					if tc.want == "" {
						require.NoError(t, err)
					} else {
						require.EqualError(t, err, tc.want)
					}
					require.Len(t, got, tc.consumed)
					for i, s := range got {
						require.Equal(t, fmt.Sprintf("%d:%d", i, i), s, "results in record order")
					}
				})
			}
		})
	}
}

// MapOrdered keeps copies of the records a store walk passes, after the
// walk has reused their structs: the walk must not reuse memory a record
// points to. Records.Each (store.Index.EachAt) decodes each record into a
// zeroed Record; a change to that (decoding into reused buffers) fails here.
func TestMapOrderedKeepsRecords(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the smallest windows: the most reuse
	dir := filepath.Join(t.TempDir(), "run")
	corpus.DemoRun(t, dir, "sim:base", 2)
	r, err := dataset.OpenRecords(dir)
	require.NoError(t, err)
	defer r.Close()
	require.Greater(t, r.Len(), 64, "more records than one window")
	var serial [][]byte
	require.NoError(t, r.Each(func(rec *trajectory.Record) error {
		b, err := json.Marshal(rec)
		serial = append(serial, b)
		return err
	}))
	var kept []trajectory.Record
	require.NoError(t, dataset.MapOrdered(r.Each, func(rec *trajectory.Record) (*trajectory.Record, error) {
		return rec, nil // the batch's copy, kept past the walk's reuse
	}, func(rec *trajectory.Record) error {
		kept = append(kept, *rec)
		return nil
	}))
	require.Len(t, kept, len(serial))
	for i := range kept {
		b, err := json.Marshal(&kept[i])
		require.NoError(t, err)
		assert.JSONEq(t, string(serial[i]), string(b), "record %d", i)
	}
}
