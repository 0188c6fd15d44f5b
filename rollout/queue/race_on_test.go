//go:build race

package queue

// raceEnabled: under the race detector the failure tests (subprocesses,
// kills, restarts) are skipped; `go test ./...` in make test runs them, and
// the race pass keeps the in-process tests of the same code.
const raceEnabled = true

// perDomainInTests: the race pass runs the in-process tests on two
// scenarios of each domain (14): the embedded NATS server and the workers
// race or not on any number of items, and instrumented they cost minutes.
const perDomainInTests = 2
