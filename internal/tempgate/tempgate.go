// Package tempgate makes temporary files and folders under a gate that a
// signal handler closes before it removes them: a file being made when
// the gate closes is finished first (and so removed by the sweep that
// follows), and none is made after. Without it, a command interrupted
// while writing could make its next temporary file between the sweep and
// the process's exit, and leave it behind. It imports nothing of
// antidrift.
package tempgate

import (
	"os"
	"sync"
)

var gate struct {
	sync.RWMutex
	closed bool
}

// enter waits for the gate; once it is closed it never returns: the
// process is exiting.
func enter() {
	gate.RLock()
	if gate.closed {
		gate.RUnlock()
		select {}
	}
}

// CreateTemp is os.CreateTemp under the gate.
func CreateTemp(dir, pattern string) (*os.File, error) {
	enter()
	defer gate.RUnlock()
	return os.CreateTemp(dir, pattern)
}

// Unnamed makes a temporary file in $TMPDIR and removes its name at once,
// under the gate: a scratch file that nothing can leave behind once made
// (the open file stays usable until closed). Only a SIGKILL in the
// moment between the two steps leaves a file, named pattern.
func Unnamed(pattern string) (*os.File, error) {
	enter()
	defer gate.RUnlock()
	f, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// MkdirTemp is os.MkdirTemp under the gate.
func MkdirTemp(dir, pattern string) (string, error) {
	enter()
	defer gate.RUnlock()
	return os.MkdirTemp(dir, pattern)
}

// MkdirAll is os.MkdirAll under the gate, for the folders a command makes
// inside a temporary folder (a table's data/ in a staging folder): after
// the sweep has removed the temporary folder, an ungated MkdirAll would
// make it again, parents first, and leave it behind.
func MkdirAll(path string, perm os.FileMode) error {
	enter()
	defer gate.RUnlock()
	return os.MkdirAll(path, perm)
}

// Close waits for the temporary files being made and makes any later
// CreateTemp, MkdirTemp or MkdirAll block for good. A signal handler calls
// it, then removes the temporary files and exits.
func Close() {
	gate.Lock()
	gate.closed = true
	gate.Unlock()
}
