//go:build !race

package queue

const raceEnabled = false

// perDomainInTests: the plain pass runs the queue tests on five scenarios
// of each domain (35).
const perDomainInTests = 5
