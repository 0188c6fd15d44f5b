package export

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// A split with more row groups than ShardRowGroups is cut into shards of
// at most that many, each a whole Parquet file holding its rows in order;
// a split that ends on a shard's last row group gets no empty shard after
// it, and the splits within the bound keep their one file.
func TestShardsBoundedByRowGroups(t *testing.T) {
	for _, tc := range []struct {
		rows, shards int
	}{
		{50, 5}, // 13 row groups of 4 rows: 3 + 3 + 3 + 3 + 1
		{48, 4}, // 12 row groups: the last shard ends on a bound
		{12, 1}, // 3 row groups: one file
	} {
		t.Run(fmt.Sprint(tc.rows), func(t *testing.T) {
			dir := t.TempDir()
			rows := rewardRows(tc.rows) // all in train
			opts := Options{RowGroupRows: 4, ShardRowGroups: 3, SplitFiles: true, ToolkitVersion: "test"}
			w, err := Create[dataset.RewardRow](dir, "rewards", []string{FormatParquet}, opts)
			require.NoError(t, err)
			for i := range rows {
				require.NoError(t, w.Write(&rows[i]))
			}
			require.NoError(t, w.Close())

			var train []string
			for _, f := range w.Files() {
				rel, err := filepath.Rel(dir, f)
				require.NoError(t, err)
				if filepath.Base(rel) == "rewards-validation.parquet" || filepath.Base(rel) == "rewards-test.parquet" {
					continue
				}
				train = append(train, rel)
			}
			require.Len(t, train, tc.shards)
			from := 0
			for i, rel := range train {
				want := filepath.ToSlash(shardFile("data/rewards-train.parquet", i, tc.shards))
				assert.Equal(t, want, filepath.ToSlash(rel))
				rdr, err := file.OpenParquetFile(filepath.Join(dir, rel), false)
				require.NoError(t, err)
				groups, n := rdr.NumRowGroups(), int(rdr.NumRows())
				require.NoError(t, rdr.Close())
				assert.LessOrEqual(t, groups, 3, rel)
				assert.Positive(t, n, "%s: no empty shard", rel)
				checkParquet(t, filepath.Join(dir, rel), rows[from:from+n], w.opts)
				from += n
			}
			assert.Equal(t, len(rows), from, "every row in one shard, in order")
		})
	}
}
