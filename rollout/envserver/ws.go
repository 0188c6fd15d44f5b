package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/coder/websocket"
)

// wsMessage is a client's WebSocket message (OpenEnv's WSResetMessage,
// WSStepMessage, WSStateMessage, WSCloseMessage).
type wsMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// wsReply is the server's (WSObservationResponse, WSStateResponse,
// WSErrorResponse).
type wsReply struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// handleWS serves one WebSocket session: the connection holds a
// --max-sessions slot for its lifetime, as OpenEnv's does, and runs one
// episode at a time. A connection that closes mid-episode ends it as an
// infrastructure error (recorded in errors/).
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	c.SetReadLimit(maxBody)
	ctx := r.Context()
	if err := s.acquire(); err != nil {
		// OpenEnv answers capacity with an error message, then closes.
		_, code := httpStatus(err)
		send(ctx, c, wsReply{Type: "error", Data: map[string]any{"message": err.Error(), "code": code,
			"active_sessions": s.Active(), "max_sessions": s.cfg.MaxSessions}})
		c.Close(websocket.StatusTryAgainLater, "capacity reached")
		return
	}
	defer s.releaseSlot()
	var cur *session
	defer func() {
		if cur != nil {
			cur.leave("the WebSocket connection closed")
		}
	}()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return // closed or gone: the deferred leave records the episode
		}
		var m wsMessage
		if err := json.Unmarshal(b, &m); err != nil {
			send(ctx, c, wsError(fmt.Errorf("Invalid JSON: %v", err), "INVALID_JSON"))
			continue
		}
		var reply wsReply
		switch m.Type {
		case "reset":
			var p ResetParams
			if len(m.Data) > 0 {
				if err := decodeStrict(m.Data, &p); err != nil {
					reply = wsError(fmt.Errorf("%w: %v", ErrBadReset, err), "")
					break
				}
			}
			if cur != nil {
				cur.leave("the client reset before the episode ended")
				cur = nil
			}
			ss, obs, err := s.openSession(p, ProtoWS, false)
			if err != nil {
				reply = wsError(err, "")
				break
			}
			cur = ss
			reply = wsReply{Type: "observation", Data: respond(obs)}
		case "step":
			if cur == nil {
				reply = wsError(fmt.Errorf("%w: no episode is open on this connection; send reset first", ErrNoSession), "")
				break
			}
			a, err := DecodeAction(m.Data)
			if err != nil {
				reply = wsError(err, "")
				break
			}
			obs, err := cur.step(a)
			if err != nil {
				reply = wsError(err, "")
				break
			}
			reply = wsReply{Type: "observation", Data: respond(obs)}
		case "state":
			if cur == nil {
				reply = wsError(fmt.Errorf("%w: no episode is open on this connection", ErrNoSession), "")
				break
			}
			reply = wsReply{Type: "state", Data: cur.state()}
		case "close":
			c.Close(websocket.StatusNormalClosure, "")
			return
		default:
			reply = wsError(fmt.Errorf("Unknown message type: %s", m.Type), "UNKNOWN_TYPE")
		}
		if err := send(ctx, c, reply); err != nil {
			return
		}
	}
}

func wsError(err error, code string) wsReply {
	if code == "" {
		_, code = httpStatus(err)
	}
	return wsReply{Type: "error", Data: map[string]any{"message": err.Error(), "code": code}}
}

func send(ctx context.Context, c *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		return errors.Join(err, c.CloseNow())
	}
	return nil
}
