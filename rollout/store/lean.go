package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// leanRecord decodes a record line without the text of its messages: the
// embedded Record's messages and tools are shadowed (a field of the outer
// struct wins over a promoted one of the same JSON name) by types that
// check what they skip.
type leanRecord struct {
	trajectory.Record
	Messages []leanMessage `json:"messages"`
	Tools    []skipAny     `json:"tools"`
	Steps    []leanStep    `json:"steps"`
}

// leanStep is a step whose list of visible tools is shared with every
// other step that lists the same tools in the same bytes: a run repeats a
// handful of such lists thousands of times.
type leanStep struct {
	trajectory.Step
	Visible sharedList `json:"visible_tools"`
}

// sharedList decodes a JSON array of strings, or null, as []string does,
// returning one shared slice for each distinct text (up to
// sharedListsMax texts). Readers of a lean record must not modify it.
type sharedList []string

var sharedLists sync.Map // string(JSON text) → []string

// sharedListsN counts the texts in sharedLists, to bound it.
var sharedListsN atomic.Int64

const sharedListsMax = 1 << 14

func (l *sharedList) UnmarshalJSON(b []byte) error {
	if v, ok := sharedLists.Load(string(b)); ok {
		*l = v.([]string)
		return nil
	}
	var ss []string
	if err := recordJSON.Unmarshal(b, &ss); err != nil {
		return err
	}
	if sharedListsN.Load() < sharedListsMax {
		if _, loaded := sharedLists.LoadOrStore(string(b), slices.Clip(ss)); !loaded {
			sharedListsN.Add(1)
		}
	}
	*l = ss
	return nil
}

// leanMessage is a message whose content and reasoning are checked to be
// strings (or null) and not kept.
type leanMessage struct {
	trajectory.Message
	Content   skipString               `json:"content,omitempty"`
	Reasoning skipString               `json:"reasoning,omitempty"`
	ToolCalls smallSlice[leanToolCall] `json:"tool_calls,omitempty"`
}

// leanToolCall is a tool call without the text of its arguments (their
// parsed form is kept).
type leanToolCall struct {
	trajectory.ToolCall
	Function leanFunction `json:"function"`
}

type leanFunction struct {
	trajectory.FunctionCall
	Arguments skipString `json:"arguments"`
}

// skipString accepts what a string field accepts (a JSON string or null)
// and keeps nothing.
type skipString struct{}

func (*skipString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '"' || string(b) == "null") {
		return nil
	}
	return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[string]()}
}

// skipAny accepts any JSON value, as json.RawMessage does, and keeps
// nothing.
type skipAny struct{}

func (*skipAny) UnmarshalJSON([]byte) error { return nil }

// DecodeRecordLean is DecodeRecord without message text: the content and
// reasoning of every message, and the text of every tool call's arguments,
// are checked but left empty, as are the tools (their number is kept);
// roles, tool calls with their parsed arguments, and every other field are
// decoded. Steps listing the same visible tools
// share one slice: a lean record is for reading. A line is accepted exactly when DecodeRecord accepts it, with
// DecodeRecord's error when not.
func DecodeRecordLean(b []byte, r *trajectory.Record) error {
	var lr leanRecord
	if err := decodeLean(b, &lr); err != nil {
		return DecodeRecord(b, r) // the reference decides, and words the error
	}
	if err := checkLine(b); err != nil {
		return err
	}
	*r = lr.Record
	r.Messages = nil
	if lr.Messages != nil {
		r.Messages = make([]trajectory.Message, len(lr.Messages))
		for i := range lr.Messages {
			m := &lr.Messages[i]
			r.Messages[i] = m.Message
			r.Messages[i].ToolCalls = nil
			if m.ToolCalls != nil {
				tcs := make([]trajectory.ToolCall, len(m.ToolCalls))
				for j := range m.ToolCalls {
					tcs[j] = m.ToolCalls[j].ToolCall
					tcs[j].Function = m.ToolCalls[j].Function.FunctionCall
				}
				r.Messages[i].ToolCalls = tcs
			}
		}
	}
	r.Steps = nil
	if lr.Steps != nil {
		r.Steps = make([]trajectory.Step, len(lr.Steps))
		for i := range lr.Steps {
			r.Steps[i] = lr.Steps[i].Step
			r.Steps[i].Visible = lr.Steps[i].Visible
		}
	}
	r.Tools = nil
	if lr.Tools != nil {
		r.Tools = make([]json.RawMessage, len(lr.Tools))
	}
	return CheckRecord(r)
}

func decodeLean(b []byte, lr *leanRecord) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	return recordJSON.Unmarshal(b, lr)
}
