package view

import (
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// appCSP is the app's policy: its own script, style and API only; no
// plugin, no <base>, no form posts, no framing.
const appCSP = "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
	"base-uri 'none'; form-action 'none'; object-src 'none'; frame-ancestors 'none'"

// reportCSP is a report file's policy: `sandbox` without allow-scripts or
// allow-same-origin gives the page an opaque origin where no script runs,
// so a report's own files can never read the API.
const reportCSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
	"base-uri 'none'; form-action 'none'; object-src 'none'; frame-ancestors 'none'"

// loopbackHosts are always accepted as a request's Host: a page from
// another site reaches the viewer only under its own name (DNS rebinding),
// never under these.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// AllowHosts sets the Host header values served besides the loopback
// names: the bound addresses' hosts (as written: a wildcard bind such as
// 0.0.0.0 serves that literal, which no rebound name can send) and each of
// extra. Call it before Handler; without a call only
// loopback names are served.
func (s *Server) AllowHosts(bound []string, extra []string) {
	s.hosts = map[string]bool{}
	for _, h := range loopbackHosts {
		s.hosts[h] = true
	}
	for _, h := range append(append([]string(nil), bound...), extra...) {
		if h = hostOnly(h); h != "" {
			s.hosts[h] = true
		}
	}
}

// hostOnly is a Host value's host, lowercased, without port or brackets.
func hostOnly(h string) string {
	h = strings.TrimSpace(h)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// hostRefusal says why a request's Host is refused, or "" when it is served.
func (s *Server) hostRefusal(r *http.Request) string {
	if s.hosts[hostOnly(r.Host)] {
		return ""
	}
	return fmt.Sprintf("Host %q is not this viewer's address (served: localhost, 127.0.0.1, [::1], the bound address and each --allow-host); "+
		"a page of another site may be reading the viewer through DNS rebinding", r.Host)
}

// badUTF8 says where a request's path or query is not valid UTF-8 once
// unescaped, or "" when both are. Overlong forms are invalid in Go's UTF-8.
func badUTF8(r *http.Request) string {
	if !utf8.ValidString(r.URL.Path) {
		return "the URL path is not valid UTF-8"
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "the URL query is malformed: " + err.Error()
	}
	for k, vs := range q {
		if !utf8.ValidString(k) {
			return "a URL query parameter name is not valid UTF-8"
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return fmt.Sprintf("URL query parameter %q is not valid UTF-8", k)
			}
		}
	}
	return ""
}

// serveReportFile serves one file of a report folder through an os.Root,
// which refuses any path or symlink that leaves the folder. Folders are
// not listed; what is not a page, style, image or text is a download; all
// of it under reportCSP.
func serveReportFile(w http.ResponseWriter, r *http.Request, dir, name string) {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" || name == "." {
		http.Error(w, "report folders are not listed", http.StatusNotFound)
		return
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		http.Error(w, "report folder unreadable", http.StatusNotFound)
		return
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(name))
	if err != nil {
		code := http.StatusNotFound
		if !errors.Is(err, fs.ErrNotExist) {
			code = http.StatusForbidden
		}
		http.Error(w, fmt.Sprintf("%s: not served (missing, or a link leaving the report folder)", name), code)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, fmt.Sprintf("%s: not a file (report folders are not listed)", name), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Security-Policy", reportCSP)
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case ".html", ".htm", ".css", ".png", ".svg", ".jpg", ".jpeg", ".gif", ".json", ".txt", ".md", ".csv":
		if ct := mime.TypeByExtension(ext); ct != "" {
			w.Header().Set("Content-Type", ct)
		}
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	}
	http.ServeContent(w, r, "", time.Time{}, f)
}
