package protocol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/agent/protocol"
)

func TestFindMarkup(t *testing.T) {
	known := func(n string) bool { return n == "send_email" || n == "list_all" }
	cases := []struct {
		name, text, format string
		calls              []string // name=args
		broken             bool
		rest               string
	}{
		{"hermes", "Sure.\n<tool_call>\n{\"name\": \"send_email\", \"arguments\": {\"to\": \"a\"}}\n</tool_call>", protocol.MarkupHermes, []string{`send_email={"to":"a"}`}, false, "Sure."},
		{"hermes two, unterminated last", "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}", protocol.MarkupHermes, []string{`a={}`, `b={"x":1}`}, false, ""},
		{"hermes parameters key and string arguments", `<tool_call>{"name":"a","parameters":"{\"x\":1}"}</tool_call>`, protocol.MarkupHermes, []string{`a={"x":1}`}, false, ""},
		{"hermes broken", `<tool_call>{"name": "send_email", "arguments": {"to": </tool_call>`, protocol.MarkupHermes, []string{`send_email=`}, true, ""},
		{"mistral array", `[TOOL_CALLS][{"name": "send_email", "arguments": {"to": "a"}}]`, protocol.MarkupMistral, []string{`send_email={"to":"a"}`}, false, ""},
		{"mistral v11", `[TOOL_CALLS]send_email[ARGS]{"to": "a"}`, protocol.MarkupMistral, []string{`send_email={"to":"a"}`}, false, ""},
		{"phi", `<|tool_call|>[{"name": "send_email", "arguments": {"to": "a"}}]<|/tool_call|>`, protocol.MarkupPhi, []string{`send_email={"to":"a"}`}, false, ""},
		{"function tag json", `<function=send_email>{"to": "a"}</function>`, protocol.MarkupFunctionTag, []string{`send_email={"to":"a"}`}, false, ""},
		{"function tag parameters", "<function=send_email>\n<parameter=to>\na\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>", protocol.MarkupFunctionTag, []string{`send_email={"n":3,"to":"a"}`}, false, ""},
		{"bare json", `{"name": "send_email", "arguments": {"to": "a"}}`, protocol.MarkupJSON, []string{`send_email={"to":"a"}`}, false, ""},
		{"fenced bare json", "```json\n{\"name\": \"list_all\", \"parameters\": {}}\n```", protocol.MarkupJSON, []string{`list_all={}`}, false, ""},
		{"bare json naming no tool is an answer", `{"name": "Alice", "arguments": {"x": 1}}`, "", nil, false, ""},
		{"prose", "I drafted the email to Alice.", "", nil, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := protocol.FindMarkup(tc.text, known)
			require.Equal(t, tc.format, m.Format)
			assert.Equal(t, tc.broken, m.Broken)
			var got []string
			for _, c := range m.Calls {
				got = append(got, c.Name+"="+string(c.Args))
			}
			assert.Equal(t, tc.calls, got)
			if tc.format != "" {
				assert.Equal(t, tc.rest, m.Rest)
			}
		})
	}
}
