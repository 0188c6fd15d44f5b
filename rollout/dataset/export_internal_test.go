package dataset

import (
	"encoding/json"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// For the external tests: the fast rendering and its reference.
func AppendMessageForTest(m trajectory.Message, o RenderOptions) (json.RawMessage, bool) {
	return appendMessage(nil, &m, o)
}

func MarshalMessageForTest(m trajectory.Message, o RenderOptions) (b json.RawMessage, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return marshalMessage(m, o), false
}
