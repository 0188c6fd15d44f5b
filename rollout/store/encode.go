package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/antidrift/antidrift/internal/plainjson"
	"github.com/antidrift/antidrift/rollout/drift"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// MarshalRecord returns json.Marshal(r)'s bytes and error, faster: the
// record's bulk — identity, messages, tools, tool order and steps — is
// written without reflection, and each embedded JSON value (a tool schema,
// parsed arguments) is checked and compacted in one plain pass instead of
// encoding/json's byte-at-a-time scanner. The fields after the steps (the
// labels, a few hundred bytes) go through encoding/json as one struct.
// Anything the plain path does not take as written — a raw value that is
// not valid JSON, whose error encoding/json words — is marshalled by
// encoding/json whole, so the bytes and the error never differ
// (TestMarshalRecordMatchesEncodingJSON).
func MarshalRecord(r *trajectory.Record) ([]byte, error) {
	e := encoders.Get().(*recordEncoder)
	defer encoders.Put(e)
	b, ok := e.append(make([]byte, 0, 4096), r)
	if !ok {
		return json.Marshal(r)
	}
	return b, nil
}

// recordEncoder writes records; the tail goes through one json.Encoder
// into a reused buffer, so that a record costs no allocation of its own
// beyond its line's growth. Reused through encoders.
type recordEncoder struct {
	tail recordTail
	out  bytes.Buffer
	enc  *json.Encoder
	line []byte // Writer.Append's line buffer
}

var encoders = sync.Pool{New: func() any {
	e := &recordEncoder{line: make([]byte, 0, 16<<10)}
	e.enc = json.NewEncoder(&e.out) // HTML escaping on, as json.Marshal
	return e
}}

// recordTail is the part of trajectory.Record after Steps, with the same
// names, types and tags, in the same order (TestRecordTailMirrorsRecord).
type recordTail struct {
	Plan         string                `json:"plan,omitempty"`
	FormatErrors int                   `json:"format_errors,omitempty"`
	Repairs      trajectory.Repairs    `json:"repairs,omitzero"`
	Status       trajectory.Status     `json:"status"`
	Error        string                `json:"error,omitempty"`
	Success      bool                  `json:"success"`
	Judge        trajectory.Judgement  `json:"judge"`
	Drift        bool                  `json:"drift"`
	DriftSteps   []int                 `json:"drift_steps"`
	Matches      []drift.Match         `json:"drift_matches"`
	Exposure     *trajectory.Exposure  `json:"exposure,omitempty"`
	Usage        trajectory.Usage      `json:"usage"`
	Selection    *trajectory.Selection `json:"selection,omitempty"`
	Timings      trajectory.Timings    `json:"timings"`
	Version      string                `json:"version"`
}

// append appends json.Marshal(r)'s bytes, or reports false where
// encoding/json must decide.
func (e *recordEncoder) append(dst []byte, r *trajectory.Record) ([]byte, bool) {
	dst = append(dst, `{"traj_id":`...)
	dst = plainjson.AppendString(dst, r.TrajID)
	dst = appendStringField(dst, `,"run":`, r.Run)
	dst = appendStringField(dst, `,"checkpoint":`, r.Checkpoint)
	dst = appendStringField(dst, `,"policy":`, r.Policy)
	dst = appendStringField(dst, `,"framework":`, r.Framework)
	dst = appendStringField(dst, `,"scenario_id":`, r.ScenarioID)
	dst = appendStringField(dst, `,"domain":`, r.Domain)
	dst = strconv.AppendInt(append(dst, `,"rollout":`...), int64(r.Rollout), 10)
	dst = strconv.AppendInt(append(dst, `,"seed":`...), r.Seed, 10)

	dst = append(dst, `,"messages":`...)
	if r.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendMessage(dst, &r.Messages[i]); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}

	dst = append(dst, `,"tools":`...)
	if r.Tools == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, t := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendRaw(dst, t); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	if len(r.ToolOrder) > 0 {
		dst = appendStrings(append(dst, `,"tool_order":`...), r.ToolOrder)
	}

	dst = append(dst, `,"steps":`...)
	if r.Steps == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Steps {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStep(dst, &r.Steps[i])
		}
		dst = append(dst, ']')
	}

	e.tail = recordTail{
		Plan: r.Plan, FormatErrors: r.FormatErrors, Repairs: r.Repairs, Status: r.Status, Error: r.Error,
		Success: r.Success, Judge: r.Judge, Drift: r.Drift, DriftSteps: r.DriftSteps, Matches: r.Matches,
		Exposure: r.Exposure, Usage: r.Usage, Selection: r.Selection, Timings: r.Timings, Version: r.Version,
	}
	e.out.Reset()
	err := e.enc.Encode(&e.tail)
	e.tail = recordTail{} // hold no record's data in the pool
	if err != nil {
		return dst, false
	}
	// The tail is {"plan"…}\n, never {} (status, success, judge … are
	// always written): it joins the steps with a comma, less its brace
	// and the newline Encode adds.
	tail := e.out.Bytes()
	return append(append(dst, ','), tail[1:len(tail)-1]...), true
}

func appendStringField(dst []byte, key, s string) []byte {
	return plainjson.AppendString(append(dst, key...), s)
}

func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = plainjson.AppendString(dst, s)
	}
	return append(dst, ']')
}

func appendMessage(dst []byte, m *trajectory.Message) ([]byte, bool) {
	dst = appendStringField(dst, `{"role":`, m.Role)
	if m.Content != "" {
		dst = appendStringField(dst, `,"content":`, m.Content)
	}
	if m.Reasoning != "" {
		dst = appendStringField(dst, `,"reasoning":`, m.Reasoning)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			c := &m.ToolCalls[i]
			dst = appendStringField(dst, `{"id":`, c.ID)
			dst = appendStringField(dst, `,"type":`, c.Type)
			dst = appendStringField(dst, `,"function":{"name":`, c.Function.Name)
			dst = appendStringField(dst, `,"arguments":`, c.Function.Arguments)
			if len(c.Function.Parsed) > 0 {
				var ok bool
				if dst, ok = appendRaw(append(dst, `,"parsed_arguments":`...), c.Function.Parsed); !ok {
					return dst, false
				}
			}
			if c.Function.ArgsError != "" {
				dst = appendStringField(dst, `,"arguments_error":`, c.Function.ArgsError)
			}
			if c.Function.Repair != "" {
				dst = appendStringField(dst, `,"arguments_repair":`, c.Function.Repair)
			}
			dst = append(dst, '}')
			if c.Recovered != "" {
				dst = appendStringField(dst, `,"recovered":`, c.Recovered)
			}
			if c.ServerID != "" {
				dst = appendStringField(dst, `,"server_id":`, c.ServerID)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = appendStringField(dst, `,"tool_call_id":`, m.ToolCallID)
	}
	if m.Name != "" {
		dst = appendStringField(dst, `,"name":`, m.Name)
	}
	return append(dst, '}'), true
}

func appendStep(dst []byte, s *trajectory.Step) []byte {
	dst = strconv.AppendInt(append(dst, `{"turn":`...), int64(s.Turn), 10)
	dst = appendStrings(append(dst, `,"visible_tools":`...), s.Visible)
	if len(s.Calls) > 0 {
		dst = append(dst, `,"calls":[`...)
		for i := range s.Calls {
			if i > 0 {
				dst = append(dst, ',')
			}
			c := &s.Calls[i]
			dst = strconv.AppendInt(append(dst, `{"call":`...), int64(c.Call), 10)
			dst = appendStringField(dst, `,"id":`, c.ID)
			dst = appendStringField(dst, `,"tool":`, c.Tool)
			dst = appendStringField(dst, `,"outcome":`, c.Outcome)
			dst = strconv.AppendBool(append(dst, `,"drift":`...), c.Drift)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if s.FormatError {
		dst = append(dst, `,"format_error":true`...)
	}
	if s.FinishReason != "" {
		dst = appendStringField(dst, `,"finish_reason":`, s.FinishReason)
	}
	if s.Usage != nil {
		dst = appendUsage(append(dst, `,"usage":`...), s.Usage)
	}
	return append(dst, '}')
}

func appendUsage(dst []byte, u *trajectory.Usage) []byte {
	dst = strconv.AppendInt(append(dst, `{"prompt_tokens":`...), int64(u.PromptTokens), 10)
	dst = strconv.AppendInt(append(dst, `,"completion_tokens":`...), int64(u.CompletionTokens), 10)
	dst = strconv.AppendInt(append(dst, `,"total_tokens":`...), int64(u.TotalTokens), 10)
	return append(dst, '}')
}

// appendRaw appends an embedded JSON value as encoding/json writes a
// json.RawMessage: null when nil, else compacted with '<', '>', '&',
// U+2028 and U+2029 escaped (its appendCompact with HTML escaping). It
// reports false for a value that is not valid JSON (encoding/json's error
// to give).
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(dst, "null"...), true
	}
	if whole(raw, (*walker).value) != nil {
		return dst, false
	}
	return plainjson.AppendCompactValid(dst, raw), true
}
