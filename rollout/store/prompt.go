package store

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// DecodeRecordPrompt decodes a record line for a reader of its first
// request and its labels (rewards' first pass: the request's hash, the
// shape of the rest, the reward). It gives the record DecodeRecordScan
// gives, and also:
//   - the judge's score (not its kind or reason);
//   - every message's role, and for each of its tool calls only the kind
//     of its parsed arguments: {} for an object (its members dropped), the
//     value as written otherwise (what dataset.RawArguments reads);
//   - the first n messages whole, n being what prompt returns for those
//     messages (which hold only their roles then);
//   - every step's turn and visible tools (steps listing the same tools
//     share one slice: the record is for reading);
//   - the tools, as DecodeRecord gives them.
//
// Messages, tool calls and steps are nil when there are none. A line is
// accepted exactly when DecodeRecord accepts it, with DecodeRecord's error
// when not. The line is read in one pass by the scanning decoder; a layout
// it leaves to the reference is decoded whole by DecodeRecord, and the
// record then cut to the same fields.
func DecodeRecordPrompt(b []byte, r *trajectory.Record, prompt func([]trajectory.Message) int) error {
	if !needsStd(b) {
		var sr scanRecord
		var keep promptKeep
		if decodeScanFast(b, &sr, &keep) == nil {
			if err := checkLine(b); err != nil {
				return err
			}
			if done, err := keep.record(&sr, r, prompt); done {
				return err
			}
		}
	}
	if err := DecodeRecord(b, r); err != nil {
		return err
	}
	keepPrompt(r, min(max(prompt(rolesOnly(r.Messages)), 0), len(r.Messages)))
	return nil
}

// promptKeep is what the scanning walk keeps for DecodeRecordPrompt beyond
// the scan's shapes, as slices of the line (or shared lists).
type promptKeep struct {
	msgs    [][]byte            // each message as written
	parsed  [][]json.RawMessage // per message, its calls' parsed arguments by kind
	visible [][]string          // per step, its visible tools
	tools   []byte              // the tools member as written; nil when absent
}

// record fills r from a scanned line. done is false when the first
// request's messages do not decode on the fast path (the reference then
// decodes the line).
func (k *promptKeep) record(sr *scanRecord, r *trajectory.Record, prompt func([]trajectory.Message) int) (done bool, err error) {
	*r = sr.Record
	r.Messages, r.Tools, r.ToolOrder, r.Steps, r.Plan = nil, nil, nil, nil, ""
	r.Judge = trajectory.Judgement{Score: sr.Judge.Score}
	if err := checkRecord(r, scanShape{sr}); err != nil {
		return true, err
	}
	if len(sr.Messages) > 0 {
		r.Messages = make([]trajectory.Message, len(sr.Messages))
		for i, m := range sr.Messages {
			r.Messages[i].Role = m.role
			if len(k.parsed[i]) > 0 {
				tcs := make([]trajectory.ToolCall, len(k.parsed[i]))
				for j, p := range k.parsed[i] {
					tcs[j].Function.Parsed = p
				}
				r.Messages[i].ToolCalls = tcs
			}
		}
	}
	if len(sr.Steps) > 0 {
		r.Steps = make([]trajectory.Step, len(sr.Steps))
		for i, s := range sr.Steps {
			r.Steps[i].Turn, r.Steps[i].Visible = s.turn, k.visible[i]
		}
	}
	if t := k.tools; t != nil && t[0] == '[' {
		w := &walker{b: t}
		r.Tools = []json.RawMessage{}
		if _, err := w.array(func() error {
			start := w.i
			w.skipLoose()
			r.Tools = append(r.Tools, json.RawMessage(slices.Clone(t[start:w.i])))
			return nil
		}); err != nil {
			return false, nil // unreachable: the walk accepted the array
		}
	}
	n := min(max(prompt(r.Messages), 0), len(r.Messages))
	for i := range n {
		m, err := decodeMessage(k.msgs[i])
		if err != nil {
			return false, nil
		}
		r.Messages[i] = m
	}
	return true, nil
}

// keepPrompt cuts a whole record to what DecodeRecordPrompt gives when
// its first request is n messages long.
func keepPrompt(r *trajectory.Record, n int) {
	r.ToolOrder, r.Plan = nil, ""
	r.Judge = trajectory.Judgement{Score: r.Judge.Score}
	if len(r.Messages) == 0 {
		r.Messages = nil
	}
	if r.Messages != nil {
		ms := make([]trajectory.Message, len(r.Messages))
		copy(ms, r.Messages[:n])
		for i := n; i < len(r.Messages); i++ {
			m := r.Messages[i]
			ms[i].Role = m.Role
			if len(m.ToolCalls) > 0 {
				ms[i].ToolCalls = make([]trajectory.ToolCall, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					ms[i].ToolCalls[j].Function.Parsed = argumentsKind(tc.Function.Parsed)
				}
			}
		}
		r.Messages = ms
	}
	if len(r.Steps) == 0 {
		r.Steps = nil
	}
	if r.Steps != nil {
		ss := make([]trajectory.Step, len(r.Steps))
		for i, s := range r.Steps {
			ss[i].Turn, ss[i].Visible = s.Turn, s.Visible
		}
		r.Steps = ss
	}
}

// objectKind stands for parsed arguments that are an object.
var objectKind = json.RawMessage("{}")

// argumentsKind is what DecodeRecordPrompt keeps of a call's parsed
// arguments: {} for an object, a copy of the value otherwise (absent:
// nil).
func argumentsKind(v []byte) json.RawMessage {
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '{' {
		return objectKind
	}
	if v == nil {
		return nil
	}
	return json.RawMessage(slices.Clone(v))
}

// rolesOnly is ms with only their roles, as prompt is given them.
func rolesOnly(ms []trajectory.Message) []trajectory.Message {
	if len(ms) == 0 {
		return nil
	}
	out := make([]trajectory.Message, len(ms))
	for i, m := range ms {
		out[i].Role = m.Role
	}
	return out
}
