package corpus

import "testing"

// SingleThreaded skips a single-threaded test under the race detector: it
// has no goroutines for the detector to watch, and instrumented it costs
// minutes of the race pass. The plain pass (`go test ./...` in make test)
// runs it.
func SingleThreaded(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("single-threaded: run by the plain pass, not the race pass")
	}
}
