package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Hash is a stable fingerprint of a set of scenarios: the SHA-256 of their
// canonical JSON in the given order (loaders return id order). Runs record
// it so that a resumed or re-scored run can tell it sees the same scenarios.
func Hash(ss []*Scenario) string {
	h := sha256.New()
	for _, s := range ss {
		b, err := json.Marshal(s)
		if err != nil {
			panic(err) // a loaded scenario always marshals
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
