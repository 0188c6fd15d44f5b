package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/antidrift/antidrift/internal/tempgate"
)

// Commands that write output folders (export, pairs, rewards, pareto,
// demo) register what to remove when SIGINT or SIGTERM arrives: while any
// cleanup is registered, a signal runs them all and exits 130. Commands
// with their own handling (rollout, judge, qc: they stop at an episode
// boundary and save what finished) register nothing, and a process with
// nothing registered keeps Go's default behaviour.
var interrupts struct {
	sync.Mutex
	next  int
	fns   map[int]func()
	ch    chan os.Signal
	fired bool
}

// onInterrupt registers fn; the returned func unregisters it.
func onInterrupt(fn func()) (undo func()) {
	interrupts.Lock()
	defer interrupts.Unlock()
	if interrupts.fns == nil {
		interrupts.fns = map[int]func(){}
	}
	id := interrupts.next
	interrupts.next++
	interrupts.fns[id] = fn
	if interrupts.ch == nil {
		interrupts.ch = make(chan os.Signal, 2)
		signal.Notify(interrupts.ch, os.Interrupt, syscall.SIGTERM)
		go handleInterrupts(interrupts.ch)
	}
	return func() {
		interrupts.Lock()
		defer interrupts.Unlock()
		delete(interrupts.fns, id)
		if len(interrupts.fns) == 0 && interrupts.ch != nil && !interrupts.fired {
			signal.Stop(interrupts.ch)
			close(interrupts.ch)
			interrupts.ch = nil
		}
	}
}

func handleInterrupts(ch chan os.Signal) {
	sig, ok := <-ch
	if !ok {
		return
	}
	// no temporary file is made from here on (one being made is finished
	// first, and swept below)
	tempgate.Close()
	interrupts.Lock()
	interrupts.fired = true
	fns := make([]func(), 0, len(interrupts.fns))
	for _, fn := range interrupts.fns {
		fns = append(fns, fn)
	}
	interrupts.Unlock()
	for _, fn := range fns {
		fn()
	}
	fmt.Fprintf(os.Stderr, "antidrift: interrupted (%s); temporary files removed, the previous output is unchanged; rerun the command\n", sig)
	os.Exit(130)
}
