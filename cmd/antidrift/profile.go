package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile to $ANTIDRIFT_CPUPROFILE while a command
// runs, and an allocation profile to $ANTIDRIFT_MEMPROFILE when it ends, for
// measuring where time goes on real run folders (docs/benchmarks.md). It
// returns the function that stops them.
func startProfile() func() {
	stopCPU := startCPUProfile()
	return func() {
		stopCPU()
		if path := os.Getenv("ANTIDRIFT_MEMPROFILE"); path != "" {
			if err := writeHeapProfile(path); err != nil {
				fmt.Fprintln(os.Stderr, "antidrift: ANTIDRIFT_MEMPROFILE:", err)
			}
		}
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func startCPUProfile() func() {
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
