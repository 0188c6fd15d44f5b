package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/rollout/trajectory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FinalAnswerTool is the MCP tool that submits the final answer and ends
// the episode; its result carries the labels and rewards. It takes
// {"answer": string}.
const FinalAnswerTool = "final_answer"

var finalAnswerTool = &mcp.Tool{
	Name:        FinalAnswerTool,
	Description: "Submit your final answer to the user. This ends the task; call it once, when you are done.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"the final answer to the user"}},"required":["answer"],"additionalProperties":false}`),
}

// mcpState maps MCP sessions to their episodes.
type mcpState struct {
	mu       sync.Mutex
	servers  map[string]*mcp.Server // per scenario id
	episodes map[*mcp.ServerSession]*session
}

// mcpHandler serves MCP over Streamable HTTP at /mcp/{scenario}: each MCP
// session is one episode of that scenario, started by its first tools/list
// or tools/call; tools/list gives the tools visible at the current step
// plus final_answer, tools/call runs one call as one assistant turn. The
// episode ends at final_answer, at --max-steps, or when the session
// closes (DELETE, or idle for the idle timeout): then as abandoned, in
// errors/.
func (s *Server) mcpHandler() http.Handler {
	st := &mcpState{servers: map[string]*mcp.Server{}, episodes: map[*mcp.ServerSession]*session{}}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.mcpServer(st, r.PathValue("scenario"))
	}, &mcp.StreamableHTTPOptions{SessionTimeout: s.cfg.IdleTimeout})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.byID[r.PathValue("scenario")] == nil {
			httpError(w, fmt.Errorf("%w: unknown scenario %q in %s", ErrNoSession, r.PathValue("scenario"), r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// mcpServer is the MCP server of one scenario (made once).
func (s *Server) mcpServer(st *mcpState, id string) *mcp.Server {
	st.mu.Lock()
	defer st.mu.Unlock()
	if srv := st.servers[id]; srv != nil {
		return srv
	}
	if s.byID[id] == nil {
		return nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "antidrift", Version: s.cfg.Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		Instructions: mcpInstructions(s.byID[id].S.System, s.byID[id].S.UserPrompt()),
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				ep, err := s.mcpEpisode(st, id, req)
				if err != nil {
					return nil, err
				}
				return &mcp.ListToolsResult{Tools: ep.mcpTools()}, nil
			case "tools/call":
				ep, err := s.mcpEpisode(st, id, req)
				if err != nil {
					return nil, err
				}
				p, _ := req.GetParams().(*mcp.CallToolParamsRaw)
				if p == nil {
					return nil, errors.New("tools/call without params")
				}
				return ep.mcpCall(p.Name, p.Arguments), nil
			}
			return next(ctx, method, req)
		}
	})
	st.servers[id] = srv
	return srv
}

// mcpEpisode is the session's episode, started on first use. Its end is
// tied to the MCP session's: a session that closes mid-episode abandons it.
func (s *Server) mcpEpisode(st *mcpState, id string, req mcp.Request) (*session, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return nil, errors.New("no MCP session")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if ep := st.episodes[ss]; ep != nil {
		return ep, nil
	}
	client := ""
	if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		client = ip.ClientInfo.Name
	}
	ep, _, err := s.openSession(ResetParams{ScenarioID: id, Client: client}, ProtoMCP, true)
	if err != nil {
		return nil, err
	}
	st.episodes[ss] = ep
	go func() {
		ss.Wait() //nolint:errcheck // the session's end is all that matters
		ep.leave("the MCP session closed")
		st.mu.Lock()
		delete(st.episodes, ss)
		st.mu.Unlock()
	}()
	return ep, nil
}

// mcpTools are the tools visible at the current step, and final_answer.
func (ss *session) mcpTools() []*mcp.Tool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []*mcp.Tool
	if ss.final == nil && ss.cur != nil {
		for _, t := range ss.cur.Tools {
			out = append(out, &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters})
		}
	}
	return append(out, finalAnswerTool)
}

// mcpCall runs one tools/call as one assistant turn. Errors the model can
// act on are tool errors (IsError), as MCP asks.
func (ss *session) mcpCall(name string, args json.RawMessage) *mcp.CallToolResult {
	var a Action
	if name == FinalAnswerTool {
		var in struct {
			Answer *string `json:"answer"`
		}
		if err := json.Unmarshal(args, &in); err != nil || in.Answer == nil {
			return toolError(fmt.Sprintf("%s takes {\"answer\": string}", FinalAnswerTool))
		}
		a = Action{Type: TypeFinalAnswer, Content: in.Answer}
	} else {
		a = Action{Type: TypeToolCall, ToolName: name, Arguments: args}
	}
	obs, err := ss.step(a)
	if err != nil {
		return toolError(strings.TrimPrefix(err.Error(), "envserver: "))
	}
	res := &mcp.CallToolResult{}
	for _, m := range obs.ToolResults {
		res.Content = append(res.Content, &mcp.TextContent{Text: m.Content})
	}
	if len(obs.Errors) > 0 {
		res.IsError = true
		res.Content = append(res.Content, &mcp.TextContent{Text: strings.Join(obs.Errors, "; ")})
	}
	if obs.Done {
		end := map[string]any{"done": true, "traj_id": obs.TrajID, "labels": obs.Labels, "rewards": obs.Rewards}
		b, _ := json.Marshal(end)
		res.StructuredContent = end
		msg := "The episode has ended."
		if obs.Labels != nil && obs.Labels.Status == trajectory.StatusMaxSteps && name != FinalAnswerTool {
			msg = "The episode has ended: the step limit was reached."
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: msg + " " + string(b)})
	}
	if len(res.Content) == 0 {
		res.Content = []mcp.Content{&mcp.TextContent{Text: ""}}
	}
	return res
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// mcpInstructions carry the scenario's prompts: an MCP agent gets no
// conversation from the server, so the task travels in the instructions
// (GET /tasks has it too). The recorded episode holds the scenario's
// system and user turns whatever the agent was shown.
func mcpInstructions(system, user string) string {
	var b strings.Builder
	if system != "" {
		b.WriteString(system)
		b.WriteString("\n\n")
	}
	b.WriteString("Task from the user:\n")
	b.WriteString(user)
	b.WriteString("\n\nUse the tools to do the task, then call " + FinalAnswerTool + " with your answer to the user.")
	return b.String()
}
