package protocol

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/antidrift/antidrift/rollout/loosejson"
	"github.com/antidrift/antidrift/rollout/policy"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// The ReAct format. The model answers either
//
//	Thought: <reasoning>
//	Action: <tool name>
//	Action Input: <the arguments, a JSON object>
//
// and is sent the tool's result back as a user message
// "Observation: <result>", or
//
//	Thought: <reasoning>
//	Final Answer: <the answer to the user>
//
// which ends the episode.

const reactMarker = "Answer in the ReAct format."

// ReActSystem is the system prompt of the react framework: the scenario's
// system prompt, then the format and the tools (name, description, JSON
// parameters).
func ReActSystem(system string, tools []policy.Tool) string {
	var b strings.Builder
	b.WriteString(reactMarker)
	b.WriteString(` You can use tools. To use one, answer with exactly these three lines:

Thought: <your reasoning>
Action: <the tool's name>
Action Input: <the tool's arguments as a JSON object>

and stop there. The tool's result comes back as "Observation: <result>". Use one tool per answer. When the task is done, or you cannot or should not go further, answer instead with:

Thought: <your reasoning>
Final Answer: <your answer to the user>

Tools:`)
	describeTools(&b, tools)
	return withSystem(system, b.String())
}

// FormatHint is the user message answering a malformed ReAct answer.
func FormatHint(problem string, tools []string) string {
	return "Observation: Invalid format: " + problem + ". Answer either with\nThought: <your reasoning>\nAction: <one of: " +
		strings.Join(tools, ", ") + ">\nAction Input: <the arguments as a JSON object>\nor with\nThought: <your reasoning>\nFinal Answer: <your answer to the user>"
}

// Observation is the user message that carries a tool result to a ReAct model.
func Observation(result string) string { return "Observation: " + result }

// FormatAction writes an action in the ReAct format.
func FormatAction(thought, tool, args string) string {
	return "Thought: " + thought + "\nAction: " + tool + "\nAction Input: " + args
}

// FormatFinal writes a final answer in the ReAct format.
func FormatFinal(thought, answer string) string {
	return "Thought: " + thought + "\nFinal Answer: " + answer
}

// Kind is what a ReAct answer is.
type Kind int

// Kinds of ReAct answers.
const (
	Malformed Kind = iota
	Action
	Final
)

// Parsed is a ReAct answer, read tolerantly.
type Parsed struct {
	Kind    Kind
	Thought string
	// Action.
	Tool  string
	Input string // the Action Input as written, trimmed ("" when empty)
	// Args is the Action Input as a compact JSON object ("{}" when empty),
	// nil when it is not one; ArgsError then says why. Such an action is
	// still a call: it is answered with a tool error, like a native call
	// with invalid arguments.
	Args      json.RawMessage
	ArgsError string
	// End is the length of the text's prefix that makes the action:
	// whatever the model wrote after its Action Input (typically an
	// Observation it imagined) is not sent back to it, as a stop sequence
	// at "Observation:" would have cut it.
	End int
	// Final answer.
	Answer string
	// Malformed: what is wrong, for the format hint.
	Problem string
}

// keyword matches a ReAct keyword at the start of a line, tolerating case,
// spacing, list and quote markers and Markdown emphasis ("**Action:**",
// "action input :", "- Final_Answer:").
var keyword = regexp.MustCompile(`(?im)^[ \t>*_#-]*(thought|action[ _]?input|action|final[ _]?answer|observation)[ \t]*[*_]*[ \t]*:[ \t*_]*`)

type mark struct {
	kw         string // normalised: thought, action input, action, final answer, observation
	start, end int    // of the keyword and its colon; the value starts at end
}

func marks(text string) []mark {
	var out []mark
	for _, m := range keyword.FindAllStringSubmatchIndex(text, -1) {
		kw := strings.ToLower(text[m[2]:m[3]])
		kw = strings.ReplaceAll(kw, "_", " ")
		switch {
		case strings.HasPrefix(kw, "action") && strings.HasSuffix(kw, "input"):
			kw = "action input"
		case strings.HasPrefix(kw, "final"):
			kw = "final answer"
		}
		out = append(out, mark{kw: kw, start: m[0], end: m[1]})
	}
	return out
}

// ParseReAct reads a ReAct answer. It tolerates case, spacing, Markdown
// emphasis, code fences around the whole answer or the Action Input, and
// trailing text after the Action Input (an imagined Observation, a second
// action). When an answer holds both an action and a final answer, the
// first one counts: a model that acts and then imagines the outcome has
// acted.
func ParseReAct(text string) Parsed {
	ms := marks(text)
	var p Parsed
	valueOf := func(i int) string { // text of mark i up to the next mark
		end := len(text)
		if i+1 < len(ms) {
			end = ms[i+1].start
		}
		return strings.TrimSpace(stripFences(text[ms[i].end:end]))
	}
	for i, m := range ms {
		if m.kw == "thought" && p.Thought == "" {
			p.Thought = valueOf(i)
		}
	}
	first := -1
	for i, m := range ms {
		if m.kw == "action" || m.kw == "final answer" || m.kw == "action input" {
			first = i
			break
		}
	}
	switch {
	case first < 0:
		p.Problem = "no \"Action:\" or \"Final Answer:\" line"
		if strings.TrimSpace(text) == "" {
			p.Problem = "empty answer"
		}
		return p
	case ms[first].kw == "action input":
		p.Problem = "\"Action Input:\" without an \"Action:\" line before it"
		return p
	case ms[first].kw == "final answer":
		p.Kind = Final
		p.Answer = strings.TrimSpace(stripFences(text[ms[first].end:]))
		return p
	}
	// An action: the tool name is the rest of its line.
	a := ms[first]
	line := text[a.end:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	p.Tool = toolName(line)
	if p.Tool == "" {
		p.Problem = "no tool name after \"Action:\""
		return p
	}
	in := -1
	for j := first + 1; j < len(ms); j++ {
		if ms[j].kw == "action input" {
			in = j
			break
		}
		if ms[j].kw != "thought" {
			break // another keyword before the input: the input is missing
		}
	}
	if in < 0 {
		p.Problem = "no \"Action Input:\" line after \"Action: " + p.Tool + "\""
		return p
	}
	p.Kind = Action
	p.Input, p.Args, p.ArgsError, p.End = actionInput(text, ms[in].end, nextMark(ms, in, len(text)))
	return p
}

func nextMark(ms []mark, i, n int) int {
	for j := i + 1; j < len(ms); j++ {
		if ms[j].start > ms[i].end {
			return ms[j].start
		}
	}
	return n
}

// actionInput reads the Action Input that starts at from: a JSON value,
// possibly fenced, followed by anything. limit is where the next keyword
// starts.
func actionInput(text string, from, limit int) (input string, args json.RawMessage, argsErr string, end int) {
	pos := from
	// Skip blank space and an opening fence ("```json").
	for {
		rest := text[pos:]
		trimmed := strings.TrimLeft(rest, " \t\r\n")
		pos += len(rest) - len(trimmed)
		if strings.HasPrefix(trimmed, "```") {
			nl := strings.IndexByte(trimmed, '\n')
			if nl < 0 {
				pos = len(text)
				break
			}
			pos += nl + 1
			continue
		}
		break
	}
	if pos < len(text) && (text[pos] == '{' || text[pos] == '[' || text[pos] == '"') {
		dec := json.NewDecoder(strings.NewReader(text[pos:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil {
			end = pos + int(dec.InputOffset())
			end = pastClosingFence(text, end)
			input = strings.TrimSpace(string(raw))
			if raw[0] != '{' {
				return input, nil, "arguments must be a JSON object", end
			}
			var buf bytes.Buffer
			if json.Compact(&buf, raw) != nil {
				return input, nil, "arguments are not valid JSON", end
			}
			return input, buf.Bytes(), "", end
		}
		// Loose JSON as models write it (trailing commas, single quotes,
		// bare keys, Python literals), read by the one lenient reader,
		// which keeps [] and {} and the key order as written.
		if text[pos] == '{' {
			if raw, e, ok := loosejson.JSON(text, pos); ok {
				end = pastClosingFence(text, e)
				return strings.TrimSpace(text[pos:e]), raw, "", end
			}
		}
	}
	// Not a JSON value: the input is the text up to the next keyword.
	if limit < pos {
		limit = pos
	}
	input = strings.TrimSpace(stripFences(text[pos:limit]))
	end = limit
	if input == "" || strings.EqualFold(input, "none") || input == "{}" {
		return input, json.RawMessage(`{}`), "", end
	}
	var v any
	if err := json.Unmarshal([]byte(input), &v); err != nil {
		return input, nil, "arguments are not valid JSON: " + err.Error(), end
	}
	return input, nil, "arguments must be a JSON object", end
}

// pastClosingFence moves end past a closing "```" that follows it on the
// next non-blank text, so that a fenced Action Input stays balanced.
func pastClosingFence(text string, end int) int {
	rest := text[end:]
	trimmed := strings.TrimLeft(rest, " \t\r\n")
	if strings.HasPrefix(trimmed, "```") {
		return end + len(rest) - len(trimmed) + 3
	}
	return end
}

// stripFences drops code-fence lines ("```", "```json").
func stripFences(s string) string {
	if !strings.Contains(s, "```") {
		return s
	}
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// toolName reads a tool name from the rest of an Action line, dropping
// quotes, backticks, emphasis, a trailing call syntax and punctuation.
func toolName(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "`'\"*_ \t")
	if i := strings.IndexAny(s, " \t({"); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(s, "`'\"*_.,;:")
}

// View is the conversation a ReAct model is sent, from the recorded one.
// The record keeps OpenAI tool calling (each action is an assistant message
// holding the model's text and the call, answered by a tool message); the
// model sees that same conversation as text:
//
//   - an assistant message is its text, cut after the Action Input (see
//     Parsed.End); when it carries calls its text does not spell out (a
//     server that parsed native calls anyway), they are written as
//     Action/Action Input lines;
//   - the tool messages answering an assistant message become one user
//     message "Observation: <result>" (one line per result);
//   - system and user messages are unchanged.
//
// No message of the view has tool calls, so it is sent without tools.
func View(msgs []trajectory.Message) []trajectory.Message {
	out := make([]trajectory.Message, 0, len(msgs))
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case trajectory.RoleAssistant:
			out = append(out, trajectory.Message{Role: m.Role, Content: AssistantText(m)})
		case trajectory.RoleTool:
			var obs []string
			for ; i < len(msgs) && msgs[i].Role == trajectory.RoleTool; i++ {
				obs = append(obs, Observation(msgs[i].Content))
			}
			i--
			out = append(out, trajectory.Message{Role: trajectory.RoleUser, Content: strings.Join(obs, "\n")})
		default:
			out = append(out, trajectory.Message{Role: m.Role, Content: m.Content, Name: m.Name})
		}
	}
	return out
}

// AssistantText is how a recorded assistant message is sent back to a
// ReAct model (see View).
func AssistantText(m trajectory.Message) string {
	if len(m.ToolCalls) == 0 {
		return m.Content
	}
	if p := ParseReAct(m.Content); p.Kind == Action && len(m.ToolCalls) == 1 && p.Tool == m.ToolCalls[0].Function.Name {
		return strings.TrimRight(m.Content[:p.End], " \t\r\n")
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(m.Content))
	for _, tc := range m.ToolCalls {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Action: " + tc.Function.Name + "\nAction Input: " + tc.Function.Arguments)
	}
	return b.String()
}
