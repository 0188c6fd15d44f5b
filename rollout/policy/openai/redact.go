package openai

import (
	"net/url"
	"strings"
)

// Redact returns a URL fit for files and logs: user name, password and the
// query string (where gateways carry tokens) are replaced by "[redacted]".
// Text that does not parse as a URL is returned with anything between
// "://" and "@" redacted, so that no credential survives a typo.
func Redact(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		if i := strings.Index(raw, "://"); i >= 0 {
			if j := strings.LastIndex(raw, "@"); j > i {
				return raw[:i+3] + redacted + raw[j:]
			}
		}
		if i := strings.IndexByte(raw, '?'); i >= 0 {
			return raw[:i+1] + redacted
		}
		return raw
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(redacted)
		b.WriteByte('@')
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + redacted)
	}
	if u.Fragment != "" {
		b.WriteString("#" + redacted)
	}
	return b.String()
}
