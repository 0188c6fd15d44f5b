package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// FormatLlamaFactory writes the DPO table for LLaMA-Factory: one JSON file
// per split in its sharegpt preference layout (conversations, chosen and
// rejected single messages, system, tools) under llamafactory/, with the
// dataset_info.json entries that name them. Only rows whose chosen and
// rejected are one assistant turn each (step pairs with the next-turn
// continuation, the pairs default) fit the layout; other rows are counted
// and left out of these files.
const FormatLlamaFactory = "llamafactory"

// LlamaFactoryInfo is the dataset_info.json written beside the split files.
const LlamaFactoryInfo = "llamafactory/dataset_info.json"

// lfMessage is a sharegpt message with LLaMA-Factory's default tags.
type lfMessage struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

type lfRow struct {
	Conversations []lfMessage `json:"conversations"`
	Chosen        lfMessage   `json:"chosen"`
	Rejected      lfMessage   `json:"rejected"`
	System        string      `json:"system"`
	Tools         string      `json:"tools"`
}

type wireMsg struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// errNotOneTurn marks a row LLaMA-Factory's preference layout cannot hold.
var errNotOneTurn = errors.New("chosen and rejected must be one assistant turn each")

func lfOf(m wireMsg) lfMessage {
	switch m.Role {
	case "user":
		return lfMessage{"human", m.Content}
	case "tool":
		return lfMessage{"observation", m.Content}
	case "system":
		return lfMessage{"system", m.Content}
	}
	if len(m.ToolCalls) == 0 {
		return lfMessage{"gpt", m.Content}
	}
	type call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var calls []call
	for _, tc := range m.ToolCalls {
		calls = append(calls, call{tc.Function.Name, tc.Function.Arguments})
	}
	var b []byte
	if len(calls) == 1 {
		b, _ = json.Marshal(calls[0])
	} else {
		b, _ = json.Marshal(calls)
	}
	return lfMessage{"function_call", string(b)}
}

// llamaFactoryRow converts a DPO row. Consecutive tool results become one
// observation (LLaMA-Factory alternates human/observation with
// gpt/function_call turns); the system message goes to `system`.
func llamaFactoryRow(r *dataset.DPORow) (*lfRow, error) {
	parse := func(ms []json.RawMessage) ([]wireMsg, error) {
		out := make([]wireMsg, len(ms))
		for i, m := range ms {
			if err := json.Unmarshal(m, &out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	prompt, err := parse(r.Prompt)
	if err != nil {
		return nil, err
	}
	ch, err := parse(r.Chosen)
	if err != nil {
		return nil, err
	}
	rj, err := parse(r.Rejected)
	if err != nil {
		return nil, err
	}
	if len(ch) != 1 || len(rj) != 1 || ch[0].Role != "assistant" || rj[0].Role != "assistant" {
		return nil, errNotOneTurn
	}
	row := &lfRow{Conversations: []lfMessage{}, Chosen: lfOf(ch[0]), Rejected: lfOf(rj[0])}
	for i, m := range prompt {
		if i == 0 && m.Role == "system" {
			row.System = m.Content
			continue
		}
		lm := lfOf(m)
		if n := len(row.Conversations); n > 0 && lm.From == "observation" && row.Conversations[n-1].From == "observation" {
			row.Conversations[n-1].Value += "\n" + lm.Value
			continue
		}
		row.Conversations = append(row.Conversations, lm)
	}
	if len(r.Tools) > 0 {
		var b bytes.Buffer
		b.WriteByte('[')
		for i, t := range r.Tools {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(t)
		}
		b.WriteByte(']')
		row.Tools = b.String()
	}
	return row, nil
}

// llamaFactorySink writes one split as a JSON array.
type llamaFactorySink[R Row] struct {
	tmp     *tempFile
	bw      *bufio.Writer
	n       int
	skipped *int64
}

func newLlamaFactorySink[R Row](final string, skipped *int64) (*llamaFactorySink[R], error) {
	tmp, err := createTemp(final)
	if err != nil {
		return nil, err
	}
	s := &llamaFactorySink[R]{tmp: tmp, bw: bufio.NewWriterSize(tmp.f, 1<<20), skipped: skipped}
	_, err = s.bw.WriteString("[")
	return s, err
}

func (s *llamaFactorySink[R]) path() string { return s.tmp.final }

func (s *llamaFactorySink[R]) write(r *R) error {
	d, ok := any(r).(*dataset.DPORow)
	if !ok {
		return errors.New("the llamafactory format holds the dpo table only")
	}
	row, err := llamaFactoryRow(d)
	if errors.Is(err, errNotOneTurn) {
		*s.skipped++
		return nil
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(row)
	if err != nil {
		return err
	}
	sep := ",\n"
	if s.n == 0 {
		sep = "\n"
	}
	s.n++
	if _, err := s.bw.WriteString(sep); err != nil {
		return err
	}
	_, err = s.bw.Write(b)
	return err
}

func (s *llamaFactorySink[R]) finish() error {
	if _, err := s.bw.WriteString("\n]\n"); err != nil {
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	return s.tmp.finish()
}

func (s *llamaFactorySink[R]) commit() error { return s.tmp.commit() }
func (s *llamaFactorySink[R]) abort()        { s.tmp.abort() }

// llamaFactoryInfo is the dataset_info.json of the split files: one entry
// per split, named NAME_SPLIT ("antidrift_dpo_train").
func llamaFactoryInfo(name string) []byte {
	var b strings.Builder
	b.WriteString("{\n")
	for i, sp := range Splits {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `  "antidrift_%s_%s": {
    "file_name": "%s-%s.json",
    "formatting": "sharegpt",
    "ranking": true,
    "columns": {"messages": "conversations", "chosen": "chosen", "rejected": "rejected", "system": "system", "tools": "tools"}
  }`, name, sp, name, sp)
	}
	b.WriteString("\n}\n")
	return []byte(b.String())
}
