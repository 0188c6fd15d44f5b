//go:build race

package pairs_test

// raceEnabled: under the race detector the simulated runs cover a
// stratified part of the suite (see simRun): races show on any number of
// scenarios, and the plain pass runs them all.
const raceEnabled = true
