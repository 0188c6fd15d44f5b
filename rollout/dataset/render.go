package dataset

import (
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// appendMessage appends the rendering of m: the bytes json.Marshal gives
// for its wireMessage (marshalMessage), key order, omitted keys, HTML
// escaping and compacted arguments included, written without reflection.
// It reports false, having appended nothing, when a tool call's parsed
// arguments are not valid JSON: the caller takes marshalMessage's path.
func appendMessage(dst []byte, m *trajectory.Message, o RenderOptions) ([]byte, bool) {
	start := len(dst)
	dst = append(dst, `{"role":`...)
	dst = appendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = appendString(dst, m.Content)
	if o.Reasoning && m.Role == trajectory.RoleAssistant && m.Reasoning != "" {
		dst = append(dst, `,"reasoning_content":`...)
		dst = appendString(dst, m.Reasoning)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			if tc.ID != "" {
				dst = append(dst, `"id":`...)
				dst = appendString(dst, tc.ID)
				dst = append(dst, ',')
			}
			dst = append(dst, `"type":`...)
			if tc.Type == "" {
				dst = append(dst, `"function"`...)
			} else {
				dst = appendString(dst, tc.Type)
			}
			dst = append(dst, `,"function":{"name":`...)
			dst = appendString(dst, tc.Function.Name)
			dst = append(dst, `,"arguments":`...)
			if isObject(tc.Function.Parsed) {
				var ok bool
				if dst, ok = appendCompact(dst, tc.Function.Parsed); !ok {
					return dst[:start], false
				}
			} else {
				// json.Marshal(map[string]string{"_raw": arguments}),
				// which compacting leaves as it is
				dst = append(dst, `{"_raw":`...)
				dst = appendString(dst, tc.Function.Arguments)
				dst = append(dst, '}')
			}
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = appendString(dst, m.ToolCallID)
	}
	if m.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, m.Name)
	}
	return append(dst, '}'), true
}

// messageSize is about the length of m's rendering (a little more, as
// for a few escapes), to size its buffer once.
func messageSize(m *trajectory.Message, o RenderOptions) int {
	n := 64 + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name)
	if o.Reasoning {
		n += 24 + len(m.Reasoning)
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		n += 64 + len(tc.ID) + len(tc.Type) + len(tc.Function.Name) + len(tc.Function.Parsed)
		if !isObject(tc.Function.Parsed) {
			n += 16 + len(tc.Function.Arguments)
		}
	}
	return n + n/16
}
