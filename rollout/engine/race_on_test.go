//go:build race

package engine_test

// raceEnabled: under the race detector the whole-suite tests run a
// stratified part of the suite (see builtin): races show on any number of
// scenarios, and the plain pass runs them all.
const raceEnabled = true
