package main

import (
	"os"
	"runtime/debug"

	"github.com/antidrift/antidrift/export"
)

// streamingGCPercent is the GOGC of the commands that stream a run folder
// (score, pareto, pairs, rewards, export). Their live heap is small and
// bounded: the records in flight, or one scenario's for pairs. With Go's
// default of 100 the collector runs each time the heap doubles, every few
// MiB of records, and took about a sixth of score's CPU on a
// 43,000-trajectory run; at 400 it runs a quarter as often, and a soft
// memory limit (export.LimitMemory) keeps the peak bounded all the same.
const streamingGCPercent = 400

// streamingGC sets streamingGCPercent unless GOGC is set in the
// environment, and returns the function that restores the setting.
func streamingGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(streamingGCPercent)
	return func() { debug.SetGCPercent(prev) }
}

// streamingMemory is streamingGC with the soft memory limit of what is in
// use now plus export.DefaultMemoryBudget (GOMEMLIMIT wins), for commands
// that hold no index: score and pareto.
func streamingMemory() (restore func()) {
	restoreGC := streamingGC()
	restoreLimit := export.LimitMemory(export.DefaultMemoryBudget)
	return func() {
		restoreLimit()
		restoreGC()
	}
}
