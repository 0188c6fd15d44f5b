package scenario

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/provisions"
	"github.com/stretchr/testify/require"
)

func shaOf(data []byte) [sha256.Size]byte { return sha256.Sum256(data) }

func forgetChecked(t testing.TB) {
	t.Helper()
	checkedClean.mu.Lock()
	checkedClean.files = nil
	checkedClean.mu.Unlock()
}

// scenarioFiles are the files of the suites in this repository and the
// format's valid examples.
func scenarioFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, dir := range []string{"../suite/scenarios", "../suite/gating/scenarios", "testdata/valid"} {
		var paths []string
		for _, pattern := range []string{"*.json", filepath.Join("*", "*.json")} { // the built-in suite: a folder a domain
			more, err := filepath.Glob(filepath.Join(dir, pattern))
			require.NoError(t, err)
			paths = append(paths, more...)
		}
		require.NotEmpty(t, paths, dir)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			files[p] = b
		}
	}
	return files
}

// TestRememberedParseEqualsChecked: a file parsed again after a clean
// check gives the scenario (and problems) the checked parse gave, under
// both provenance options; the checks change nothing of what decoding
// gives, which is what lets a remembered parse skip them.
func TestRememberedParseEqualsChecked(t *testing.T) {
	files := scenarioFiles(t)
	for _, opts := range []Options{{}, {AllowUnsafeProvenance: true}} {
		forgetChecked(t)
		remembered := 0
		for name, data := range files {
			first, fps := ParseWith(name, data, nil, opts)
			sum := shaOf(data)
			if checkedBefore(sum) {
				remembered++
			}
			again, aps := ParseWith(name, data, nil, opts)
			require.True(t, reflect.DeepEqual(first, again), "%s: the remembered parse differs from the checked one", name)
			require.Equal(t, fps, aps, name)
			if first == nil {
				continue
			}
			var s Scenario
			forgetChecked(t)
			decoded, ps := ParseWith(name, data, nil, opts) // checked again
			require.Empty(t, ps)
			require.NoError(t, json.Unmarshal(data, &s))
			s.File, s.UnsafeProvenance = name, decoded.UnsafeProvenance
			require.True(t, reflect.DeepEqual(&s, decoded), "%s: the checks changed the decoded scenario", name)
		}
		require.Positive(t, remembered)
	}
}

// TestProblemsAreNotRemembered: a file with problems is checked, and its
// problems reported, on every parse; so is a file checked against another
// catalogue than the built-in one.
func TestProblemsAreNotRemembered(t *testing.T) {
	forgetChecked(t)
	bad := filepath.Join("testdata", "invalid")
	paths, err := filepath.Glob(filepath.Join(bad, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		_, first := ParseWith(p, data, nil, Options{})
		require.NotEmpty(t, first, p)
		require.False(t, checkedBefore(shaOf(data)), p)
		_, again := ParseWith(p, data, nil, Options{})
		require.Equal(t, first, again, p)
	}

	data, err := os.ReadFile(filepath.Join("testdata", "valid", "followup.json"))
	require.NoError(t, err)
	cat, err := provisions.LoadFile("../provisions/provisions.json")
	require.NoError(t, err)
	_, ps := ParseWith("followup.json", data, cat, Options{})
	require.Empty(t, ps)
	require.False(t, checkedBefore(shaOf(data)), "a loaded catalogue's outcome is not remembered")
}

// TestRememberedFilesAreBounded: past maxCheckedClean files, parses check
// every time and still succeed.
func TestRememberedFilesAreBounded(t *testing.T) {
	forgetChecked(t)
	defer func(n int) { maxCheckedClean = n }(maxCheckedClean)
	maxCheckedClean = 2
	files := scenarioFiles(t)
	n := 0
	for name, data := range files {
		if !strings.Contains(name, "suite/scenarios") {
			continue
		}
		s, ps := ParseWith(name, data, nil, Options{})
		require.Empty(t, ps, name)
		require.NotNil(t, s)
		if n++; n == 5 {
			break
		}
	}
	checkedClean.mu.Lock()
	held := len(checkedClean.files)
	checkedClean.mu.Unlock()
	require.Equal(t, 2, held)
}

// BenchmarkLoadBuiltinSuite loads the built-in suite's files (as
// suite.Load does) checked, the first load in a process, and remembered,
// every load after it (make bench; docs/benchmarks.md).
func BenchmarkLoadBuiltinSuite(b *testing.B) {
	fsys := os.DirFS("../suite")
	load := func(b *testing.B) {
		ss, ps := LoadFS(fsys, "scenarios", "builtin:", provisions.Builtin())
		if len(ps) > 0 || len(ss) == 0 {
			b.Fatalf("%d scenarios, problems %v", len(ss), ps)
		}
	}
	b.Run("checked", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			forgetChecked(b)
			b.StartTimer()
			load(b)
		}
	})
	b.Run("remembered", func(b *testing.B) {
		load(b)
		b.ReportAllocs()
		for b.Loop() {
			load(b)
		}
	})
}
