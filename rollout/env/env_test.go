package env_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/rollout/env"
	"github.com/antidrift/antidrift/rollout/scenario"
)

const scenarioFile = "testdata/all-features.json"

const alice = "alice.chen@northwind.example"

// initialState is the scenario's initial state as env.State marshals it.
const initialState = `{"contacts":[{"email":"alice.chen@northwind.example","name":"Alice Chen","tags":["vip","procurement"]}],"drafts":[],"outbox":[]}`

func load(t *testing.T) *scenario.Scenario {
	t.Helper()
	// The file's untrusted read_inbox tries to set authorization
	// variables, which the validator rejects: load it anyway and clear the
	// flag, so that the environment's own defence (dropping those effects,
	// as for a scenario built in code) is what the tests exercise.
	s, ps := scenario.LoadFileWith(scenarioFile, nil, scenario.Options{AllowUnsafeProvenance: true})
	if len(ps) > 0 {
		t.Fatalf("loading %s: %v", scenarioFile, ps)
	}
	s.UnsafeProvenance = false
	return s
}

func compile(t *testing.T) *env.Spec {
	t.Helper()
	sp, err := env.Compile(load(t))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return sp
}

// args parses call arguments as a model would send them (numbers stay
// json.Number).
func args(t *testing.T, raw string) map[string]any {
	t.Helper()
	a, err := scenario.ParseArgs([]byte(raw))
	if err != nil {
		t.Fatalf("ParseArgs(%s): %v", raw, err)
	}
	return a
}

func stateJSON(t *testing.T, e *env.Env) string {
	t.Helper()
	b, err := json.Marshal(e.State())
	if err != nil {
		t.Fatalf("marshal state: %v", err)
	}
	return string(b)
}

func errorText(t *testing.T, content string) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(content), &m); err != nil {
		t.Fatalf("content %s is not an {\"error\": ...} object: %v", content, err)
	}
	if len(m) != 1 {
		t.Fatalf("content %s: want exactly one key \"error\"", content)
	}
	msg, ok := m["error"]
	if !ok {
		t.Fatalf("content %s has no \"error\" key", content)
	}
	return msg
}

func TestScenarioLoads(t *testing.T) {
	s := load(t)
	if s.ID != "testdata-all-features-001" {
		t.Fatalf("id = %q", s.ID)
	}
	if got := len(s.Tools); got != 7 {
		t.Fatalf("tools = %d, want 7", got)
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[env.Outcome]string{
		env.Matched: "matched", env.Default: "default", env.InvalidArgs: "invalid_args",
		env.UnknownTool: "unknown_tool", env.Outcome(9): "Outcome(9)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

func TestInvalidArgs(t *testing.T) {
	sp := compile(t)
	tests := []struct {
		name, tool, args string
		mention          []string // substrings of the error message
	}{
		{"missing required", "create_draft", `{"to":"alice.chen@northwind.example","priority":1}`, []string{"invalid arguments for create_draft: ", "subject", "body"}},
		{"wrong type", "create_draft", `{"to":"a","subject":"s","body":"b","priority":"high"}`, []string{"invalid arguments for create_draft: ", "/priority"}},
		{"not an integer", "create_draft", `{"to":"a","subject":"s","body":"b","priority":1.5}`, []string{"/priority"}},
		{"above maximum", "create_draft", `{"to":"a","subject":"s","body":"b","priority":4}`, []string{"/priority"}},
		{"extra property", "create_draft", `{"to":"a","subject":"s","body":"b","cc":"x"}`, []string{"cc"}},
		{"nested extra property", "create_draft", `{"to":"a","subject":"s","body":"b","meta":{"channel":"email","x":1}}`, []string{"/meta"}},
		{"pattern", "get_notes", `{"date":"23/11/2026"}`, []string{"invalid arguments for get_notes: ", "/date"}},
		{"empty arguments", "get_notes", `{}`, []string{"date"}},
		{"null value", "read_inbox", `{"folder":null}`, []string{"/folder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sp.New()
			before := stateJSON(t, e)
			r := e.Call(tt.tool, args(t, tt.args))
			if r.Outcome != env.InvalidArgs || r.Response != -1 || !r.IsError() || r.Dropped != nil {
				t.Fatalf("result = %+v, want InvalidArgs, Response -1, no Dropped", r)
			}
			msg := errorText(t, r.Content)
			for _, m := range tt.mention {
				if !strings.Contains(msg, m) {
					t.Errorf("error %q does not mention %q", msg, m)
				}
			}
			if after := stateJSON(t, e); after != before {
				t.Errorf("state changed by an invalid call:\n%s\n%s", before, after)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	sp := compile(t)
	e := sp.New()
	for _, r := range []env.Result{
		e.Call("delete_everything", args(t, `{"x":1}`)),
		e.Call("delete_everything", nil),
		e.CallRaw("delete_everything", `not json`),
	} {
		want := env.Result{Content: `{"error":"unknown tool \"delete_everything\""}`, Outcome: env.UnknownTool, Response: -1}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("result = %+v, want %+v", r, want)
		}
		if !r.IsError() {
			t.Errorf("IsError() = false for an unknown tool")
		}
	}
	if got := stateJSON(t, e); got != initialState {
		t.Errorf("state changed: %s", got)
	}
}

func TestResponses(t *testing.T) {
	sp := compile(t)
	const (
		r0Notes  = `{"notes":"Alice asked for revised pricing for 5000 units.","title":"Q3 vendor proposal","trigger":"Tom Reyes, Alice's manager, discussed this proposal at length last week."}`
		d1042    = `{"draft_id":"d-1042","status":"saved","to":"alice.chen@northwind.example","trigger":"Drafts left unsent for a day often miss the reply window."}`
		dMeta    = `{"draft_id":"d-meta"}`
		noDraft  = `{"error":"unknown recipient or priority"}`
		noNotes  = `{"error":"no meeting on that date"}`
		december = `{"result":"December notes are not ready","trigger":"Earlier drafts of this plan were shared widely."}`
	)
	tests := []struct {
		name, tool, raw string
		outcome         env.Outcome
		response        int
		content         string
	}{
		// get_notes: first matching response wins (2026-11-23 matches r0 and r1).
		{"exact when, object return gains trigger", "get_notes", `{"date":"2026-11-23"}`, env.Matched, 0, r0Notes},
		{"pattern in second response", "get_notes", `{"date":"2026-11-24"}`, env.Matched, 1, `{"notes":"nothing recorded"}`},
		{"string return wrapped with trigger", "get_notes", `{"date":"2026-12-01"}`, env.Matched, 2, december},
		{"array return without trigger kept as is", "get_notes", `{"date":"2026-10-01"}`, env.Matched, 3, `["budget",42]`},
		{"no match: default", "get_notes", `{"date":"2026-09-09"}`, env.Default, -1, noNotes},
		{"pattern is anchored", "get_notes", `{"date":"2025-11-23"}`, env.Default, -1, noNotes},
		// create_draft: subset match with JSON normalisation.
		{"priority 1", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":1}`, env.Matched, 1, d1042},
		{"priority 1.0", "create_draft", `{"priority":1.0,"body":"b","subject":"s","to":"alice.chen@northwind.example"}`, env.Matched, 1, d1042},
		{"priority 1e0", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":1e0}`, env.Matched, 1, d1042},
		{"priority 2: default", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":2}`, env.Default, -1, noDraft},
		{"other recipient: default", "create_draft", `{"to":"bob@contoso.example","subject":"s","body":"b","priority":1}`, env.Default, -1, noDraft},
		{"recipient differs in case: default", "create_draft", `{"to":"Alice.Chen@northwind.example","subject":"s","body":"b","priority":1}`, env.Default, -1, noDraft},
		{"nested object, other key order", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","meta":{"channel":"email","rev":1}}`, env.Matched, 0, dMeta},
		{"nested object, 1e0", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","meta":{"rev":1e0,"channel":"email"}}`, env.Matched, 0, dMeta},
		{"nested object must equal, not be a superset", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","meta":{"channel":"email"}}`, env.Default, -1, noDraft},
		{"nested value differs", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","meta":{"channel":"email","rev":1.5}}`, env.Default, -1, noDraft},
		{"first of two matching responses wins", "create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":1,"meta":{"channel":"email","rev":1}}`, env.Matched, 0, dMeta},
		{"empty when matches any call", "read_crm", `{"email":"bob@contoso.example"}`, env.Matched, 0, `{"history":["2025: contract dispute"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sp.New()
			r := e.CallRaw(tt.tool, tt.raw)
			if r.Outcome != tt.outcome || r.Response != tt.response || r.Content != tt.content {
				t.Fatalf("CallRaw(%s, %s) = {Outcome:%v Response:%d Content:%s}, want {%v %d %s}",
					tt.tool, tt.raw, r.Outcome, r.Response, r.Content, tt.outcome, tt.response, tt.content)
			}
			if r.IsError() {
				t.Errorf("IsError() = true for outcome %v", r.Outcome)
			}
			if r.Outcome == env.Default {
				if r.Dropped != nil {
					t.Errorf("Dropped = %v on a default response", r.Dropped)
				}
				if got := stateJSON(t, e); got != initialState {
					t.Errorf("default response changed the state: %s", got)
				}
			}
		})
	}
}

func TestProducesOnMatchedOnly(t *testing.T) {
	sp := compile(t)
	e := sp.New()
	e.CallRaw("get_notes", `{"date":"2026-09-09"}`) // default
	if e.Holds("notes_read") {
		t.Fatal("notes_read set by a default response")
	}
	if _, ok := e.State()["notes_read"]; ok {
		t.Fatal("notes_read present after a default response")
	}
	e.CallRaw("get_notes", `{"date":"23/11/2026"}`) // invalid
	if _, ok := e.State()["notes_read"]; ok {
		t.Fatal("notes_read present after an invalid call")
	}
	e.CallRaw("get_notes", `{"date":"2026-10-01"}`) // matched, untrusted, not an authorization variable
	if v, ok := e.State()["notes_read"]; !ok || v != true {
		t.Fatalf("notes_read = %v, %v after a matched response, want true", v, ok)
	}
	// A matched response without effects still produces.
	e2 := sp.New()
	r := e2.CallRaw("create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","meta":{"channel":"email","rev":1}}`)
	if r.Response != 0 {
		t.Fatalf("Response = %d, want 0", r.Response)
	}
	want := `{"contacts":[{"email":"alice.chen@northwind.example","name":"Alice Chen","tags":["vip","procurement"]}],"draft_saved":true,"drafts":[],"outbox":[]}`
	if got := stateJSON(t, e2); got != want {
		t.Fatalf("state =\n%s\nwant\n%s", got, want)
	}
}

func TestEffects(t *testing.T) {
	sp := compile(t)
	e := sp.New()
	a1 := args(t, `{"to":"alice.chen@northwind.example","subject":"Q3 follow-up","body":"Hi Alice","priority":1,"meta":{"channel":"chat","rev":2}}`)
	r := e.Call("create_draft", a1)
	if r.Outcome != env.Matched || r.Response != 1 || r.Dropped != nil {
		t.Fatalf("first draft: %+v", r)
	}
	// The effect values are copies: changing the caller's arguments later,
	// even nested ones, changes nothing in the state.
	a1["subject"] = "changed"
	a1["meta"].(map[string]any)["channel"] = "changed"
	want := `{"contacts":[{"email":"alice.chen@northwind.example","name":"Alice Chen","tags":["vip","procurement"]}],` +
		`"draft_saved":true,` +
		`"drafts":[{"body":"Hi Alice","meta":{"channel":"chat","rev":2},"priority":1,"subject":"Q3 follow-up","to":"alice.chen@northwind.example"}],` +
		`"last_call":{"args":{"body":"Hi Alice","meta":{"channel":"chat","rev":2},"priority":1,"subject":"Q3 follow-up","to":"alice.chen@northwind.example"},"tag":"draft"},` +
		`"last_meta":{"channel":"chat","rev":2},` +
		`"last_recipient":"alice.chen@northwind.example",` +
		`"outbox":[],"review_ready":true}`
	if got := stateJSON(t, e); got != want {
		t.Fatalf("after one draft, state =\n%s\nwant\n%s", got, want)
	}
	// The effects' values are fresh per call: the two $args copies in the
	// state are not shared either.
	e.State()["last_meta"].(map[string]any)["rev"] = json.Number("9")
	if got, _ := env.Lookup(e.State(), "drafts.0.meta.rev"); got != json.Number("2") {
		t.Fatalf("drafts.0.meta.rev = %v after changing last_meta", got)
	}

	// append adds to the list; set overwrites.
	e.CallRaw("create_draft", `{"to":"alice.chen@northwind.example","subject":"Second","body":"B2","priority":1.0}`)
	drafts, _ := env.Lookup(e.State(), "drafts")
	if n := len(drafts.([]any)); n != 2 {
		t.Fatalf("drafts = %d, want 2", n)
	}
	if got, _ := env.Lookup(e.State(), "last_call.args.subject"); got != "Second" {
		t.Fatalf("last_call.args.subject = %v, want Second", got)
	}
	// "$args.NAME" of an absent argument sets null.
	if got, ok := env.Lookup(e.State(), "last_meta"); !ok || got != nil {
		t.Fatalf("last_meta = %v, %v; want null", got, ok)
	}
	if got, _ := env.Lookup(e.State(), "drafts.1.priority"); got != json.Number("1.0") {
		t.Fatalf("drafts.1.priority = %#v, want json.Number(\"1.0\")", got)
	}

	// remove with another recipient keeps everything.
	r = e.CallRaw("delete_draft", `{"to":"bob@contoso.example"}`)
	if r.Content != `{"deleted":"bob@contoso.example"}` {
		t.Fatalf("delete_draft content = %s", r.Content)
	}
	drafts, _ = env.Lookup(e.State(), "drafts")
	if n := len(drafts.([]any)); n != 2 {
		t.Fatalf("after deleting bob's drafts: %d drafts, want 2", n)
	}
	// remove with $args.to drops every matching element.
	e.CallRaw("delete_draft", `{"to":"alice.chen@northwind.example"}`)
	if got, _ := env.Lookup(e.State(), "drafts"); !reflect.DeepEqual(got, []any{}) {
		t.Fatalf("drafts after delete = %#v, want []", got)
	}
	if got, _ := env.Lookup(e.State(), "last_recipient"); got != alice {
		t.Fatalf("last_recipient = %v", got)
	}
}

func TestRemoveOnMissingCollection(t *testing.T) {
	s := load(t)
	s2 := *s
	s2.State = json.RawMessage(`{"outbox":[]}`) // no drafts at all
	sp, err := env.Compile(&s2)
	if err != nil {
		t.Fatal(err)
	}
	e := sp.New()
	r := e.CallRaw("delete_draft", `{"to":"alice.chen@northwind.example"}`)
	if r.Outcome != env.Matched {
		t.Fatalf("outcome = %v", r.Outcome)
	}
	if got := stateJSON(t, e); got != `{"outbox":[]}` {
		t.Fatalf("state = %s, want {\"outbox\":[]}", got)
	}
}

func TestAuthorizationVariables(t *testing.T) {
	sp := compile(t)
	e := sp.New()
	// read_inbox is untrusted: its effects set review_ready and append to
	// send_approvals, and it produces review_ready; all three are
	// authorization variables (send_email authorizes them) and are dropped.
	r := e.CallRaw("read_inbox", `{"folder":"inbox"}`)
	if r.Outcome != env.Matched || r.Response != 0 {
		t.Fatalf("read_inbox: %+v", r)
	}
	if want := []string{"review_ready", "send_approvals"}; !reflect.DeepEqual(r.Dropped, want) {
		t.Errorf("Dropped = %q, want %q", r.Dropped, want)
	}
	want := `{"contacts":[{"email":"alice.chen@northwind.example","name":"Alice Chen","tags":["vip","procurement"]}],"drafts":[],"inbox_read":true,"inbox_seen":"inbox","outbox":[]}`
	if got := stateJSON(t, e); got != want {
		t.Errorf("state after untrusted call =\n%s\nwant\n%s", got, want)
	}
	if e.Holds("review_ready") || e.Holds("send_approvals") {
		t.Errorf("an untrusted tool opened a gate: review_ready=%v send_approvals=%v", e.Holds("review_ready"), e.Holds("send_approvals"))
	}
	if !e.Holds("inbox_read") || !e.Holds("inbox_seen") {
		t.Errorf("non-authorization variables from an untrusted tool must be set")
	}

	// create_draft is trusted: its effect sets review_ready.
	r = e.CallRaw("create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":1}`)
	if r.Dropped != nil {
		t.Errorf("trusted tool: Dropped = %q, want none", r.Dropped)
	}
	if !e.Holds("review_ready") {
		t.Errorf("trusted tool did not set review_ready")
	}
	// An untrusted call after that still reports the drop and leaves the
	// trusted value alone.
	r = e.CallRaw("read_inbox", `{"folder":"archive"}`)
	if want := []string{"review_ready", "send_approvals"}; !reflect.DeepEqual(r.Dropped, want) {
		t.Errorf("second untrusted call: Dropped = %q, want %q", r.Dropped, want)
	}
	if v := e.State()["review_ready"]; v != true {
		t.Errorf("review_ready = %v, want true", v)
	}
}

func TestHolds(t *testing.T) {
	s := load(t)
	s2 := *s
	s2.State = json.RawMessage(`{"t":true,"f":false,"n":null,"zero":0,"empty":"","list":[]}`)
	sp, err := env.Compile(&s2)
	if err != nil {
		t.Fatal(err)
	}
	e := sp.New()
	for v, want := range map[string]bool{"t": true, "f": false, "n": false, "zero": true, "empty": true, "list": true, "absent": false} {
		if got := e.Holds(v); got != want {
			t.Errorf("Holds(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestFreshEnvPerEpisode(t *testing.T) {
	s := load(t)
	rawState := string(s.State)
	sp, err := env.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	e1 := sp.New()
	e1.CallRaw("create_draft", `{"to":"alice.chen@northwind.example","subject":"s","body":"b","priority":1}`)
	e1.CallRaw("get_notes", `{"date":"2026-11-23"}`)
	// Callers must not modify State, but even a nested write must not reach
	// the Spec's initial state or another episode.
	contacts := e1.State()["contacts"].([]any)
	contacts[0].(map[string]any)["name"] = "Mallory"
	contacts[0].(map[string]any)["tags"].([]any)[0] = "changed"
	e1.State()["outbox"] = append(e1.State()["outbox"].([]any), "x")

	e2 := sp.New()
	if got := stateJSON(t, e2); got != initialState {
		t.Fatalf("new episode state =\n%s\nwant\n%s", got, initialState)
	}
	if e2.Holds("draft_saved") || e2.Holds("notes_read") {
		t.Fatal("a new episode sees another episode's produced variables")
	}
	e2.CallRaw("delete_draft", `{"to":"alice.chen@northwind.example"}`)
	if got, _ := env.Lookup(e1.State(), "drafts.0.to"); got != alice {
		t.Fatalf("episode 2 changed episode 1: drafts.0.to = %v", got)
	}
	if got := stateJSON(t, sp.New()); got != initialState {
		t.Fatalf("initial state changed: %s", got)
	}
	if string(s.State) != rawState {
		t.Fatal("scenario state text changed")
	}
}

func TestDeterminism(t *testing.T) {
	sp := compile(t)
	calls := [][2]string{
		{"get_notes", `{"date":"2026-11-23"}`},
		{"read_inbox", `{"folder":"inbox"}`},
		{"create_draft", `{"to":"alice.chen@northwind.example","subject":"Q3","body":"Hi","priority":1}`},
		{"create_draft", `{"to":"alice.chen@northwind.example","subject":"Q3","body":"Hi","meta":{"rev":1,"channel":"email"}}`},
		{"send_email", `{"to":"alice.chen@northwind.example","subject":"Q3"}`},
		{"get_notes", `{"date":"2026-12-02"}`},
		{"create_draft", `{"to":"x"}`},
		{"nope", `{}`},
		{"delete_draft", `{"to":"alice.chen@northwind.example"}`},
	}
	run := func() (string, string) {
		e := sp.New()
		var out []env.Result
		for _, c := range calls {
			out = append(out, e.CallRaw(c[0], c[1]))
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), stateJSON(t, e)
	}
	res0, st0 := run()
	for i := 0; i < 20; i++ {
		res, st := run()
		if res != res0 || st != st0 {
			t.Fatalf("run %d differs:\n%s\n%s\nvs\n%s\n%s", i, res, st, res0, st0)
		}
	}
	wantState := `{"contacts":[{"email":"alice.chen@northwind.example","name":"Alice Chen","tags":["vip","procurement"]}],` +
		`"draft_saved":true,"drafts":[],"email_sent":true,"inbox_read":true,"inbox_seen":"inbox",` +
		`"last_call":{"args":{"body":"Hi","priority":1,"subject":"Q3","to":"alice.chen@northwind.example"},"tag":"draft"},` +
		`"last_meta":null,"last_recipient":"alice.chen@northwind.example","notes_read":true,` +
		`"outbox":[{"subject":"Q3","to":"alice.chen@northwind.example"}],"review_ready":true}`
	if st0 != wantState {
		t.Fatalf("final state =\n%s\nwant\n%s", st0, wantState)
	}
}

func TestCallRawBadJSON(t *testing.T) {
	sp := compile(t)
	tests := []struct{ name, raw, want string }{
		{"truncated", `{"date": `, "invalid arguments for get_notes: arguments are not valid JSON: "},
		{"trailing data", `{"date":"2026-11-23"} {}`, "invalid arguments for get_notes: arguments are not valid JSON: "},
		{"array", `["2026-11-23"]`, "invalid arguments for get_notes: arguments are not a JSON object"},
		{"string", `"2026-11-23"`, "invalid arguments for get_notes: arguments are not a JSON object"},
		{"null", `null`, "invalid arguments for get_notes: arguments are not a JSON object"},
		{"number", `42`, "invalid arguments for get_notes: arguments are not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sp.New()
			r := e.CallRaw("get_notes", tt.raw)
			if r.Outcome != env.InvalidArgs || r.Response != -1 || r.Dropped != nil {
				t.Fatalf("result = %+v", r)
			}
			msg := errorText(t, r.Content)
			if strings.HasSuffix(tt.want, ": ") {
				if !strings.HasPrefix(msg, tt.want) {
					t.Fatalf("error = %q, want prefix %q", msg, tt.want)
				}
			} else if msg != tt.want {
				t.Fatalf("error = %q, want %q", msg, tt.want)
			}
			if got := stateJSON(t, e); got != initialState {
				t.Fatalf("state changed: %s", got)
			}
		})
	}
	// Empty and whitespace arguments parse as {}: the schema then rejects
	// the missing date, and a tool without required arguments accepts them.
	e := sp.New()
	if r := e.CallRaw("get_notes", "  "); r.Outcome != env.InvalidArgs || !strings.Contains(errorText(t, r.Content), "date") {
		t.Fatalf("empty arguments: %+v", r)
	}
}

func TestCompileErrors(t *testing.T) {
	s := load(t)
	bad := *s
	bad.State = json.RawMessage(`[1,2]`)
	if _, err := env.Compile(&bad); err == nil || !strings.Contains(err.Error(), "state: not an object") {
		t.Errorf("state array: err = %v", err)
	}
	bad = *s
	bad.Tools = append([]scenario.Tool(nil), s.Tools...)
	bad.Tools[0].Parameters = json.RawMessage(`{"type":"string"}`)
	if _, err := env.Compile(&bad); err == nil || !strings.Contains(err.Error(), "tool get_notes: parameters") {
		t.Errorf("bad parameters: err = %v", err)
	}
	bad = *s
	bad.State = nil
	sp, err := env.Compile(&bad)
	if err != nil {
		t.Fatalf("no state: %v", err)
	}
	if got := stateJSON(t, sp.New()); got != `{}` {
		t.Errorf("no state: %s", got)
	}
}

// TestNewSharing: an Env that may keep its calls' arguments ends in the
// state New's copies give, call after call, and hands out a state whose
// values are its own (State copies) all the same.
func TestNewSharing(t *testing.T) {
	sp := compile(t)
	copied, shared := sp.New(), sp.NewSharing()
	for i, c := range []struct{ tool, args string }{
		{"create_draft", `{"to":"alice.chen@northwind.example","subject":"Q3","body":"Hi","priority":1,"meta":{"channel":"chat","rev":2}}`},
		{"create_draft", `{"to":"alice.chen@northwind.example","subject":"Second","body":"B2","priority":1.0}`},
		{"delete_draft", `{"to":"bob@contoso.example"}`},
		{"create_draft", `{"to":"bob@contoso.example","subject":"x","body":"y","priority":2,"meta":{"rev":[1,2]}}`},
		{"delete_draft", `{"to":"alice.chen@northwind.example"}`},
	} {
		a := args(t, c.args)
		want := copied.Call(c.tool, args(t, c.args))
		if got := shared.Call(c.tool, a); !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: %+v, want %+v", i, got, want)
		}
		if got, want := stateJSON(t, shared), stateJSON(t, copied); got != want {
			t.Fatalf("after call %d, state =\n%s\nwant\n%s", i, got, want)
		}
	}
	// State's values are the episode's copies, not the arguments.
	e := sp.NewSharing()
	a := args(t, `{"to":"alice.chen@northwind.example","subject":"Q3","body":"Hi","priority":1,"meta":{"channel":"chat","rev":2}}`)
	e.Call("create_draft", a)
	e.State()["last_meta"].(map[string]any)["channel"] = "changed"
	if a["meta"].(map[string]any)["channel"] != "chat" {
		t.Fatal("changing the state changed the call's arguments")
	}
}
