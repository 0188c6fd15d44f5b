//go:build !race

package racetest

// Enabled says the test binary was built with the race detector.
const Enabled = false
