package skill

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Parse outcomes of an answer.
const (
	ParseOK        = "ok"
	ParseNone      = "none"      // an empty answer, "none", or []: no action
	ParseMalformed = "malformed" // no usable answer could be read
)

var fence = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*(.*?)```")

// unfence returns the inside of the first code fence, or the text.
func unfence(s string) string {
	if m := fence.FindStringSubmatch(s); m != nil {
		return strings.TrimSpace(m[1])
	}
	return strings.TrimSpace(s)
}

var noneAnswers = map[string]bool{"": true, "none": true, "no skill": true, "n/a": true, "null": true, "[]": true, "no action": true}

// ParseSkillAnswer reads Task 1's answer tolerantly: a bare name, quoted,
// in backticks or a code fence, as {"skill": NAME}, or inside a sentence
// naming exactly one of the library's skills.
func ParseSkillAnswer(l *Library, text string) (name, status, reason string) {
	t := strings.Trim(unfence(text), " \t\n\"'`*.")
	var obj map[string]any
	if json.Unmarshal([]byte(t), &obj) == nil {
		for _, k := range []string{"skill", "name", "skill_name"} {
			if v, ok := obj[k].(string); ok {
				t = strings.TrimSpace(v)
				break
			}
		}
	}
	if noneAnswers[strings.ToLower(t)] {
		return "", ParseNone, ""
	}
	for _, s := range l.Skills {
		if strings.EqualFold(t, s.Name) {
			return s.Name, ParseOK, ""
		}
	}
	found := map[string]bool{}
	var first string
	for _, s := range l.Skills {
		re := regexp.MustCompile(`(?i)(^|[^a-z0-9_-])` + regexp.QuoteMeta(s.Name) + `($|[^a-z0-9_-])`)
		if re.MatchString(t) {
			if !found[s.Name] && first == "" {
				first = s.Name
			}
			found[s.Name] = true
		}
	}
	switch len(found) {
	case 1:
		return first, ParseOK, ""
	case 0:
		return "", ParseMalformed, "names no skill of the library"
	}
	return "", ParseMalformed, fmt.Sprintf("names %d skills", len(found))
}

// ParseToolsAnswer reads Task 2's answer tolerantly: a JSON list (in a code
// fence or amid text) of {"tool"|"name": NAME, "arguments"|"args"|
// "parameters": {...} or a JSON string}, OpenAI-style {"function": {...}}
// entries, an object holding such a list under "tool_calls" or "calls", or
// one such object alone.
func ParseToolsAnswer(text string) (calls []Call, status, reason string) {
	t := unfence(text)
	if noneAnswers[strings.ToLower(strings.Trim(t, " .\n"))] {
		return nil, ParseNone, ""
	}
	v, err := firstJSON(t)
	if err != nil {
		return nil, ParseMalformed, err.Error()
	}
	if obj, ok := v.(map[string]any); ok {
		switch {
		case obj["tool_calls"] != nil:
			v = obj["tool_calls"]
		case obj["calls"] != nil:
			v = obj["calls"]
		default:
			v = []any{obj}
		}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, ParseMalformed, "not a JSON list of tool calls"
	}
	if len(list) == 0 {
		return nil, ParseNone, ""
	}
	for i, e := range list {
		c, err := callOf(e)
		if err != nil {
			return nil, ParseMalformed, fmt.Sprintf("call %d: %v", i, err)
		}
		calls = append(calls, c)
	}
	return calls, ParseOK, ""
}

func callOf(e any) (Call, error) {
	obj, ok := e.(map[string]any)
	if !ok {
		return Call{}, fmt.Errorf("not an object")
	}
	if fn, ok := obj["function"].(map[string]any); ok {
		obj = fn
	}
	var c Call
	for _, k := range []string{"tool", "name", "tool_name"} {
		if s, ok := obj[k].(string); ok && s != "" {
			c.Tool = s
			break
		}
	}
	if c.Tool == "" {
		return Call{}, fmt.Errorf("no tool name")
	}
	c.Args = map[string]any{}
	for _, k := range []string{"arguments", "args", "parameters", "input"} {
		switch a := obj[k].(type) {
		case map[string]any:
			c.Args = a
		case string:
			var m map[string]any
			if json.Unmarshal([]byte(a), &m) != nil {
				return Call{}, fmt.Errorf("arguments of %s are not a JSON object", c.Tool)
			}
			c.Args = m
		case nil:
			continue
		default:
			return Call{}, fmt.Errorf("arguments of %s are not a JSON object", c.Tool)
		}
		break
	}
	return c, nil
}

// firstJSON decodes the text as JSON, or else the first JSON array or
// object that starts in it.
func firstJSON(t string) (any, error) {
	var v any
	if json.Unmarshal([]byte(t), &v) == nil {
		return v, nil
	}
	for i := 0; i < len(t); i++ {
		if t[i] != '[' && t[i] != '{' {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(t[i:])))
		if dec.Decode(&v) == nil {
			return v, nil
		}
	}
	return nil, fmt.Errorf("no JSON list of tool calls")
}

// FillArgs fills a tool's parameters from the request's ground-truth calls
// (same-named arguments), the request itself (an instruction) and its
// search terms (a filter or query).
func FillArgs(t *Tool, q *Query) map[string]any {
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(t.Parameters, &sch)
	known := map[string]any{}
	for _, c := range q.Calls {
		for k, v := range c.Args {
			if _, ok := known[k]; !ok {
				known[k] = v
			}
		}
	}
	if v, ok := known["query"]; ok {
		known["filter"] = v
	}
	if v, ok := known["filter"]; ok {
		known["query"] = v
	}
	known["instruction"] = q.Request
	args := map[string]any{}
	for _, name := range sch.Required {
		if v, ok := known[name]; ok {
			args[name] = v
		} else if name == "limit" {
			args[name] = 10
		} else {
			args[name] = q.Request
		}
	}
	for name := range sch.Properties {
		if v, ok := known[name]; ok && args[name] == nil {
			args[name] = v
		}
	}
	return args
}

// ToolsAnswer writes calls the way Task 2 asks for them: a JSON list of
// {"tool", "arguments"}.
func ToolsAnswer(calls []Call) string {
	type wire struct {
		Tool      string         `json:"tool"`
		Arguments map[string]any `json:"arguments"`
	}
	out := make([]wire, len(calls))
	for i, c := range calls {
		out[i] = wire{c.Tool, c.Args}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// CallsFor writes calls of the given tools for a query: its ground-truth
// calls where the tool is one of them, arguments filled from the request
// (FillArgs) otherwise.
func CallsFor(l *Library, q *Query, tools []string) []Call {
	var out []Call
	have := map[string]bool{}
	for _, c := range q.Calls {
		if contains(tools, c.Tool) {
			out = append(out, c)
			have[c.Tool] = true
		}
	}
	for _, t := range tools {
		if !have[t] {
			out = append(out, Call{Tool: t, Args: FillArgs(l.Tool(t), q)})
		}
	}
	return out
}
