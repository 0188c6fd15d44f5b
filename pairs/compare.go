package pairs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

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

// commonPrefix returns the number of leading messages two trajectories
// share (by sameMessage).
func commonPrefix(a, b []trajectory.Message) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if !sameMessage(&a[i], &b[i]) {
			return i
		}
	}
	return n
}

// writeCanonical writes a message as the dedup key sees it: like
// sameMessage, without tool-call ids.
func writeCanonical(h io.Writer, m *trajectory.Message) {
	fmt.Fprintf(h, "%q %q %q %d\n", m.Role, m.Content, m.Name, len(m.ToolCalls))
	for i := range m.ToolCalls {
		f := &m.ToolCalls[i].Function
		args := []byte(f.Arguments)
		if len(f.Parsed) > 0 {
			var v any
			if json.Unmarshal(f.Parsed, &v) == nil {
				args, _ = json.Marshal(v)
			}
		}
		fmt.Fprintf(h, "%q %q %t %q\n", m.ToolCalls[i].Type, f.Name, len(f.Parsed) > 0, args)
	}
}
