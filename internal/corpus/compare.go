package corpus

import (
	"fmt"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// Comparable is r less what may differ between an in-process and an HTTP
// rollout of the same episode: the wall-clock timings, and the tool-call
// ids, which the HTTP client assigns itself (the server's kept as
// ServerID). Ids are renamed in order of first appearance, so that which
// message and call note share an id is still compared.
func Comparable(r *trajectory.Record) trajectory.Record {
	out := *r
	out.Timings = trajectory.Timings{}
	names := map[string]string{}
	name := func(id string) string {
		if id == "" {
			return ""
		}
		if _, ok := names[id]; !ok {
			names[id] = fmt.Sprintf("id%d", len(names))
		}
		return names[id]
	}
	out.Messages = make([]trajectory.Message, len(r.Messages))
	for i, m := range r.Messages {
		if len(m.ToolCalls) > 0 {
			calls := make([]trajectory.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				tc.ID, tc.ServerID = name(tc.ID), ""
				calls[j] = tc
			}
			m.ToolCalls = calls
		}
		m.ToolCallID = name(m.ToolCallID)
		out.Messages[i] = m
	}
	out.Steps = make([]trajectory.Step, len(r.Steps))
	for i, st := range r.Steps {
		if len(st.Calls) > 0 {
			notes := make([]trajectory.CallNote, len(st.Calls))
			for j, c := range st.Calls {
				c.ID = name(c.ID)
				notes[j] = c
			}
			st.Calls = notes
		}
		out.Steps[i] = st
	}
	return out
}
