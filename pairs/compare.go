package pairs

import (
	"bytes"
	"encoding/json"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// sameMessage reports whether two messages are the same turn as a trainer
// sees it, ignoring tool-call ids (which are random per episode): same role,
// content and tool name, and the same calls (function name and arguments,
// compared as JSON values when they parsed, as text otherwise).
func sameMessage(a, b *trajectory.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Name != b.Name || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.Type != y.Type || x.Function.Name != y.Function.Name {
			return false
		}
		if !sameArgs(&x.Function, &y.Function) {
			return false
		}
	}
	return true
}

func sameArgs(x, y *trajectory.FunctionCall) bool {
	if len(x.Parsed) == 0 || len(y.Parsed) == 0 {
		return len(x.Parsed) == len(y.Parsed) && x.Arguments == y.Arguments
	}
	if bytes.Equal(x.Parsed, y.Parsed) {
		return true
	}
	var a, b any
	if json.Unmarshal(x.Parsed, &a) != nil || json.Unmarshal(y.Parsed, &b) != nil {
		return false
	}
	ca, _ := json.Marshal(a) // maps marshal with sorted keys: canonical
	cb, _ := json.Marshal(b)
	return bytes.Equal(ca, cb)
}
