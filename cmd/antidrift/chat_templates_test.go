package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/antidrift/antidrift/export/chattemplate"
	"github.com/antidrift/antidrift/rollout/dataset"
)

// The templates and their rules live in export/chattemplate (inspect
// --trainer renders a user's rows through them too).
type chatTemplate = chattemplate.Template

var chatTemplates = chattemplate.All

func templatesFor(f dataset.Compat) []*chatTemplate { return chattemplate.For(f) }

func loadChatTemplates(t *testing.T) {
	t.Helper()
	for _, ct := range chatTemplates {
		require.NoError(t, ct.Compile(), ct.File)
	}
}

func jsonValue(raw []byte) (jinja.Value, error) { return chattemplate.Decode(raw) }

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
		p, perr := ct.Render(prompt, tools, true)
		f, ferr := ct.Render(full, tools, false)
		n += 2
		if ct.OneCallPerTurn && multiCall {
			// Llama-3.1 takes exactly one call per assistant turn and raises
			// otherwise: such rows cannot be trained on with this template.
			require.Error(t, ferr, "%s %s: a turn with several tool calls must not render", ct.Name, where)
			refused[ct.Name]++
			assert.Contains(t, ferr.Error(), "single tool-calls", "%s %s", ct.Name, where)
			continue
		}
		require.NoError(t, perr, "%s %s: prompt", ct.Name, where)
		require.NoError(t, ferr, "%s %s: prompt + completion", ct.Name, where)
		require.True(t, strings.HasPrefix(f, p), "%s %s: the prompt rendering is not a prefix of prompt + completion\nprompt:\n%s\nfull:\n%s", ct.Name, where, p, f)
		if ct.CallFormat == "" {
			// The template renders user, system and assistant turns only.
			assert.Equal(t, roles["assistant"], strings.Count(f, ct.TurnMarker), "%s %s", ct.Name, where)
			assert.Equal(t, roles["user"], strings.Count(f, ct.UserMarker), "%s %s", ct.Name, where)
			assert.NotContains(t, f, "tool_call", "%s %s", ct.Name, where)
			continue
		}
		for _, c := range calls {
			if ct.ArgsText != (c[2] != "") {
				continue // a layout this template's family does not write
			}
			args := c[1]
			if ct.ArgsText {
				args = c[2]
			}
			frag := fmt.Sprintf(ct.CallFormat, c[0], args)
			require.Contains(t, f, frag, "%s %s: tool call not rendered with its arguments", ct.Name, where)
		}
		if !ct.ArgsText {
			assert.NotContains(t, f, `"arguments": "`, "%s %s: arguments rendered as a JSON string", ct.Name, where)
			assert.NotContains(t, f, `"parameters": "{`, "%s %s: arguments rendered as a JSON string", ct.Name, where)
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
		row, err := ct.Render(probe, tools, true)
		require.NoError(t, err, "%s %s", ct.Name, where)
		bare, err := ct.Render(probe, jinja.None(), true)
		require.NoError(t, err)
		n += 2
		if !ct.RenderTools {
			assert.Equal(t, bare, row, "%s %s: this template writes no tools", ct.Name, where)
			continue
		}
		assert.NotEqual(t, bare, row, "%s %s: tools not rendered", ct.Name, where)
		match := false
		for _, c := range cands {
			rv, err := jsonValue(c)
			require.NoError(t, err)
			sent, err := ct.Render(probe, rv, true)
			require.NoError(t, err)
			n++
			if sent == row {
				match = true
				break
			}
		}
		assert.True(t, match, "%s %s: the tool block rendered from the row's tools differs from every request's", ct.Name, where)
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
		t.Run(ct.Name, func(t *testing.T) {
			one, err := ct.Render(msgs(oneCall), sent, false)
			require.NoError(t, err)
			_, err = ct.Render(msgs(twoCalls), sent, false)
			if ct.OneCallPerTurn {
				require.Error(t, err, "two calls in one turn")
				assert.Contains(t, err.Error(), "single tool-calls")
			} else {
				require.NoError(t, err)
			}
			enc, err := ct.Render(msgs(encoded), sent, false)
			require.NoError(t, err)
			a, err := ct.Render(msgs(oneCall), sent, true)
			require.NoError(t, err)
			b, err := ct.Render(msgs(oneCall), reordered, true)
			require.NoError(t, err)
			if ct.CallFormat == "" {
				assert.Equal(t, one, enc, "the template drops tool calls")
				assert.Equal(t, a, b, "the template drops tools")
				return
			}
			assert.Contains(t, one, fmt.Sprintf(ct.CallFormat, "f", `{"a": 1}`))
			assert.NotContains(t, enc, fmt.Sprintf(ct.CallFormat, "f", `{"a": 1}`), "double-encoded arguments render differently")
			if ct.ToolKeysSorted {
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
				if ct.Family == c {
					fam = append(fam, ct)
				}
			}
			require.NotEmpty(t, fam)
			tv, err := jsonValue([]byte(`[` + string(toolsRaw[0]) + `]`))
			require.NoError(t, err)
			// the default layout: each template fails or mis-splits
			for _, ct := range fam {
				p, perr := ct.Render(vals(prompt), tv, true)
				f, ferr := ct.Render(vals(append(append([]json.RawMessage{}, prompt...), completion...)), tv, false)
				broken := perr != nil || ferr != nil || !strings.HasPrefix(f, p)
				if ct.ArgsText {
					// Python's Jinja raises on str + dict; this engine
					// renders the dict, not the arguments' JSON text
					broken = broken || !strings.Contains(f, "```json\n{\"id\":\"A-7\"}\n```")
				}
				assert.True(t, broken, "%s renders the default layout correctly: the compat layout would not be needed", ct.Name)
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
				f, err := ct.Render(vals(append(append([]json.RawMessage{}, p2...), comp...)), tools, false)
				require.NoError(t, err, ct.Name)
				assert.Contains(t, f, "You are an agent.", "%s: the system text is kept", ct.Name)
				assert.Contains(t, f, "A-7", "%s: the tool result and the call that uses it are kept", ct.Name)
			}
		})
	}
}
