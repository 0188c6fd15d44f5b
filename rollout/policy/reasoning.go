package policy

import "strings"

// Reasoning markup that models write into content when the server does not
// separate it (vLLM without --reasoning-parser, llama.cpp with
// --reasoning-format none, Ollama without think).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// SplitReasoning takes <think>…</think> blocks out of content and returns
// the answer and the reasoning apart. It handles the forms servers leave:
//
//   - one or more closed blocks anywhere in the content;
//   - a lone closing tag whose opening tag was part of the prompt (DeepSeek-R1
//     and Qwen3 templates end the generation prompt with "<think>\n"): what
//     precedes it is reasoning;
//   - an unclosed block (the turn was cut, or the model never closed it):
//     everything after the opening tag is reasoning.
//
// Content without the tags is returned unchanged with reasoning "".
func SplitReasoning(content string) (answer, reasoning string) {
	if !strings.Contains(content, thinkOpen) && !strings.Contains(content, thinkClose) {
		return content, ""
	}
	var ans, why []string
	rest := content
	// A closing tag before any opening tag: the opening one was in the prompt.
	if c, o := strings.Index(rest, thinkClose), strings.Index(rest, thinkOpen); c >= 0 && (o < 0 || c < o) {
		why = append(why, rest[:c])
		rest = rest[c+len(thinkClose):]
	}
	for {
		o := strings.Index(rest, thinkOpen)
		if o < 0 {
			ans = append(ans, rest)
			break
		}
		ans = append(ans, rest[:o])
		rest = rest[o+len(thinkOpen):]
		c := strings.Index(rest, thinkClose)
		if c < 0 {
			why = append(why, rest)
			break
		}
		why = append(why, rest[:c])
		rest = rest[c+len(thinkClose):]
	}
	for i := range why {
		why[i] = strings.TrimSpace(why[i])
	}
	return strings.TrimSpace(strings.Join(ans, "")), strings.TrimSpace(strings.Join(nonEmpty(why), "\n\n"))
}

func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
