package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/secret"
)

// hostileCase is one entry of testdata/hostile/cases.json.
type hostileCase struct {
	Name  string   `json:"name"`
	Args  []string `json:"args"`
	Want  string   `json:"want"` // ok | error
	Names string   `json:"names"`
	Note  string   `json:"note"`
	// Mutates: the case writes its input on purpose (a resume rewrites
	// the manifest's settings); "nothing lost" is then checked on records.
	Mutates bool `json:"mutates"`
}

// TestHostileCorpus runs every case of testdata/hostile against the real
// binary, each on a fresh copy of the corpus: the outcome is the expected
// one (exit 0, or a non-zero exit with one error line naming the input),
// there is no panic and no hang (execBin bounds the time), and no input
// byte changes unless the case is a repair. Inputs git cannot hold (an
// empty folder, a FIFO, a device) are added to the copy here.
func TestHostileCorpus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "hostile", "cases.json"))
	require.NoError(t, err)
	var corpus struct {
		Cases []hostileCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &corpus))
	extra := []hostileCase{
		{Name: "scenario empty folder", Args: []string{"scenarios", "validate", "{in}/scenarios/empty-folder"}, Want: "error"},
		{Name: "rollout on an empty folder", Args: []string{"rollout", "--policy", "sim:base", "--scenarios", "{in}/scenarios/empty-folder", "--out", "{out}"}, Want: "error", Names: "{in}/scenarios/empty-folder"},
		{Name: "scenario fifo", Args: []string{"scenarios", "validate", "{in}/scenarios/pipe.json"}, Want: "error"},
		{Name: "scenario /dev/zero", Args: []string{"scenarios", "validate", "/dev/zero"}, Want: "error", Names: "/dev/zero"},
		{Name: "inspect fifo", Args: []string{"inspect", "{in}/files/pipe.arrow"}, Want: "error"},
	}
	for _, tc := range append(corpus.Cases, extra...) {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel() // each case is a process of its own, in folders of its own
			root := t.TempDir()
			in := filepath.Join(root, "in")
			require.NoError(t, os.CopyFS(in, os.DirFS(filepath.Join("testdata", "hostile"))))
			require.NoError(t, os.Mkdir(filepath.Join(in, "scenarios", "empty-folder"), 0o755))
			require.NoError(t, syscall.Mkfifo(filepath.Join(in, "scenarios", "pipe.json"), 0o644))
			require.NoError(t, syscall.Mkfifo(filepath.Join(in, "files", "pipe.arrow"), 0o644))
			out := filepath.Join(root, "out")
			expand := func(s string) string {
				return strings.ReplaceAll(strings.ReplaceAll(s, "{in}", in), "{out}", out)
			}
			args := make([]string, len(tc.Args))
			for i, a := range tc.Args {
				args[i] = expand(a)
			}
			names := expand(tc.Names)
			if names == "" {
				for _, a := range args {
					if strings.HasPrefix(a, in) || strings.HasPrefix(a, "/dev/") {
						names = a
						break
					}
				}
			}
			before := snapshotFiles(t, in)
			code, stdout, stderr := execBin(t, nil, args...)
			for _, a := range args {
				if secret.LooksLikeKey(a) {
					assert.NotContains(t, stdout+stderr, a, "a key given on the command line is never echoed")
				}
			}
			assert.NotContains(t, stderr, "panic:", "no panic")
			assert.NotContains(t, stderr, "goroutine ", "no stack trace")
			switch tc.Want {
			case "ok":
				assert.Equal(t, 0, code, stderr)
			case "error":
				assert.NotEqual(t, 0, code, "want a non-zero exit")
				lines := errorLines(stderr)
				assert.Equal(t, 1, strings.Count(lines, "\n"), "one error line: %q", stderr)
				if names != "" {
					assert.Contains(t, lines, names, "the error names the input")
				}
			default:
				t.Fatalf("want %q", tc.Want)
			}
			after := snapshotFiles(t, in)
			switch {
			case args[0] == "repair":
			case tc.Mutates:
				for p, b := range before {
					if strings.Contains(p, string(filepath.Separator)+"trajectories"+string(filepath.Separator)) {
						assert.True(t, strings.HasPrefix(after[p], b), "%s: records kept", p)
					}
				}
			default: // files may be added (judge's labels), none changed
				for p, b := range before {
					assert.Equal(t, b, after[p], "%s changed", p)
				}
			}
		})
	}
}

// snapshotFiles maps every regular file under dir to its bytes.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

// TestInspectMutatedFiles: 60 byte-mutated Arrow IPC and 60 Parquet files
// (the hostile tester's count) through the real command: each ends in
// output or a one-line error naming the file, never a crash or a hang.
func TestInspectMutatedFiles(t *testing.T) {
	t.Parallel() // processes of their own on copies of their own
	dir := t.TempDir()
	for _, name := range []string{"good.arrow", "good.parquet"} {
		orig, err := os.ReadFile(filepath.Join("testdata", "hostile", "files", name))
		require.NoError(t, err)
		seed := uint64(len(name))
		for i := 0; i < 60; i++ {
			m := append([]byte(nil), orig...)
			for k := 0; k < 1+i%8; k++ {
				seed = seed*6364136223846793005 + 1442695040888963407
				m[int(seed>>33)%len(m)] ^= byte(1 + (seed>>20)%255)
			}
			path := filepath.Join(dir, fmt.Sprintf("m%02d-%s", i, name))
			require.NoError(t, os.WriteFile(path, m, 0o644))
			code, _, stderr := execBin(t, nil, "inspect", path)
			assert.NotContains(t, stderr, "panic:", path)
			assert.NotContains(t, stderr, "goroutine ", path)
			if code != 0 {
				lines := errorLines(stderr)
				assert.Equal(t, 1, strings.Count(lines, "\n"), "one error line: %q", stderr)
				assert.Contains(t, lines, path)
			}
		}
	}
}
