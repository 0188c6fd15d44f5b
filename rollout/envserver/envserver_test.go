package envserver

// The OpenEnv wire shapes these tests check come from
// github.com/meta-pytorch/OpenEnv (commit 685de411e5f7):
// src/openenv/core/env_server/types.py (ResetRequest{seed, episode_id},
// StepRequest{action, timeout_s, request_id}, StepResponse{observation,
// reward, done}, State{episode_id, step_count}, SchemaResponse{action,
// observation, state}, HealthResponse{status: "healthy"}, WSResetMessage /
// WSStepMessage / WSStateMessage / WSCloseMessage, WSObservationResponse,
// WSErrorResponse with WSErrorCode.CAPACITY_REACHED) and
// src/openenv/core/env_server/http_server.py (HTTP 422 for an invalid
// action; /ws: one environment per connection, a SessionCapacityError
// answered as an error message with code CAPACITY_REACHED,
// active_sessions and max_sessions, then the socket closed).

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// driveHTTP plays the actions through POST /reset and POST /step.
func driveHTTP(t *testing.T, x *testServer, scenarioID string, actions []Action) *Observation {
	t.Helper()
	var r Response
	if st := post(t, x.ts.URL+"/reset", map[string]any{"scenario_id": scenarioID, "client": "tester"}, &r); st != http.StatusOK {
		t.Fatalf("reset: status %d", st)
	}
	if r.Done || r.Reward != nil || len(r.Observation.Tools) == 0 || len(r.Observation.Messages) == 0 {
		t.Fatalf("reset observation: %+v", r.Observation)
	}
	id := r.Observation.EpisodeID
	for i, a := range actions {
		r = Response{}
		if st := post(t, x.ts.URL+"/step", map[string]any{"episode_id": id, "action": a}, &r); st != http.StatusOK {
			t.Fatalf("step %d: status %d", i, st)
		}
		if r.Done != (i == len(actions)-1) {
			t.Fatalf("step %d: done %v", i, r.Done)
		}
	}
	if r.Reward == nil || *r.Reward != r.Observation.Rewards.Total {
		t.Fatalf("final reward %v, rewards %+v", r.Reward, r.Observation.Rewards)
	}
	return r.Observation
}

// wsCall sends one WebSocket message and reads the reply.
func wsCall(t *testing.T, c *websocket.Conn, typ string, data any) wsReplyIn {
	t.Helper()
	ctx := context.Background()
	b, _ := json.Marshal(map[string]any{"type": typ, "data": data})
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	_, raw, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var r wsReplyIn
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

type wsReplyIn struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func dialWS(t *testing.T, x *testServer) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(x.ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func driveWS(t *testing.T, x *testServer, scenarioID string, actions []Action) *Observation {
	t.Helper()
	c := dialWS(t, x)
	defer c.Close(websocket.StatusNormalClosure, "")
	r := wsCall(t, c, "reset", map[string]any{"scenario_id": scenarioID, "client": "tester"})
	if r.Type != "observation" {
		t.Fatalf("reset: %s %s", r.Type, r.Data)
	}
	var resp Response
	for i, a := range actions {
		r = wsCall(t, c, "step", a)
		if r.Type != "observation" {
			t.Fatalf("step %d: %s %s", i, r.Type, r.Data)
		}
		resp = Response{}
		json.Unmarshal(r.Data, &resp)
	}
	st := wsCall(t, c, "state", nil)
	var state map[string]any
	json.Unmarshal(st.Data, &state)
	if st.Type != "state" || state["done"] != true || state["step_count"] != float64(len(actions)) {
		t.Fatalf("state: %s", st.Data)
	}
	return resp.Observation
}

func driveMCP(t *testing.T, x *testServer, scenarioID string, actions []Action) map[string]any {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "tester", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: x.ts.URL + "/mcp/" + scenarioID, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range lt.Tools {
		names[tl.Name] = true
	}
	if !names[FinalAnswerTool] || len(lt.Tools) != len(testScenario(t).Tools)+1 {
		t.Fatalf("tools/list: %v", names)
	}
	var last *mcp.CallToolResult
	for i, a := range actions {
		p := &mcp.CallToolParams{Name: a.ToolName, Arguments: a.Arguments}
		if a.Type == TypeFinalAnswer {
			p = &mcp.CallToolParams{Name: FinalAnswerTool, Arguments: map[string]any{"answer": *a.Content}}
		}
		if last, err = cs.CallTool(ctx, p); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	end, _ := last.StructuredContent.(map[string]any)
	if end == nil || end["done"] != true {
		t.Fatalf("final tools/call: %+v", last)
	}
	return end
}

// TestProtocolsMatchInProcess: one scripted episode through HTTP, WebSocket
// and MCP is the in-process rollout's record, labels and rewards included.
func TestProtocolsMatchInProcess(t *testing.T) {
	s := testScenario(t)
	actions := script(t, s)
	want := inProcess(t, s, actions)
	if !want.Drift || len(want.Matches) == 0 {
		t.Fatalf("the script should drift: %+v", want.Matches)
	}
	wantRw, err := rewardsOf(testScorer, "", want, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []string{ProtoHTTP, ProtoWS, ProtoMCP} {
		t.Run(proto, func(t *testing.T) {
			x := startServer(t, t.TempDir(), nil)
			var labels *Labels
			var total float64
			switch proto {
			case ProtoHTTP:
				obs := driveHTTP(t, x, s.ID, actions)
				labels, total = obs.Labels, obs.Rewards.Total
				if obs.Rewards.Components["reward/drift_penalty"] != wantRw.Components["reward/drift_penalty"] ||
					obs.Rewards.Components["reward/success"]+obs.Rewards.Components["reward/drift_penalty"] != total {
					t.Fatalf("components %v, total %v", obs.Rewards.Components, total)
				}
			case ProtoWS:
				obs := driveWS(t, x, s.ID, actions)
				labels, total = obs.Labels, obs.Rewards.Total
			case ProtoMCP:
				end := driveMCP(t, x, s.ID, actions)
				b, _ := json.Marshal(end["labels"])
				json.Unmarshal(b, &labels)
				total = end["rewards"].(map[string]any)["total"].(float64)
			}
			x.stop()
			recs := readRecords(t, x.dir)
			if len(recs) != 1 {
				t.Fatalf("%d records", len(recs))
			}
			got := recs[0]
			if got.Policy != "client:tester/"+proto {
				t.Errorf("policy %q", got.Policy)
			}
			if g, w := comparable(t, got), comparable(t, want); g != w {
				t.Fatalf("record differs from the in-process rollout's:\n%s\nwant\n%s", g, w)
			}
			if g, w := mustJSON(labels), mustJSON(labelsOf(want)); g != w {
				t.Errorf("labels %s, want %s", g, w)
			}
			if total != wantRw.Total {
				t.Errorf("reward %v, want %v", total, wantRw.Total)
			}
			if errs := readErrors(t, x.dir); len(errs) != 0 {
				t.Errorf("%d records in errors/", len(errs))
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
