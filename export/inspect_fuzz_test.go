package export

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/stretchr/testify/require"
)

// inspectSeeds writes a small trajectories table and returns its Parquet
// and Arrow bytes.
func inspectSeeds(tb testing.TB) (parquetFile, arrowFile []byte) {
	tb.Helper()
	dir := tb.TempDir()
	recs := simRecords(tb)
	w, err := Create[dataset.TrajectoryRow](dir, "t", []string{FormatParquet, FormatArrow}, Options{RowGroupRows: 4, ToolkitVersion: "test"})
	require.NoError(tb, err)
	for i := range recs[:min(len(recs), 10)] {
		row := dataset.TrajectoryRowOf(&recs[i], "train")
		require.NoError(tb, w.Write(&row))
	}
	require.NoError(tb, w.Close())
	p, err := os.ReadFile(filepath.Join(dir, "t.parquet"))
	require.NoError(tb, err)
	a, err := os.ReadFile(filepath.Join(dir, "t.arrow"))
	require.NoError(tb, err)
	return p, a
}

// inspectBytes runs Inspect on data saved under the extension; it must end
// in output or a one-line error naming the file, never a panic.
func inspectBytes(t *testing.T, dir string, data []byte, ext string) {
	path := filepath.Join(dir, "f"+ext)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	err := Inspect(io.Discard, path, 3)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, path) || strings.Contains(msg, "\n") {
			t.Fatalf("error is not one line naming the file: %q", msg)
		}
	}
}

// TestInspectTruncatedFiles: truncated Arrow IPC and Parquet files end in
// an error naming the file, not a panic. (Byte-flipped files, which can
// make arrow-go allocate without bound, are run through the command's
// child process: cmd/antidrift TestInspectMutatedFiles.)
func TestInspectTruncatedFiles(t *testing.T) {
	pq, ar := inspectSeeds(t)
	rng := rand.New(rand.NewPCG(14, 7))
	dir := t.TempDir()
	for _, data := range [][]byte{pq, ar} {
		ext := ".parquet"
		if bytes.Equal(data, ar) {
			ext = ".arrow"
		}
		for i := 0; i < 30; i++ {
			inspectBytes(t, dir, data[:rng.IntN(len(data))], ext)
		}
	}
}

// FuzzInspect feeds arbitrary bytes to the Arrow and Parquet readers; the
// seed corpus (the two valid files and their truncations) runs in make test.
func FuzzInspect(f *testing.F) {
	pq, ar := inspectSeeds(f)
	f.Add(pq, true)
	f.Add(ar, false)
	f.Add(pq[:len(pq)/2], true)
	f.Add(ar[:len(ar)/2], false)
	// A fuzzing session (make fuzz) may hit arrow-go's unbounded
	// allocations on corrupt flatbuffer lengths; the command reads files in
	// a memory-bounded child process for that reason.
	f.Add([]byte("PAR1PAR1"), true)
	f.Add([]byte("ARROW1\x00\x00ARROW1"), false)
	f.Fuzz(func(t *testing.T, data []byte, parquet bool) {
		ext := ".arrow"
		if parquet {
			ext = ".parquet"
		}
		inspectBytes(t, t.TempDir(), data, ext)
	})
}
