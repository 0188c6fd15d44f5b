package store

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	segjson "github.com/segmentio/encoding/json"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// DecodeRecordPrompt decodes a record line for a reader that needs the
// text of its first request and only the shape of the rest: the record
// DecodeRecordLean gives, with its first n messages and its tools as
// DecodeRecord gives them, n being what prompt returns for the lean
// messages (rewards' first pass: the request's hash, roles, parsed
// arguments and labels). A line is accepted exactly when DecodeRecord
// accepts it, with DecodeRecord's error when not; a line whose messages or
// tools it cannot find as written (a key in another case, given twice) is
// decoded whole by DecodeRecord.
func DecodeRecordPrompt(b []byte, r *trajectory.Record, prompt func([]trajectory.Message) int) error {
	if err := DecodeRecordLean(b, r); err != nil {
		return err
	}
	n := min(max(prompt(r.Messages), 0), len(r.Messages))
	msgs, tools, ok := promptValues(b, n)
	if !ok || len(msgs) != n || len(tools) != len(r.Tools) {
		return DecodeRecord(b, r)
	}
	_, fast := recordJSON.(fastThenStd)
	fast = fast && !needsStd(b)
	for i, raw := range msgs {
		var m trajectory.Message
		if fast {
			var sm sizedMessage
			if segjson.Unmarshal(raw, &sm) != nil {
				return DecodeRecord(b, r)
			}
			m = sm.Message
			m.ToolCalls = sm.ToolCalls
		} else if recordJSON.Unmarshal(raw, &m) != nil {
			return DecodeRecord(b, r)
		}
		r.Messages[i] = m
	}
	for i, raw := range tools {
		r.Tools[i] = json.RawMessage(slices.Clone(raw))
	}
	return nil
}

// promptValues finds, in a record line the lean decoder accepted, the
// bytes of its first n messages and of each of its tools. ok is false
// when a top-level key that decoding would take as messages or tools is
// not written exactly so, or comes twice.
func promptValues(b []byte, n int) (msgs, tools [][]byte, ok bool) {
	w := &walker{b: bytes.TrimSpace(b)}
	seenMsgs, seenTools := false, false
	err := w.object(func(key []byte) error {
		k := string(key)
		switch {
		case k == "messages" && !seenMsgs:
			seenMsgs = true
			_, err := w.array(func() error {
				start := w.i
				w.skipLoose()
				if len(msgs) < n {
					msgs = append(msgs, w.b[start:w.i])
				}
				return nil
			})
			return err
		case k == "tools" && !seenTools:
			seenTools = true
			_, err := w.array(func() error {
				start := w.i
				w.skipLoose()
				tools = append(tools, w.b[start:w.i])
				return nil
			})
			return err
		case strings.EqualFold(k, "messages"), strings.EqualFold(k, "tools"), strings.ContainsRune(k, '\\'):
			return errScanLayout // decoding may take it for one of them
		}
		w.skipLoose()
		return nil
	})
	return msgs, tools, err == nil
}
