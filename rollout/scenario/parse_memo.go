package scenario

import (
	"crypto/sha256"
	"sync"

	"github.com/antidrift/antidrift/rollout/provisions"
)

// checkedClean remembers, per process, the files that passed every check
// against the built-in catalogue (by the SHA-256 of their bytes): parsing
// one again decodes it and skips the checks, which are most of a load (the
// built-in suite costs about 0.8 CPU-second to check and 0.1 to decode).
// A process that loads the suite more than once — the demo's stages, the
// environment server, a test binary running commands in-process — pays
// the checks once. The checks are a pure function of the bytes and the
// catalogue, and leave the scenario as decoding gives it
// (TestRememberedParseEqualsChecked); only a clean outcome is remembered,
// so a file with problems is checked, and reported, every time.
var checkedClean struct {
	mu    sync.Mutex
	files map[[sha256.Size]byte]struct{}
}

// maxCheckedClean bounds what checkedClean holds (32 bytes a file): past
// it, files are checked every time. A variable so that tests can lower it.
var maxCheckedClean = 1 << 16

// rememberClean is whether data, checked against cat, is remembered: only
// the built-in catalogue's outcomes are, since a loaded catalogue can
// change between two loads in one process.
func rememberClean(cat *provisions.Catalogue) bool { return cat == provisions.Builtin() }

func checkedBefore(sum [sha256.Size]byte) bool {
	checkedClean.mu.Lock()
	defer checkedClean.mu.Unlock()
	_, ok := checkedClean.files[sum]
	return ok
}

func markChecked(sum [sha256.Size]byte) {
	checkedClean.mu.Lock()
	defer checkedClean.mu.Unlock()
	if checkedClean.files == nil {
		checkedClean.files = map[[sha256.Size]byte]struct{}{}
	}
	if len(checkedClean.files) < maxCheckedClean {
		checkedClean.files[sum] = struct{}{}
	}
}
