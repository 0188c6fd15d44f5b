//go:build race

package queue

// raceEnabled: under the race detector the failure tests (subprocesses,
// kills, restarts) are skipped; `go test ./...` in make test runs them, and
// the race pass keeps the in-process tests of the same code.
const raceEnabled = true
