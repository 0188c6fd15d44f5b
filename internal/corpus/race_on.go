//go:build race

package corpus

// RaceEnabled says the test binary was built with the race detector.
const RaceEnabled = true
