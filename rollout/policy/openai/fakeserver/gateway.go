package fakeserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// IDRewrite says what a Gateway does to the tool-call ids of the answers
// it relays.
type IDRewrite int

const (
	// ReuseIDs renames each answer's calls call_0, call_1, … in every turn,
	// as some gateways and servers do (LiteLLM-style adapters in front of
	// models whose templates number calls per message; llama.cpp builds
	// before ids were random), so that ids repeat across turns.
	ReuseIDs IDRewrite = iota
	// OmitIDs removes the ids.
	OmitIDs
)

// Gateway is an OpenAI-compatible proxy in front of an upstream
// /v1/chat/completions server (sim-server, or a fake Server) that rewrites
// the tool-call ids of every completion it relays. Requests pass through
// unchanged.
type Gateway struct {
	srv *httptest.Server
}

// StartGateway starts a gateway to upstream (a base URL ending in /v1),
// closed when the test ends.
func StartGateway(t testing.TB, upstream string, rewrite IDRewrite) *Gateway {
	t.Helper()
	g := &Gateway{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		path := r.URL.Path
		if len(path) >= 3 && path[:3] == "/v1" {
			path = path[3:]
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream+path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			out = rewriteIDs(out, rewrite)
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(out)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// URL is the gateway's base URL, ending in /v1.
func (g *Gateway) URL() string { return g.srv.URL + "/v1" }

// rewriteIDs renames or removes the calls' ids of a completion body; a body
// that is not one goes through unchanged.
func rewriteIDs(body []byte, rewrite IDRewrite) []byte {
	var resp map[string]any
	if json.Unmarshal(body, &resp) != nil {
		return body
	}
	choices, _ := resp["choices"].([]any)
	for _, c := range choices {
		choice, _ := c.(map[string]any)
		msg, _ := choice["message"].(map[string]any)
		calls, _ := msg["tool_calls"].([]any)
		for i, tc := range calls {
			call, _ := tc.(map[string]any)
			if call == nil {
				continue
			}
			switch rewrite {
			case OmitIDs:
				delete(call, "id")
			default:
				call["id"] = fmt.Sprintf("call_%d", i)
			}
		}
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return body
	}
	return out
}
