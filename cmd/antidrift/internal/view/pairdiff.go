package view

import (
	"bytes"
	"encoding/json"
	"strings"
)

// pairDiff aligns a pair's two sides: the messages they share from the
// start (tool call ids aside: each rollout draws its own) are shown once,
// and each later message is diffed word by word with the one at the same
// position on the other side.
type pairDiff struct {
	Shared int `json:"shared"`
	// Message is where the sides part, counted over the prompt and a side.
	Message int       `json:"message"`
	Aligned []msgDiff `json:"aligned"`
}

// msgDiff is side message Index of chosen (a, the "-" runs) against
// rejected (b, the "+" runs).
type msgDiff struct {
	Index   int        `json:"index"`
	Same    bool       `json:"same"`
	Role    bool       `json:"role_differs"`
	Content []diffOp   `json:"content"`
	Calls   []callDiff `json:"calls"`
}

// callDiff is the j-th tool call of both messages: its name and its
// arguments, indented as the page shows them.
type callDiff struct {
	Name []diffOp `json:"name"`
	Args []diffOp `json:"arguments"`
}

// maxAligned bounds how many messages past the divergence are diffed.
const maxAligned = 64

// pairMsg is the part of a dataset message a pair diff compares.
type pairMsg struct {
	Role      string `json:"role"`
	Name      string `json:"name"`
	Content   string `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// pairMessages decodes a side of a pairs row; ok is false for a shape the
// diff does not know (content parts, a rendered text), which is then shown
// without a diff.
func pairMessages(raw json.RawMessage) ([]pairMsg, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	out := make([]pairMsg, len(items))
	for i, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil { // a message kept as its JSON text
			it = json.RawMessage(s)
		}
		if json.Unmarshal(it, &out[i]) != nil {
			return nil, false
		}
	}
	return out, true
}

// argsText is a call's arguments as the page shows them: JSON indented by
// two spaces in its own key order, or the text as sent when it is no JSON.
func argsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
		if !json.Valid(raw) {
			return s
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// key is what makes two messages the same step: ids left out.
func (m *pairMsg) key() string {
	var b strings.Builder
	b.WriteString(m.Role + "\x00" + m.Name + "\x00" + m.Content)
	for _, c := range m.ToolCalls {
		b.WriteString("\x00" + c.Function.Name + "\x00" + argsText(c.Function.Arguments))
	}
	return b.String()
}

// pairDiffOf aligns a pairs row's chosen and rejected sides; nil when they
// are not message lists it can read.
func pairDiffOf(row map[string]json.RawMessage) *pairDiff {
	prompt, ok1 := pairMessages(row["prompt"])
	a, ok2 := pairMessages(row["chosen"])
	b, ok3 := pairMessages(row["rejected"])
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	d := &pairDiff{Aligned: []msgDiff{}}
	for d.Shared < len(a) && d.Shared < len(b) && a[d.Shared].key() == b[d.Shared].key() {
		d.Shared++
	}
	d.Message = len(prompt) + d.Shared
	for i := d.Shared; i < len(a) && i < len(b) && i < d.Shared+maxAligned; i++ {
		x, y := &a[i], &b[i]
		md := msgDiff{Index: i, Same: x.key() == y.key(), Role: x.Role != y.Role, Content: wordDiff(x.Content, y.Content), Calls: []callDiff{}}
		for j := 0; j < max(len(x.ToolCalls), len(y.ToolCalls)); j++ {
			var na, nb, aa, ab string
			if j < len(x.ToolCalls) {
				na, aa = x.ToolCalls[j].Function.Name, argsText(x.ToolCalls[j].Function.Arguments)
			}
			if j < len(y.ToolCalls) {
				nb, ab = y.ToolCalls[j].Function.Name, argsText(y.ToolCalls[j].Function.Arguments)
			}
			md.Calls = append(md.Calls, callDiff{Name: wordDiff(na, nb), Args: wordDiff(aa, ab)})
		}
		d.Aligned = append(d.Aligned, md)
	}
	return d
}
