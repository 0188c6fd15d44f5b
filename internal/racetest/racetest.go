// Package racetest keeps the race pass of make test small: tests with no
// goroutines of their own skip under the race detector, and whole-suite
// fixtures shrink to a stratified part when Enabled; the plain pass runs
// everything. It imports nothing of antidrift, so any package's tests
// (internal ones included) can use it. It is for tests only.
package racetest

import "testing"

// SingleThreaded skips a single-threaded test under the race detector: it
// has no goroutines for the detector to watch, and instrumented it costs
// minutes of the race pass. The plain pass (`go test ./...` in make test)
// runs it.
func SingleThreaded(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("single-threaded: run by the plain pass, not the race pass")
	}
}

// WholeSuiteStatistics skips, under the race detector, a test whose
// assertions are statistics over the whole suite (rates that a stratified
// part would not reproduce): the concurrency it passes through is raced by
// smaller tests of the same code (named in why). The plain pass runs it.
func WholeSuiteStatistics(t testing.TB, why string) {
	t.Helper()
	if Enabled {
		t.Skip("whole-suite statistics, run by the plain pass; raced by " + why)
	}
}
