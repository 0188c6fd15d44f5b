package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/rollout/dataset"
)

// chatTemplate is one model's real chat template (testdata/chat_templates,
// sources in the README there) and the rules it imposes on our rows.
type chatTemplate struct {
	name string
	file string
	vars map[string]jinja.Value // special tokens the tokenizer passes in
	// callFormat is how the template writes one tool call, with %s for the
	// name and %s for the arguments as tojson renders them; "" when the
	// template does not render tool calls at all.
	callFormat string
	// oneCallPerTurn: the template raises on an assistant turn that carries
	// a tool_calls key with anything but exactly one call.
	oneCallPerTurn bool
	// renderTools: the template writes the tools list into the prompt.
	renderTools bool
	// toolKeysSorted: the rendered tool block has its keys sorted, so it
	// cannot show a re-ordered tools list. Llama-3.1 writes tools with
	// tojson(indent=4), which ardanlabs/jinja v1.8.0 encodes with sorted keys
	// where Python's json.dumps keeps them in order; key order is then
	// checked through the Qwen templates (plain tojson keeps the order).
	toolKeysSorted bool
	// family is the --template-compat layout the template's rows need
	// ("" for the default OpenAI layout).
	family dataset.Compat
	// argsText: the template writes a call's arguments as the text the
	// row holds (a JSON string), not through tojson (DeepSeek-V3).
	argsText bool
	// turnMarker counts the assistant turns of a content-only template
	// (Phi-3.5, Gemma), and userMarker its user turns.
	turnMarker, userMarker string

	tmpl *jinja.Template
}

var chatTemplates = []*chatTemplate{
	{name: "Qwen2.5", file: "qwen2.5-instruct.jinja", callFormat: "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", renderTools: true},
	{name: "Qwen3", file: "qwen3.jinja", callFormat: "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", renderTools: true},
	{name: "Llama-3.1", file: "llama-3.1-instruct.jinja", vars: map[string]jinja.Value{"bos_token": jinja.NewString("<|begin_of_text|>")},
		callFormat: "{\"name\": \"%s\", \"parameters\": %s}<|eot_id|>", oneCallPerTurn: true, renderTools: true, toolKeysSorted: true},
	{name: "Llama-3.2", file: "llama-3.2-instruct.jinja", vars: map[string]jinja.Value{"bos_token": jinja.NewString("<|begin_of_text|>")},
		callFormat: "{\"name\": \"%s\", \"parameters\": %s}<|eot_id|>", oneCallPerTurn: true, renderTools: true, toolKeysSorted: true},
	// Phi-3.5-mini-instruct's template renders system, user and assistant
	// content only: tool calls, tool results and the tools list vanish.
	{name: "Phi-3.5", file: "phi-3.5-mini-instruct.jinja", vars: map[string]jinja.Value{"eos_token": jinja.NewString("<|endoftext|>")},
		turnMarker: "<|assistant|>\n", userMarker: "<|user|>\n"},
	// Mistral's tool templates add the system message to the last user
	// turn only and require 9-character call ids: --template-compat mistral.
	{name: "Mistral-7B-v0.3", file: "mistral-7b-instruct-v0.3.jinja", family: dataset.CompatMistral, renderTools: true,
		vars:       map[string]jinja.Value{"bos_token": jinja.NewString("<s>"), "eos_token": jinja.NewString("</s>")},
		callFormat: "{\"name\": \"%s\", \"arguments\": %s, \"id\": \""},
	{name: "Mistral-Nemo", file: "mistral-nemo-instruct-2407.jinja", family: dataset.CompatMistral, renderTools: true,
		vars:       map[string]jinja.Value{"bos_token": jinja.NewString("<s>"), "eos_token": jinja.NewString("</s>")},
		callFormat: "{\"name\": \"%s\", \"arguments\": %s, \"id\": \""},
	// Gemma has no system, tool or tool-call rendering: --template-compat gemma.
	{name: "Gemma-2", file: "gemma-2-it.jinja", family: dataset.CompatGemma, vars: map[string]jinja.Value{"bos_token": jinja.NewString("<bos>")},
		turnMarker: "<start_of_turn>model\n", userMarker: "<start_of_turn>user\n"},
	{name: "Gemma-3", file: "gemma-3-it.jinja", family: dataset.CompatGemma, vars: map[string]jinja.Value{"bos_token": jinja.NewString("<bos>")},
		turnMarker: "<start_of_turn>model\n", userMarker: "<start_of_turn>user\n"},
	// DeepSeek-V3 concatenates arguments as text: --template-compat deepseek.
	{name: "DeepSeek-V3", file: "deepseek-v3-0324.jinja", family: dataset.CompatDeepSeek, argsText: true,
		vars:       map[string]jinja.Value{"bos_token": jinja.NewString("<｜begin▁of▁sentence｜>")},
		callFormat: "<｜tool▁sep｜>%s\n```json\n%s\n```<｜tool▁call▁end｜>"},
}

// templatesFor are the templates rows of a layout are checked against: the
// family's own, and Qwen2.5 besides for the mistral and gemma layouts
// (whose rows stay readable by the default templates; deepseek's string
// arguments would be double-encoded by Qwen's tojson).
func templatesFor(f dataset.Compat) []*chatTemplate {
	var out []*chatTemplate
	for _, ct := range chatTemplates {
		if ct.family == f || ((f == dataset.CompatMistral || f == dataset.CompatGemma) && ct.name == "Qwen2.5") {
			out = append(out, ct)
		}
	}
	return out
}

func loadChatTemplates(t *testing.T) {
	t.Helper()
	for _, ct := range chatTemplates {
		if ct.tmpl != nil {
			continue
		}
		src, err := os.ReadFile(filepath.Join("testdata", "chat_templates", ct.file))
		require.NoError(t, err)
		ct.tmpl, err = jinja.Compile(string(src))
		require.NoError(t, err, ct.file)
	}
}

// render is apply_chat_template(messages, tools=tools, add_generation_prompt=gen, tokenize=False).
func (ct *chatTemplate) render(msgs []jinja.Value, tools jinja.Value, gen bool) (string, error) {
	data := map[string]jinja.Value{
		"messages":              jinja.NewList(msgs),
		"tools":                 tools,
		"add_generation_prompt": jinja.NewBool(gen),
	}
	for k, v := range ct.vars {
		data[k] = v
	}
	return ct.tmpl.RenderValues(data)
}

// jsonValue decodes JSON into a template value keeping object key order, as
// Python's json.loads does: a re-ordered key would show in the rendering.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return jinja.Undefined(), fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", tok)
	default:
		return jinja.FromGoValue(tok), nil
	}
}

func messageList(t *testing.T, raw json.RawMessage, where string) []jinja.Value {
	t.Helper()
	v, err := jsonValue(raw)
	require.NoError(t, err, where)
	require.True(t, v.IsList(), "%s: not a list of messages", where)
	return v.AsList().Items
}

func field(v jinja.Value, key string) (jinja.Value, bool) {
	if !v.IsDict() {
		return jinja.Undefined(), false
	}
	return v.AsDict().Get(key)
}

func str(v jinja.Value, key string) string {
	f, ok := field(v, key)
	if !ok || !f.IsString() {
		return ""
	}
	return f.AsString()
}

// refused counts, per template, the conversations it cannot render by its
// stated rule (Llama-3.1: one call per turn).
var refused = map[string]int{}

var tojson = func() *jinja.Template {
	t, err := jinja.Compile("{{ x | tojson }}")
	if err != nil {
		panic(err)
	}
	return t
}()

// checkConversation renders one conversation through every template and
// asserts the rules of this check; it returns how many renderings it made.
func checkConversation(t *testing.T, where string, tmpls []*chatTemplate, prompt, completion []jinja.Value, tools jinja.Value) int {
	t.Helper()
	full := append(append([]jinja.Value{}, prompt...), completion...)
	// What the conversation holds, for the per-template rules.
	var calls [][3]string // name, arguments as tojson renders them, arguments as text
	multiCall, roles := false, map[string]int{}
	for _, m := range full {
		roles[str(m, "role")]++
		tc, has := field(m, "tool_calls")
		if !has {
			continue
		}
		require.True(t, tc.IsList(), "%s: tool_calls not a list", where)
		if len(tc.AsList().Items) != 1 {
			multiCall = true
		}
		for _, c := range tc.AsList().Items {
			fn, _ := field(c, "function")
			args, _ := field(fn, "arguments")
			if args.IsString() {
				// --template-compat deepseek: the arguments' JSON text
				var obj map[string]any
				require.NoError(t, json.Unmarshal([]byte(args.AsString()), &obj), "%s: string arguments that are not a JSON object", where)
				calls = append(calls, [3]string{str(fn, "name"), "", args.AsString()})
				continue
			}
			require.True(t, args.IsDict(), "%s: tool-call arguments are not an object (double-encoded?)", where)
			js, err := tojson.RenderValues(map[string]jinja.Value{"x": args})
			require.NoError(t, err)
			calls = append(calls, [3]string{str(fn, "name"), js, ""})
		}
	}
	n := 0
	for _, ct := range tmpls {
		p, perr := ct.render(prompt, tools, true)
		f, ferr := ct.render(full, tools, false)
		n += 2
		if ct.oneCallPerTurn && multiCall {
			// Llama-3.1 takes exactly one call per assistant turn and raises
			// otherwise: such rows cannot be trained on with this template.
			require.Error(t, ferr, "%s %s: a turn with several tool calls must not render", ct.name, where)
			refused[ct.name]++
			assert.Contains(t, ferr.Error(), "single tool-calls", "%s %s", ct.name, where)
			continue
		}
		require.NoError(t, perr, "%s %s: prompt", ct.name, where)
		require.NoError(t, ferr, "%s %s: prompt + completion", ct.name, where)
		require.True(t, strings.HasPrefix(f, p), "%s %s: the prompt rendering is not a prefix of prompt + completion\nprompt:\n%s\nfull:\n%s", ct.name, where, p, f)
		if ct.callFormat == "" {
			// The template renders user, system and assistant turns only.
			assert.Equal(t, roles["assistant"], strings.Count(f, ct.turnMarker), "%s %s", ct.name, where)
			assert.Equal(t, roles["user"], strings.Count(f, ct.userMarker), "%s %s", ct.name, where)
			assert.NotContains(t, f, "tool_call", "%s %s", ct.name, where)
			continue
		}
		for _, c := range calls {
			if ct.argsText != (c[2] != "") {
				continue // a layout this template's family does not write
			}
			args := c[1]
			if ct.argsText {
				args = c[2]
			}
			frag := fmt.Sprintf(ct.callFormat, c[0], args)
			require.Contains(t, f, frag, "%s %s: tool call not rendered with its arguments", ct.name, where)
		}
		if !ct.argsText {
			assert.NotContains(t, f, `"arguments": "`, "%s %s: arguments rendered as a JSON string", ct.name, where)
			assert.NotContains(t, f, `"parameters": "{`, "%s %s: arguments rendered as a JSON string", ct.name, where)
		}
	}
	return n
}

// checkTable renders every row of one exported JSONL table. reqTools, when
// non-nil, maps a tool-name signature to the tools lists requests carried.
func checkTable(t *testing.T, path string, reqTools map[string][][]byte) (rows, renders int) {
	t.Helper()
	family := dataset.CompatNone
	for _, c := range dataset.Compats {
		if strings.Contains(path, "compat-"+string(c)) {
			family = c
		}
	}
	tmpls := templatesFor(family)
	for i, r := range jsonlRows(t, path) {
		where := fmt.Sprintf("%s row %d", filepath.Base(path), i)
		var format string
		require.NoError(t, json.Unmarshal(r["tool_format"], &format), where)
		tools := jinja.None()
		if tv, err := jsonValue(r["tools"]); assert.NoError(t, err, where) && tv.IsList() && len(tv.AsList().Items) > 0 {
			tools = tv
		}
		// --tools-in-system exports carry the schemas in the system message
		inSystem := strings.Contains(path, "tools-in-system") || family == dataset.CompatGemma
		require.Equal(t, format == "text" || inSystem, tools.IsNone(), "%s: only text-protocol rows (and --tools-in-system exports) go without tools", where)
		if reqTools != nil && !tools.IsNone() && family == dataset.CompatNone {
			renders += checkToolBlock(t, where, r["tools"], tools, reqTools)
		}
		switch {
		case r["chosen"] != nil:
			prompt := messageList(t, r["prompt"], where)
			renders += checkConversation(t, where+" chosen", tmpls, prompt, messageList(t, r["chosen"], where), tools)
			renders += checkConversation(t, where+" rejected", tmpls, prompt, messageList(t, r["rejected"], where), tools)
		case r["completion"] != nil:
			renders += checkConversation(t, where+" completion", tmpls, messageList(t, r["prompt"], where), messageList(t, r["completion"], where), tools)
		case r["messages"] != nil:
			// A trajectory: every assistant turn, with what came before it
			// as the prompt (what SFT and multi-turn RL cut it into).
			msgs := messageList(t, r["messages"], where)
			cut := 0
			for k, m := range msgs {
				if k > 0 && str(m, "role") == "assistant" {
					renders += checkConversation(t, fmt.Sprintf("%s turn %d", where, k), tmpls, msgs[:k], msgs[k:k+1], tools)
					cut++
				}
			}
			require.Positive(t, cut, "%s: a trajectory with no assistant turn", where)
		default:
			t.Fatalf("%s: a table this check does not know (columns %v)", where, keys(r))
		}
		rows++
	}
	return rows, renders
}

func keys(r map[string]json.RawMessage) []string {
	var ks []string
	for k := range r {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// toolSignature names the tools of a list in order: the key by which a row's
// tools find the requests that sent the same tools.
func toolSignature(t *testing.T, raw []byte) string {
	var ts []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	require.NoError(t, json.Unmarshal(raw, &ts))
	var names []string
	for _, tl := range ts {
		names = append(names, tl.Function.Name)
	}
	return strings.Join(names, ",")
}

// checkToolBlock: the tool block a template renders from the row's tools is
// the one it renders from the tools some request with those tools sent.
func checkToolBlock(t *testing.T, where string, raw json.RawMessage, tools jinja.Value, reqTools map[string][][]byte) int {
	t.Helper()
	sig := toolSignature(t, raw)
	cands := reqTools[sig]
	require.NotEmpty(t, cands, "%s: no request sent the tools %s", where, sig)
	probe := []jinja.Value{jinja.FromGoValue(map[string]any{"role": "user", "content": "x"})}
	n := 0
	for _, ct := range templatesFor(dataset.CompatNone) {
		row, err := ct.render(probe, tools, true)
		require.NoError(t, err, "%s %s", ct.name, where)
		bare, err := ct.render(probe, jinja.None(), true)
		require.NoError(t, err)
		n += 2
		if !ct.renderTools {
			assert.Equal(t, bare, row, "%s %s: this template writes no tools", ct.name, where)
			continue
		}
		assert.NotEqual(t, bare, row, "%s %s: tools not rendered", ct.name, where)
		match := false
		for _, c := range cands {
			rv, err := jsonValue(c)
			require.NoError(t, err)
			sent, err := ct.render(probe, rv, true)
			require.NoError(t, err)
			n++
			if sent == row {
				match = true
				break
			}
		}
		assert.True(t, match, "%s %s: the tool block rendered from the row's tools differs from every request's", ct.name, where)
	}
	return n
}

// TestChatTemplatesRenderEveryRow renders every row of every exported table,
// from each framework over HTTP (the demo's tables: TestDemoMakesEveryArtifact),
// through the real chat
// templates of Qwen2.5, Qwen3, Llama-3.1 and Phi-3.5.
func TestChatTemplatesRenderEveryRow(t *testing.T) {
	loadChatTemplates(t)
	dir, runs, cap := frameworkTables(t, 2)
	// the other layouts: whole rests with tool results, and the schemas in the system message
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "pairs-rest"), "--format", "jsonl", "--step-pairs", "--step-continuation", "rest", "--completion", "rest"}, runs...)...)
	runCmd(t, append([]string{"export", "--table", "kto", "--out", filepath.Join(dir, "kto-rest"), "--format", "jsonl", "--completion", "rest"}, runs...)...)
	runCmd(t, append([]string{"rewards", "--out", filepath.Join(dir, "rewards-tools-in-system"), "--format", "jsonl", "--tools-in-system"}, runs...)...)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "pairs-tools-in-system"), "--format", "jsonl", "--tools-in-system", "--pair-types", "step,trajectory"}, runs...)...)
	runCmd(t, append([]string{"pairs", "--out", filepath.Join(dir, "pairs-model-turns"), "--format", "jsonl", "--pair-types", "step,trajectory", "--completion", "model-turns"}, runs...)...)
	// the rows each --template-compat writes, checked against its family
	for _, c := range dataset.Compats {
		pre := filepath.Join(dir, "compat-"+string(c)+"-")
		runCmd(t, append([]string{"pairs", "--out", pre + "pairs", "--format", "jsonl", "--pair-types", "step,trajectory", "--template-compat", string(c)}, runs...)...)
		runCmd(t, append([]string{"export", "--table", "kto", "--out", pre + "kto", "--format", "jsonl", "--template-compat", string(c)}, runs...)...)
		runCmd(t, append([]string{"export", "--table", "trajectories", "--out", pre + "trajectories", "--format", "jsonl", "--template-compat", string(c)}, runs...)...)
		runCmd(t, append([]string{"rewards", "--out", pre + "rewards", "--format", "jsonl", "--template-compat", string(c)}, runs...)...)
	}

	reqTools := map[string][][]byte{}
	for list := range cap.lists {
		raw := []byte("[" + strings.ReplaceAll(list, "\n", ",") + "]")
		sig := toolSignature(t, raw)
		reqTools[sig] = append(reqTools[sig], raw)
	}
	require.NotEmpty(t, reqTools)

	checkRenderedTables(t, "frameworks over HTTP", dir, reqTools)
	checkTrainerRowsV3(t, dir, runs)
	// the check bites: model-turns completions use ids from omitted results
	traj := trajectoryMessages(t, filepath.Join(dir, "trajectories", "jsonl", "trajectories.jsonl"))
	calls, bad := omittedArgs(t, filepath.Join(dir, "pairs-model-turns", "jsonl", "dpo.jsonl"), traj)
	t.Logf("--completion model-turns: %d of %d calls use an argument only an omitted tool result holds", bad, calls)
	assert.Positive(t, bad, "the omitted-result check finds the model-turns layout's calls")
}

// checkRenderedTables renders every row of every JSONL table under root
// (root/<table dir>/jsonl/*.jsonl); TestDemoMakesEveryArtifact calls it on
// the demo's tables.
func checkRenderedTables(t *testing.T, name, root string, reqTools map[string][][]byte) {
	t.Helper()
	loadChatTemplates(t)
	files, err := filepath.Glob(filepath.Join(root, "*", "jsonl", "*.jsonl"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
	}
	for _, want := range []string{"dpo", "rewards", "kto", "trajectories"} {
		require.Contains(t, names, want, "%s: table %s not exported", name, want)
	}
	total, renders, t0 := 0, 0, time.Now()
	for _, f := range files {
		n, r := checkTable(t, f, reqTools)
		require.Positive(t, n, f)
		total += n
		renders += r
	}
	t.Logf("%s: %d rows of %v rendered %d times through the templates of their layouts (%d templates known) in %s; refused by rule: %v", name, total, names, renders, len(chatTemplates), time.Since(t0), refused)
}

// TestChatTemplateRules pins what the checks above rely on, on hand-made
// rows: each way a row can be wrong shows in the rendering.
func TestChatTemplateRules(t *testing.T) {
	loadChatTemplates(t)
	msgs := func(s string) []jinja.Value {
		v, err := jsonValue([]byte(s))
		require.NoError(t, err)
		return v.AsList().Items
	}
	tools := func(s string) jinja.Value {
		v, err := jsonValue([]byte(s))
		require.NoError(t, err)
		return v
	}
	prompt := `{"role":"system","content":"s"},{"role":"user","content":"u"}`
	oneCall := `[` + prompt + `,{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]`
	twoCalls := `[` + prompt + `,{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}},{"id":"c2","type":"function","function":{"name":"g","arguments":{}}}]}]`
	encoded := `[` + prompt + `,{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}]`
	sent := tools(`[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{}}}}]`)
	reordered := tools(`[{"function":{"description":"d","name":"f","parameters":{"properties":{},"type":"object"}},"type":"function"}]`)

	for _, ct := range templatesFor(dataset.CompatNone) {
		t.Run(ct.name, func(t *testing.T) {
			one, err := ct.render(msgs(oneCall), sent, false)
			require.NoError(t, err)
			_, err = ct.render(msgs(twoCalls), sent, false)
			if ct.oneCallPerTurn {
				require.Error(t, err, "two calls in one turn")
				assert.Contains(t, err.Error(), "single tool-calls")
			} else {
				require.NoError(t, err)
			}
			enc, err := ct.render(msgs(encoded), sent, false)
			require.NoError(t, err)
			a, err := ct.render(msgs(oneCall), sent, true)
			require.NoError(t, err)
			b, err := ct.render(msgs(oneCall), reordered, true)
			require.NoError(t, err)
			if ct.callFormat == "" {
				assert.Equal(t, one, enc, "the template drops tool calls")
				assert.Equal(t, a, b, "the template drops tools")
				return
			}
			assert.Contains(t, one, fmt.Sprintf(ct.callFormat, "f", `{"a": 1}`))
			assert.NotContains(t, enc, fmt.Sprintf(ct.callFormat, "f", `{"a": 1}`), "double-encoded arguments render differently")
			if ct.toolKeysSorted {
				assert.Equal(t, a, b, "this engine sorts the keys of this template's tool block")
			} else {
				assert.NotEqual(t, a, b, "re-ordered tool keys change the prompt the model sees")
			}
		})
	}
}

// TestTemplateCompatRules: the default rows break the Mistral, Gemma and
// DeepSeek templates in the ways the issue measured, and each
// --template-compat rewriting (dataset.FinishRow) makes them render with
// the prompt a prefix of prompt + completion, every call and result kept.
func TestTemplateCompatRules(t *testing.T) {
	loadChatTemplates(t)
	raw := func(s string) []json.RawMessage {
		var ms []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s), &ms))
		return ms
	}
	vals := func(ms []json.RawMessage) []jinja.Value {
		b, err := json.Marshal(ms)
		require.NoError(t, err)
		v, err := jsonValue(b)
		require.NoError(t, err)
		return v.AsList().Items
	}
	toolsRaw := raw(`[{"type":"function","function":{"name":"get_order","description":"d","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}}]`)
	prompt := raw(`[{"role":"system","content":"You are an agent."},{"role":"user","content":"Refund order 7."},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"call_abc_0","type":"function","function":{"name":"get_order","arguments":{"id":"7"}}}]},` +
		`{"role":"tool","content":"{\"order\":\"A-7\"}","tool_call_id":"call_abc_0","name":"get_order"}]`)
	completion := raw(`[{"role":"assistant","content":"","tool_calls":[{"id":"call_abc_1","type":"function","function":{"name":"get_order","arguments":{"id":"A-7"}}}]}]`)
	for _, c := range dataset.Compats {
		t.Run(string(c), func(t *testing.T) {
			var fam []*chatTemplate
			for _, ct := range chatTemplates {
				if ct.family == c {
					fam = append(fam, ct)
				}
			}
			require.NotEmpty(t, fam)
			tv, err := jsonValue([]byte(`[` + string(toolsRaw[0]) + `]`))
			require.NoError(t, err)
			// the default layout: each template fails or mis-splits
			for _, ct := range fam {
				p, perr := ct.render(vals(prompt), tv, true)
				f, ferr := ct.render(vals(append(append([]json.RawMessage{}, prompt...), completion...)), tv, false)
				broken := perr != nil || ferr != nil || !strings.HasPrefix(f, p)
				if ct.argsText {
					// Python's Jinja raises on str + dict; this engine
					// renders the dict, not the arguments' JSON text
					broken = broken || !strings.Contains(f, "```json\n{\"id\":\"A-7\"}\n```")
				}
				assert.True(t, broken, "%s renders the default layout correctly: the compat layout would not be needed", ct.name)
			}
			// the compat layout: renders, prefix holds, the call is there
			comp := append([]json.RawMessage{}, completion...)
			o := dataset.RenderOptions{Compat: c}
			p2, t2 := dataset.FinishRow(o, append([]json.RawMessage{}, prompt...), toolsRaw, &comp)
			tools := jinja.None()
			if len(t2) > 0 {
				tools = tv
			}
			n := checkConversation(t, "compat "+string(c), templatesFor(c), vals(p2), vals(comp), tools)
			assert.Positive(t, n)
			for _, ct := range fam {
				f, err := ct.render(vals(append(append([]json.RawMessage{}, p2...), comp...)), tools, false)
				require.NoError(t, err, ct.name)
				assert.Contains(t, f, "You are an agent.", "%s: the system text is kept", ct.name)
				assert.Contains(t, f, "A-7", "%s: the tool result and the call that uses it are kept", ct.name)
			}
		})
	}
}
