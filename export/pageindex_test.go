package export

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// checkPageIndex reads the column index (page index) of every column chunk
// of a Parquet file and asserts that its bounds are valid: one entry per
// data page, min <= max, and every value of the page within [min, max];
// all-null pages are marked so. It returns the number of non-null pages of
// message columns checked.
func checkPageIndex(t *testing.T, path string) (messagePages int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	pf, err := parquet.OpenFile(f, st.Size())
	require.NoError(t, err, path)
	leaves := pf.Schema().Columns()
	for gi, rg := range pf.RowGroups() {
		for ci, cc := range rg.ColumnChunks() {
			name := leaves[ci][0]
			where := func(p int) string { return path + ": row group " + itoa(gi) + ", column " + name + ", page " + itoa(p) }
			ix, err := cc.ColumnIndex()
			require.NoError(t, err, where(-1))
			typ := cc.Type()
			pages := cc.Pages()
			p := 0
			for ; ; p++ {
				pg, err := pages.ReadPage()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err, where(p))
				require.Less(t, p, ix.NumPages(), "%s: more data pages than column-index entries", where(p))
				pmin, pmax, ok := pg.Bounds()
				if !ok { // only nulls
					assert.True(t, ix.NullPage(p), "%s: all-null page not marked null in the column index", where(p))
					parquet.Release(pg)
					continue
				}
				require.False(t, ix.NullPage(p), "%s: page with values marked null", where(p))
				imin, imax := ix.MinValue(p), ix.MaxValue(p)
				assert.LessOrEqual(t, typ.Compare(imin, imax), 0, "%s: column index min > max", where(p))
				assert.LessOrEqual(t, typ.Compare(imin, pmin), 0, "%s: column index min %q above the page's least value %q", where(p), imin, pmin)
				assert.GreaterOrEqual(t, typ.Compare(imax, pmax), 0, "%s: column index max %q below the page's greatest value %q", where(p), imax, pmax)
				if name == "prompt" || name == "chosen" || name == "rejected" || name == "completion" || name == "messages" || name == "tools" {
					messagePages++
				}
				parquet.Release(pg)
			}
			require.NoError(t, pages.Close())
			assert.Equal(t, ix.NumPages(), p, "%s: column index entries != data pages", where(p))
		}
	}
	return messagePages
}

func itoa(i int) string {
	if i < 0 {
		return "-"
	}
	return strconv.Itoa(i)
}

// Every column of every table has valid page-index bounds, message columns
// included (their page-header statistics are skipped, their column-index
// bounds kept, truncated by parquet-go).
func TestPageIndexBoundsValid(t *testing.T) {
	dir := t.TempDir()
	recs := simRecords(t)
	var traj []dataset.TrajectoryRow
	var kto []dataset.KTORow
	for i := range recs {
		traj = append(traj, dataset.TrajectoryRowOf(&recs[i], "train"))
		kto = append(kto, dataset.KTORowOf(&recs[i], "train", 0.5))
	}
	opts := Options{RowGroupRows: 7, Margin: true}
	writeAll(t, dir, "dpo", dpoRows(30), opts)
	writeAll(t, dir, "rewards", rewardRows(30), opts)
	writeAll(t, dir, "trajectories", traj, opts)
	writeAll(t, dir, "kto", kto, opts)
	for _, n := range []string{"dpo", "rewards", "trajectories", "kto"} {
		got := checkPageIndex(t, filepath.Join(dir, n+".parquet"))
		assert.Positive(t, got, "%s: no message-column page was checked", n)
	}
}
