package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// LockName is the lock file every writing command holds in its folder.
const LockName = ".antidrift.lock"

// ErrLocked is returned by LockDir when another process holds the folder.
var ErrLocked = errors.New("folder is in use by another antidrift process")

// Holder is what a lock file says about the process holding it.
type Holder struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Command string `json:"command,omitempty"`
	Since   string `json:"since"`
}

// Lock is an exclusive lock on a folder: flock(2) on DIR/.antidrift.lock,
// with the holder's PID and host written inside for the refusal message.
// The kernel drops a flock when its process dies, so the lock left by a
// crashed or killed run is stale by construction and the next writer takes
// it over; nothing has to be cleaned up by hand.
//
// Within one process the lock is shared: a second LockDir of a folder the
// process already holds succeeds and the lock is dropped with its last
// Release (one process is one writer; its own goroutines coordinate).
type Lock struct {
	held *heldLock
	done bool
}

type heldLock struct {
	f    *os.File
	path string
	key  string
	refs int
}

var (
	heldMu sync.Mutex
	held   = map[string]*heldLock{}
)

// LockDir takes the folder's lock, creating the folder if needed. A folder
// held by a live process is refused with ErrLocked, naming the holder.
// command is recorded for that message (it must hold no secret).
func LockDir(dir, command string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, LockName)
	key, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: lock: %w", err)
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	if h := held[key]; h != nil {
		h.refs++
		return &Lock{held: h}, nil
	}
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, fmt.Errorf("store: lock: %w", err)
		}
		if err := flock(f); err != nil {
			f.Close()
			if errors.Is(err, errWouldBlock) {
				return nil, lockedError(dir, path)
			}
			return nil, fmt.Errorf("store: lock %s: %w", path, err)
		}
		// The previous holder removes the file while holding the lock; if
		// it did so after we opened it, our lock is on an unlinked file and
		// we start over on the new one.
		if same, err := sameFile(f, path); err != nil || !same {
			f.Close()
			if attempt > 100 {
				return nil, fmt.Errorf("store: lock %s: kept changing while being taken", path)
			}
			continue
		}
		host, _ := os.Hostname()
		hd := Holder{PID: os.Getpid(), Host: host, Command: command, Since: time.Now().UTC().Format(time.RFC3339)}
		b, _ := json.Marshal(hd)
		if err := f.Truncate(0); err == nil {
			_, err = f.WriteAt(append(b, '\n'), 0)
		}
		h := &heldLock{f: f, path: path, key: key, refs: 1}
		held[key] = h
		return &Lock{held: h}, nil
	}
}

func lockedError(dir, path string) error {
	var h Holder
	b, _ := os.ReadFile(path)
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return fmt.Errorf("store: %s: %w (see %s); wait for it to finish or stop it", dir, ErrLocked, path)
	}
	who := fmt.Sprintf("pid %d on host %s", h.PID, h.Host)
	if h.Command != "" {
		who += fmt.Sprintf(" (%s", strings.TrimSpace(h.Command))
		if h.Since != "" {
			who += ", since " + h.Since
		}
		who += ")"
	}
	return fmt.Errorf("store: %s: %w: %s; wait for it to finish or stop it (one writer per folder)", dir, ErrLocked, who)
}

func sameFile(f *os.File, path string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(path)
	if err != nil {
		return false, nil
	}
	return os.SameFile(a, b), nil
}

// Release drops the lock; the last release in the process removes the
// lock file (while still holding it: see LockDir). Safe to call twice.
func (l *Lock) Release() error {
	if l == nil || l.done || l.held == nil {
		return nil
	}
	l.done = true
	heldMu.Lock()
	defer heldMu.Unlock()
	h := l.held
	if h.refs--; h.refs > 0 {
		return nil
	}
	delete(held, h.key)
	err := os.Remove(h.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := h.f.Close(); err == nil {
		err = cerr
	}
	return err
}
