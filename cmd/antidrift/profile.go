package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile to $ANTIDRIFT_CPUPROFILE while a command
// runs, for measuring where time goes on real run folders (docs/benchmarks.md).
// It returns the function that stops it.
func startProfile() func() {
	path := os.Getenv("ANTIDRIFT_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "antidrift: ANTIDRIFT_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "antidrift: ANTIDRIFT_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
