package hftok

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// Allowances for what a chat template adds around the tokenized texts;
// the same figures as rollout/dataset's estimate.
const (
	TokensPerMessage = 4 // role and turn-boundary markers
	TokensPerTool    = 8 // the template's wrapping of one tool schema
	TokensPerPrompt  = 8 // BOS, default system text, generation prompt
)

// lookaheadHint explains the one known class of tokenizer.json files the
// library cannot read.
const lookaheadHint = "the pre-tokenizer's split pattern uses a lookahead `(?!`, which Go's regexp (RE2) cannot compile, " +
	"so github.com/sugarme/tokenizer cannot read this file; the tokenizer.json files of Qwen2/2.5/3 and Llama-3 have such a pattern; " +
	"leave out --tokenizer to use the tokenizer-free estimate"

// Counter counts tokens with one tokenizer.json. It is not safe for
// concurrent use.
type Counter struct {
	name string
	tk   *tokenizer.Tokenizer
}

// Load reads a Hugging Face tokenizer.json.
func Load(path string) (c *Counter, err error) {
	defer func() { // the library panics on some files rather than erring
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("tokenizer %s: %v", path, r)
		}
		if err != nil && strings.Contains(err.Error(), "(?!") {
			err = fmt.Errorf("%w (%s)", err, lookaheadHint)
		}
	}()
	tk, err := pretrained.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	c = &Counter{name: filepath.Base(path), tk: tk}
	if _, err := c.Text("hello"); err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	return c, nil
}

// Name is the tokenizer file's base name (never its absolute path).
func (c *Counter) Name() string { return c.name }

// Text counts the tokens of s, without special tokens.
func (c *Counter) Text(s string) (n int64, err error) {
	if s == "" {
		return 0, nil
	}
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("encode: %v", r)
		}
	}()
	enc, err := c.tk.EncodeSingle(s, false)
	if err != nil {
		return 0, fmt.Errorf("encode: %w", err)
	}
	return int64(len(enc.Ids)), nil
}

// message is what a chat template renders of a message.
type message struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	ToolCalls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Messages counts rendered messages: each message's content, tool-call
// names and arguments (as JSON text, how templates render them) tokenized,
// plus TokensPerMessage.
func (c *Counter) Messages(msgs []json.RawMessage) (int64, error) {
	var total int64
	for i, raw := range msgs {
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			return 0, fmt.Errorf("message %d: %w", i, err)
		}
		texts := []string{m.Role, contentText(m.Content)}
		for _, tc := range m.ToolCalls {
			texts = append(texts, tc.Function.Name, string(tc.Function.Arguments))
		}
		for _, s := range texts {
			n, err := c.Text(s)
			if err != nil {
				return 0, fmt.Errorf("message %d: %w", i, err)
			}
			total += n
		}
		total += TokensPerMessage
	}
	return total, nil
}

// Prompt counts a prompt: its messages, each tool schema's JSON text
// tokenized plus TokensPerTool, and TokensPerPrompt.
func (c *Counter) Prompt(msgs, tools []json.RawMessage) (int64, error) {
	total, err := c.Messages(msgs)
	if err != nil {
		return 0, err
	}
	for i, t := range tools {
		n, err := c.Text(string(t))
		if err != nil {
			return 0, fmt.Errorf("tool %d: %w", i, err)
		}
		total += n + TokensPerTool
	}
	return total + TokensPerPrompt, nil
}

// contentText is a message's content as text: a string as it is, other
// JSON (a list of parts) as its JSON text, null or missing as "".
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
