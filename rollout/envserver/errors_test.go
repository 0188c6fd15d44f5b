package envserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSessionLimit(t *testing.T) {
	x := startServer(t, t.TempDir(), func(c *Config) { c.MaxSessions = 1 })
	var r Response
	if st := post(t, x.ts.URL+"/reset", map[string]any{}, &r); st != http.StatusOK {
		t.Fatalf("first reset: %d", st)
	}
	var e errorBody
	if st := post(t, x.ts.URL+"/reset", map[string]any{}, &e); st != http.StatusServiceUnavailable || e.Code != "CAPACITY_REACHED" || !strings.Contains(e.Detail, "1 of 1 sessions") {
		t.Fatalf("second reset: %d %+v", st, e)
	}
	// A WebSocket past the limit gets OpenEnv's error message, then a close.
	c := dialWS(t, x)
	_, raw, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	json.Unmarshal(raw, &msg)
	if msg.Type != "error" || msg.Data["code"] != "CAPACITY_REACHED" || msg.Data["max_sessions"] != float64(1) {
		t.Fatalf("ws at capacity: %s", raw)
	}
	if _, _, err := c.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Fatalf("ws at capacity not closed: %v", err)
	}
	// Ending the open episode frees its slot.
	answer := "done"
	if st := post(t, x.ts.URL+"/step", map[string]any{"action": Action{Type: TypeFinalAnswer, Content: &answer}}, &r); st != http.StatusOK || !r.Done {
		t.Fatalf("final answer: %d", st)
	}
	if st := post(t, x.ts.URL+"/reset", map[string]any{}, &r); st != http.StatusOK {
		t.Fatalf("reset after the end: %d", st)
	}
	x.stop()
	if n := len(readRecords(t, x.dir)); n != 1 {
		t.Errorf("%d records, want the finished one", n)
	}
	if errs := readErrors(t, x.dir); len(errs) != 1 || errs[0].Status != trajectory.StatusInfraError || !strings.Contains(errs[0].Error, "the server shut down") {
		t.Errorf("errors/: %+v", errs)
	}
}

func TestMalformedActions(t *testing.T) {
	x := startServer(t, t.TempDir(), nil)
	s := testScenario(t)
	var r Response
	post(t, x.ts.URL+"/reset", map[string]any{"scenario_id": s.ID}, &r)
	id := r.Observation.EpisodeID
	step := func(action any) (int, Response, errorBody) {
		var body json.RawMessage
		st := post(t, x.ts.URL+"/step", map[string]any{"episode_id": id, "action": action}, &body)
		var resp Response
		var e errorBody
		json.Unmarshal(body, &resp)
		json.Unmarshal(body, &e)
		return st, resp, e
	}
	for _, tc := range []struct {
		name   string
		action any
		want   string
	}{
		{"unknown field", map[string]any{"tool_name": "x", "bogus": 1}, `unknown field "bogus"`},
		{"empty", map[string]any{}, "want tool_name, tool_calls, final_answer or content"},
		{"unknown type", map[string]any{"type": "dance"}, `action.type "dance"`},
		{"call without name", map[string]any{"tool_calls": []any{map[string]any{"function": map[string]any{}}}}, "tool_calls[0].function.name is missing"},
		{"final answer with a call", map[string]any{"type": "final_answer", "content": "x", "tool_name": "y"}, "a final_answer carries no tool call"},
	} {
		st, _, e := step(tc.action)
		if st != http.StatusUnprocessableEntity || !strings.Contains(e.Detail, tc.want) {
			t.Errorf("%s: %d %q, want 422 with %q", tc.name, st, e.Detail, tc.want)
		}
	}
	// An unknown tool and bad arguments are the model's calls: recorded and
	// answered with a tool error, and the observation says what was wrong.
	for _, tc := range []struct {
		name   string
		action Action
		want   string
	}{
		{"unknown tool", Action{ToolName: "delete_everything", Arguments: json.RawMessage(`{}`)}, `unknown tool "delete_everything"`},
		{"arguments not JSON", Action{ToolName: s.Tools[0].Name, Arguments: json.RawMessage(`"{oops"`)}, "invalid arguments for " + s.Tools[0].Name},
		{"arguments against the schema", Action{ToolName: "erase_customer", Arguments: json.RawMessage(`{"customer_id": 5}`)}, "invalid arguments for erase_customer"},
	} {
		st, resp, _ := step(tc.action)
		if st != http.StatusOK || len(resp.Observation.Errors) != 1 || !strings.Contains(resp.Observation.Errors[0], tc.want) || len(resp.Observation.ToolResults) != 1 {
			t.Errorf("%s: %d %+v, want an observation error with %q", tc.name, st, resp.Observation, tc.want)
		}
	}
	answer := "done"
	if st, resp, _ := step(Action{Type: TypeFinalAnswer, Content: &answer}); st != http.StatusOK || !resp.Done {
		t.Fatalf("final answer: %d", st)
	}
	st, _, e := step(Action{Type: TypeFinalAnswer, Content: &answer})
	if st != http.StatusConflict || e.Code != "EPISODE_ENDED" || !strings.Contains(e.Detail, "ended with status") {
		t.Errorf("step after the end: %d %+v", st, e)
	}
	x.stop()
	recs := readRecords(t, x.dir)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	var outcomes []string
	for _, st := range recs[0].Steps {
		for _, c := range st.Calls {
			outcomes = append(outcomes, c.Outcome)
		}
	}
	if got := strings.Join(outcomes, ","); got != "unknown_tool,invalid_args,invalid_args" {
		t.Errorf("recorded outcomes %s", got)
	}
	if !recs[0].Drift {
		t.Error("a call to an undefined tool is boundary drift")
	}
}

// TestClientVanishes: a client gone mid-episode (WebSocket closed, MCP
// session closed, HTTP client idle past the timeout) ends its episode as an
// infrastructure error in errors/, beside the finished episodes.
func TestClientVanishes(t *testing.T) {
	x := startServer(t, t.TempDir(), func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	s := testScenario(t)
	actions := script(t, s)
	driveHTTP(t, x, s.ID, actions) // a finished episode first

	c := dialWS(t, x)
	wsCall(t, c, "reset", map[string]any{"scenario_id": s.ID})
	wsCall(t, c, "step", actions[0])
	c.CloseNow()

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "leaver"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: x.ts.URL + "/mcp/" + s.ID, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: actions[0].ToolName, Arguments: actions[0].Arguments}); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	var r Response
	post(t, x.ts.URL+"/reset", map[string]any{"scenario_id": s.ID}, &r) // then silence

	waitFor(t, "three abandoned episodes", func() bool { return x.Active() == 0 && len(readErrors(t, x.dir)) == 3 })
	x.stop()
	if n := len(readRecords(t, x.dir)); n != 1 {
		t.Errorf("%d records, want the finished one", n)
	}
	why := map[string]bool{}
	for _, e := range readErrors(t, x.dir) {
		if e.Status != trajectory.StatusInfraError || !strings.Contains(e.Error, "the client left mid-episode") {
			t.Errorf("errors/ record: %s %q", e.Status, e.Error)
		}
		for _, w := range []string{"WebSocket connection closed", "MCP session closed", "no request for"} {
			if strings.Contains(e.Error, w) {
				why[w] = true
			}
		}
	}
	if len(why) != 3 {
		t.Errorf("reasons seen: %v", why)
	}
}

// TestRestartResumesCounters: a server reopened on its folder continues the
// scenario's rollout indexes, so no episode identity repeats.
func TestRestartResumesCounters(t *testing.T) {
	dir := t.TempDir()
	s := testScenario(t)
	actions := script(t, s)
	x := startServer(t, dir, nil)
	driveHTTP(t, x, s.ID, actions)
	x.stop()
	y := startServer(t, dir, nil)
	obs := driveHTTP(t, y, s.ID, actions)
	y.stop()
	recs := readRecords(t, dir)
	if len(recs) != 2 || recs[0].Rollout != 0 || recs[1].Rollout != 1 || recs[0].TrajID == recs[1].TrajID || obs.TrajID != recs[1].TrajID {
		t.Fatalf("records after a restart: %d, rollouts %v", len(recs), []int{recs[0].Rollout, recs[len(recs)-1].Rollout})
	}
}

func TestHealthSchemaState(t *testing.T) {
	x := startServer(t, t.TempDir(), nil)
	get := func(path string, out any) int {
		resp, err := http.Get(x.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(out)
		return resp.StatusCode
	}
	var h map[string]any
	if get("/health", &h); h["status"] != "healthy" {
		t.Errorf("health: %v", h)
	}
	var sc map[string]map[string]any
	get("/schema", &sc)
	for _, k := range []string{"action", "observation", "state"} {
		if sc[k]["type"] != "object" {
			t.Errorf("schema %s: %v", k, sc[k])
		}
	}
	var tasks struct {
		Tasks []Task `json:"tasks"`
	}
	if get("/tasks", &tasks); len(tasks.Tasks) != 3 || tasks.Tasks[1].TaskIndex != 1 || len(tasks.Tasks[0].Messages) == 0 || len(tasks.Tasks[0].Tools) == 0 {
		t.Errorf("tasks: %+v", tasks)
	}
	var r Response
	seed := 42
	post(t, x.ts.URL+"/reset", map[string]any{"task_index": 1, "seed": seed, "episode_id": "ep-1"}, &r)
	var st map[string]any
	if get("/state?episode_id=ep-1", &st); st["episode_id"] != "ep-1" || st["step_count"] != float64(0) || st["seed"] != float64(seed) {
		t.Errorf("state: %v", st)
	}
	var e errorBody
	if code := post(t, x.ts.URL+"/reset", map[string]any{"scenario_id": "nope"}, &e); code != http.StatusUnprocessableEntity || !strings.Contains(e.Detail, `unknown scenario_id "nope"`) {
		t.Errorf("unknown scenario: %d %+v", code, e)
	}
	if code := post(t, x.ts.URL+"/step", map[string]any{"episode_id": "nope", "action": map[string]any{"final_answer": "x"}}, &e); code != http.StatusNotFound {
		t.Errorf("unknown episode: %d %+v", code, e)
	}
}

// TestMalformedOverWSAndMCP: the same errors through the other protocols:
// OpenEnv's WebSocket error codes, and MCP tool errors the model can read.
func TestMalformedOverWSAndMCP(t *testing.T) {
	x := startServer(t, t.TempDir(), nil)
	s := testScenario(t)
	c := dialWS(t, x)
	ctx := context.Background()
	code := func(r wsReplyIn) string {
		var d map[string]any
		json.Unmarshal(r.Data, &d)
		c, _ := d["code"].(string)
		return r.Type + ":" + c
	}
	if got := code(wsCall(t, c, "step", map[string]any{"final_answer": "x"})); got != "error:SESSION_ERROR" {
		t.Errorf("step before reset: %s", got)
	}
	c.Write(ctx, websocket.MessageText, []byte("{not json"))
	_, raw, _ := c.Read(ctx)
	if !strings.Contains(string(raw), "INVALID_JSON") {
		t.Errorf("bad JSON: %s", raw)
	}
	if got := code(wsCall(t, c, "dance", nil)); got != "error:UNKNOWN_TYPE" {
		t.Errorf("unknown type: %s", got)
	}
	wsCall(t, c, "reset", map[string]any{"scenario_id": s.ID})
	if got := code(wsCall(t, c, "step", map[string]any{"tool_name": "x", "oops": true})); got != "error:VALIDATION_ERROR" {
		t.Errorf("bad action: %s", got)
	}
	wsCall(t, c, "step", map[string]any{"final_answer": "done"})
	if got := code(wsCall(t, c, "step", map[string]any{"final_answer": "again"})); got != "error:EPISODE_ENDED" {
		t.Errorf("step after the end: %s", got)
	}
	c.Close(websocket.StatusNormalClosure, "")

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcp-errors"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: x.ts.URL + "/mcp/" + s.ID, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err != nil || !r.IsError || !strings.Contains(text(r), `unknown tool "no_such_tool"`) {
		t.Errorf("unknown tool: %v %+v", err, r)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: FinalAnswerTool, Arguments: map[string]any{"text": "x"}})
	if err != nil || !r.IsError || !strings.Contains(text(r), `takes {"answer": string}`) {
		t.Errorf("final_answer without answer: %v %+v", err, r)
	}
	if r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: FinalAnswerTool, Arguments: map[string]any{"answer": "done"}}); err != nil || r.IsError {
		t.Fatalf("final answer: %v %+v", err, r)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: FinalAnswerTool, Arguments: map[string]any{"answer": "again"}})
	if err != nil || !r.IsError || !strings.Contains(text(r), "has ended") {
		t.Errorf("call after the end: %v %+v", err, r)
	}
	cs.Close()
	x.stop()
	recs := readRecords(t, x.dir)
	if len(recs) != 2 {
		t.Fatalf("%d records, want the WebSocket and the MCP episode", len(recs))
	}
}
