package protocol

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Tool-call markup that models write and servers sometimes leave in content
// (a missing or wrong --tool-call-parser, a parser that failed on the
// model's output). Formats, named as recorded in ToolCall.Recovered:
const (
	// MarkupHermes: <tool_call>{"name": …, "arguments": {…}}</tool_call>
	// (Hermes, Qwen2.5, Qwen3; vLLM's hermes parser leaves it in content when
	// the JSON inside does not parse).
	MarkupHermes = "hermes"
	// MarkupMistral: [TOOL_CALLS][{"name": …, "arguments": {…}}] and the
	// newer [TOOL_CALLS]name[ARGS]{…}.
	MarkupMistral = "mistral"
	// MarkupPhi: <|tool_call|>[…]<|/tool_call|> (Phi-4-mini, Granite-style).
	MarkupPhi = "phi"
	// MarkupFunctionTag: <function=NAME>{…}</function> (Llama 3.1 custom
	// tools) and <function=NAME><parameter=K>V</parameter></function>
	// (Qwen3-Coder).
	MarkupFunctionTag = "function_tag"
	// MarkupJSON: the whole answer is one JSON object shaped like a call,
	// {"name": TOOL, "arguments"|"parameters": {…}} (Ollama and Llama 3.x
	// without a parser).
	MarkupJSON = "json"
)

// MarkupCall is one call found in markup. Args is nil when the arguments
// did not parse as a JSON object; ArgsError then says why.
type MarkupCall struct {
	Name      string
	Args      json.RawMessage
	ArgsError string
}

// Markup is what FindMarkup found in an answer.
type Markup struct {
	Format string // one of the Markup* names; "" when none was found
	Calls  []MarkupCall
	// Rest is the answer without the markup (trimmed).
	Rest string
	// Broken: markup was found but not every call in it could be read
	// (no name, or arguments that are not a JSON object). Calls then holds
	// what could be read, names included, for the drift detector.
	Broken bool
}

// Found reports whether the answer held tool-call markup.
func (m Markup) Found() bool { return m.Format != "" }

var (
	hermesRe   = regexp.MustCompile(`(?s)<tool_call>\s*(.*?)\s*(?:</tool_call>|$)`)
	phiRe      = regexp.MustCompile(`(?s)<\|tool_call\|>\s*(.*?)\s*(?:<\|/tool_call\|>|$)`)
	functionRe = regexp.MustCompile(`(?s)<function=([^>\s]+)>\s*(.*?)\s*(?:</function>|$)`)
	paramRe    = regexp.MustCompile(`(?s)<parameter=([^>\s]+)>\s*(.*?)\s*</parameter>`)
	nameRe     = regexp.MustCompile(`"name"\s*:\s*"([^"]+)"`)
	fenceRe    = regexp.MustCompile("(?s)^```[a-zA-Z]*\\s*(.*?)\\s*```$")
)

// FindMarkup looks for tool-call markup in an answer. known says whether a
// name is one of the scenario's tools: a bare JSON object counts as a call
// only when it names one (so that an answer that happens to be JSON is not
// taken for a call); explicit markup counts whatever it names.
func FindMarkup(content string, known func(string) bool) Markup {
	switch {
	case strings.Contains(content, "<tool_call>"):
		return fromBlocks(MarkupHermes, content, hermesRe)
	case strings.Contains(content, "<|tool_call|>"):
		return fromBlocks(MarkupPhi, content, phiRe)
	case strings.Contains(content, "[TOOL_CALLS]"):
		return mistral(content)
	case functionRe.MatchString(content):
		return functionTags(content)
	}
	return bareJSON(content, known)
}

func fromBlocks(format, content string, re *regexp.Regexp) Markup {
	m := Markup{Format: format}
	for _, sub := range re.FindAllStringSubmatch(content, -1) {
		calls, ok := callObjects(sub[1])
		m.Calls = append(m.Calls, calls...)
		m.Broken = m.Broken || !ok
	}
	m.Rest = strings.TrimSpace(re.ReplaceAllString(content, ""))
	if len(m.Calls) == 0 {
		m.Broken = true
	}
	return m
}

func mistral(content string) Markup {
	m := Markup{Format: MarkupMistral}
	i := strings.Index(content, "[TOOL_CALLS]")
	m.Rest = strings.TrimSpace(content[:i])
	body := strings.TrimSpace(content[i+len("[TOOL_CALLS]"):])
	if name, args, ok := strings.Cut(body, "[ARGS]"); ok {
		// [TOOL_CALLS]name[ARGS]{...}
		m.Calls = []MarkupCall{argsCall(strings.TrimSpace(name), json.RawMessage(strings.TrimSpace(args)))}
		m.Broken = m.Calls[0].Args == nil
		return m
	}
	calls, ok := callObjects(body)
	m.Calls, m.Broken = calls, !ok || len(calls) == 0
	return m
}

func functionTags(content string) Markup {
	m := Markup{Format: MarkupFunctionTag}
	for _, sub := range functionRe.FindAllStringSubmatch(content, -1) {
		name, body := sub[1], strings.TrimSpace(sub[2])
		if params := paramRe.FindAllStringSubmatch(body, -1); len(params) > 0 {
			obj := map[string]any{}
			for _, p := range params {
				var v any
				if json.Unmarshal([]byte(p[2]), &v) != nil {
					v = p[2]
				}
				obj[p[1]] = v
			}
			b, _ := json.Marshal(obj)
			m.Calls = append(m.Calls, MarkupCall{Name: name, Args: b})
			continue
		}
		if body == "" {
			body = "{}"
		}
		c := argsCall(name, json.RawMessage(body))
		m.Broken = m.Broken || c.Args == nil
		m.Calls = append(m.Calls, c)
	}
	m.Rest = strings.TrimSpace(functionRe.ReplaceAllString(content, ""))
	return m
}

func bareJSON(content string, known func(string) bool) Markup {
	text := strings.TrimSpace(content)
	if sub := fenceRe.FindStringSubmatch(text); sub != nil {
		text = sub[1]
	}
	if !strings.HasPrefix(text, "{") && !strings.HasPrefix(text, "[{") {
		return Markup{}
	}
	calls, ok := callObjects(text)
	if !ok || len(calls) == 0 {
		return Markup{}
	}
	for _, c := range calls {
		if known == nil || !known(c.Name) {
			return Markup{}
		}
	}
	return Markup{Format: MarkupJSON, Calls: calls}
}

// callObjects reads one call object or an array of them. ok is false when
// the text is not such JSON; the names that can still be seen are returned.
func callObjects(text string) ([]MarkupCall, bool) {
	text = strings.TrimSpace(text)
	var raws []json.RawMessage
	if strings.HasPrefix(text, "[") {
		if json.Unmarshal([]byte(text), &raws) != nil {
			return namesOnly(text), false
		}
	} else {
		var one json.RawMessage
		if json.Unmarshal([]byte(text), &one) != nil {
			return namesOnly(text), false
		}
		raws = []json.RawMessage{one}
	}
	var out []MarkupCall
	ok := true
	for _, raw := range raws {
		var obj struct {
			Name       *string         `json:"name"`
			Arguments  json.RawMessage `json:"arguments"`
			Parameters json.RawMessage `json:"parameters"`
			Function   *struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &obj) != nil {
			return out, false
		}
		switch {
		case obj.Name != nil && *obj.Name != "":
			args := obj.Arguments
			if len(args) == 0 {
				args = obj.Parameters
			}
			c := argsCall(*obj.Name, args)
			ok = ok && c.Args != nil
			out = append(out, c)
		case obj.Function != nil && obj.Function.Name != "":
			c := argsCall(obj.Function.Name, obj.Function.Arguments)
			ok = ok && c.Args != nil
			out = append(out, c)
		default:
			return out, false
		}
	}
	return out, ok
}

// argsCall reads arguments given as an object, a JSON string holding one,
// or nothing.
func argsCall(name string, args json.RawMessage) MarkupCall {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return MarkupCall{Name: name, Args: json.RawMessage(`{}`)}
	}
	if args[0] == '"' {
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = bytes.TrimSpace([]byte(s))
		}
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return MarkupCall{Name: name, ArgsError: "arguments in the markup are not valid JSON"}
	}
	if _, isObj := v.(map[string]any); !isObj {
		return MarkupCall{Name: name, ArgsError: "arguments in the markup are not a JSON object"}
	}
	var b bytes.Buffer
	_ = json.Compact(&b, args)
	return MarkupCall{Name: name, Args: b.Bytes()}
}

func namesOnly(text string) []MarkupCall {
	var out []MarkupCall
	for _, sub := range nameRe.FindAllStringSubmatch(text, -1) {
		out = append(out, MarkupCall{Name: sub[1], ArgsError: "the call markup does not parse"})
	}
	return out
}
