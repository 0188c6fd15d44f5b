package view

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// get sends a GET with the given Host header (empty: the server's own).
func get(t *testing.T, hs *httptest.Server, host, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, hs.URL+path, nil)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// reportServer serves one report folder holding a page, a script of its
// own, a sub-folder, a symlink out of the folder and one inside it.
func reportServer(t *testing.T) *httptest.Server {
	t.Helper()
	root := t.TempDir()
	secret := filepath.Join(root, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("outside the report"), 0o644))
	dir := filepath.Join(root, "rep")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	for name, body := range map[string]string{
		"report.json":  "{}",
		"report.html":  `<html><script src="evil.js"></script><img src="plot.svg"></html>`,
		"evil.js":      `fetch("/api/sources")`,
		"plot.svg":     `<svg xmlns="http://www.w3.org/2000/svg"/>`,
		"sub/note.txt": "inside",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "leak.txt")))
	require.NoError(t, os.Symlink(filepath.Join(root), filepath.Join(dir, "up")))
	require.NoError(t, os.Symlink("sub/note.txt", filepath.Join(dir, "inside.txt")))
	s, err := New([]string{dir}, nil)
	require.NoError(t, err)
	require.NoError(t, s.Index())
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// TestHostHeaderChecked: a request addressed to another name (a page that
// rebound its own name to 127.0.0.1) is refused with the reason; loopback
// names, the bound address and --allow-host names are served.
func TestHostHeaderChecked(t *testing.T) {
	s, hs := newTestServer(t)
	for _, tc := range []struct {
		host string
		want int
	}{
		{"", 200},
		{"localhost:8421", 200},
		{"LOCALHOST", 200},
		{"127.0.0.1", 200},
		{"[::1]:8421", 200},
		{"evil.example", 403},
		{"evil.example:8421", 403},
		{"127.0.0.1.evil.example", 403},
		{"localhost.evil.example:8421", 403},
		{"lab-box.local:8421", 403},
		{"10.0.0.5:8421", 403},
	} {
		resp, body := get(t, hs, tc.host, "/api/sources")
		assert.Equal(t, tc.want, resp.StatusCode, tc.host)
		if tc.want == 403 {
			assert.Contains(t, body, "not this viewer's address", tc.host)
			assert.Contains(t, body, "DNS rebinding", tc.host)
			assert.NotContains(t, body, "runs", "nothing of the data")
		}
	}
	// --allow-host and the bound address are served.
	s.AllowHosts([]string{"10.0.0.5:8421", "0.0.0.0:8421"}, []string{"Lab-Box.local"})
	hs2 := httptest.NewServer(s.Handler())
	defer hs2.Close()
	for host, want := range map[string]int{"lab-box.local:8421": 200, "10.0.0.5": 200, "0.0.0.0:8421": 200, "10.0.0.6": 403, "evil.example": 403, "localhost": 200} {
		resp, _ := get(t, hs2, host, "/api/sources")
		assert.Equal(t, want, resp.StatusCode, host)
	}
}

// TestURLNotUTF8 is a 400, never a 500, wherever the bad bytes are.
func TestURLNotUTF8(t *testing.T) {
	_, hs := newTestServer(t)
	for _, p := range []string{
		"/api/trajectory/%C0%AF",        // overlong "/"
		"/api/trajectory/%FF%FE",        // not UTF-8 at all
		"/api/compare/%ED%A0%80",        // a surrogate half
		"/api/trajectories?q=%C0%AF",    // in a value
		"/api/trajectories?%E0%80%AF=1", // in a name
		"/reports/0/%C0%AE%C0%AE/x",
	} {
		resp, body := get(t, hs, "", p)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, p)
		assert.Contains(t, body, "UTF-8", p)
	}
}

// TestAppCSP: the app's policy allows its own script only and shuts
// base, forms, plugins and framing.
func TestAppCSP(t *testing.T) {
	_, hs := newTestServer(t)
	for _, p := range []string{"/", "/app.js", "/api/sources"} {
		resp, _ := get(t, hs, "", p)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "script-src 'self'", "base-uri 'none'", "form-action 'none'", "object-src 'none'", "frame-ancestors 'none'"} {
			assert.Contains(t, csp, d, p)
		}
		assert.NotContains(t, csp, "unsafe-eval", p)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), p)
	}
}

// TestReportFilesSandboxed: a report's files come under CSP sandbox (an
// opaque origin: its own script never runs where the API is), a script is
// a download, folders are not listed, and no symlink leads out.
func TestReportFilesSandboxed(t *testing.T) {
	hs := reportServer(t)
	resp, body := get(t, hs, "", "/reports/0/report.html")
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, body, "<script")
	csp := resp.Header.Get("Content-Security-Policy")
	assert.True(t, strings.HasPrefix(csp, "sandbox;"), csp)
	assert.NotContains(t, csp, "allow-scripts")
	assert.NotContains(t, csp, "allow-same-origin")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")

	resp, _ = get(t, hs, "", "/reports/0/evil.js")
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Disposition"), "attachment")
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox;"))

	resp, _ = get(t, hs, "", "/reports/0/plot.svg")
	assert.Equal(t, 200, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox;"))

	resp, body = get(t, hs, "", "/reports/0/inside.txt")
	assert.Equal(t, 200, resp.StatusCode, "a link inside the folder is served")
	assert.Equal(t, "inside", body)

	for _, p := range []string{"/reports/0/", "/reports/0/sub/", "/reports/0/sub", "/reports/0/leak.txt", "/reports/0/up/secret.txt", "/reports/0/../secret.txt", "/reports/0/..%2fsecret.txt", "/reports/1/report.html"} {
		resp, body := get(t, hs, "", p)
		assert.NotEqual(t, 200, resp.StatusCode, p)
		assert.NotContains(t, body, "outside the report", p)
		assert.NotContains(t, body, "note.txt", "no listing: %s", p)
	}
}

// TestBidiControlsShownEscaped runs app.js's visible (the function every
// text and title of the page goes through) under Node: right-to-left
// overrides, isolates and marks are spelled out, other text is kept.
func TestBidiControlsShownEscaped(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node: the escaping is checked in the browser test")
	}
	src, err := os.ReadFile(filepath.Join("assets", "app.js"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)const bidi = .*?\nfunction visible\(s\) \{.*?\n\}\n`).Find(src)
	require.NotNil(t, m, "app.js defines bidi and visible")
	in := "traj-\u202Eevil\u202C-\u2066x\u2069\u200F\u200E\u061C-é-שלום"
	script := string(m) + "process.stdout.write(visible(process.argv[1]));"
	out, err := exec.Command(node, "-e", script, in).Output()
	require.NoError(t, err)
	assert.Equal(t, `traj-\u202Eevil\u202C-\u2066x\u2069\u200F\u200E\u061C-é-שלום`, string(out))
	// Every text node and title goes through it.
	assert.Contains(t, string(src), "document.createTextNode(visible(kid))")
	assert.Contains(t, string(src), `if (k === "title") el.setAttribute(k, visible(v))`)
}
