package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedDemo is one demo output (the simulated checkpoints, two rollouts
// per scenario: run folders, dataset tables and the report), made once per
// test binary and read by the tests that need a demo: the demo test checks
// it, the viewer tests serve it, the docs test runs the documented commands
// on a copy. A demo costs tens of seconds; three of them were most of this
// package's time. Tests must not write into it: copy it (copyDemo) first.
var shared struct {
	once    sync.Once
	root    string
	dir     string
	summary string
	err     error
}

// sharedDemo returns the shared demo's folder and the summary the demo
// printed.
func sharedDemo(t *testing.T) (dir, summary string) {
	t.Helper()
	shared.once.Do(func() {
		shared.root, shared.err = os.MkdirTemp("", "antidrift-demo-")
		if shared.err != nil {
			return
		}
		shared.dir = filepath.Join(shared.root, "demo")
		var b strings.Builder
		// As a user types it: run manifests record the command line.
		saved := os.Args
		os.Args = []string{"antidrift", "demo", "--out", shared.dir, "--rollouts", "2"}
		shared.err = runDemo(&b, shared.dir, 2, 0)
		os.Args = saved
		shared.summary = b.String()
	})
	require.NoError(t, shared.err)
	return shared.dir, shared.summary
}

// copyDemo copies the shared demo to dst (which must not exist), for a test
// that writes into it.
func copyDemo(t *testing.T, dst string) {
	t.Helper()
	dir, _ := sharedDemo(t)
	require.NoError(t, os.CopyFS(dst, os.DirFS(dir)))
}

// removeSharedDemo removes the shared demo after the tests (TestMain).
func removeSharedDemo() {
	if shared.root != "" {
		os.RemoveAll(shared.root)
	}
}
