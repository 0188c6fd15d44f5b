//go:build !race

package pairs_test

const raceEnabled = false
