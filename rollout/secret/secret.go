package secret

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask replaces every redacted value.
const Mask = "xxxxx"

// URL returns s with its user info and the values of its query replaced by
// Mask and its fragment dropped, so that it can be recorded and printed. A
// string that is not an absolute URL is returned unchanged, except that a
// "user:pass@" before a host is still masked.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") {
		if i := strings.Index(s, "://"); i >= 0 {
			// Not parseable, but URL-shaped: mask what could be user
			// info and every query value anyway, so a typo leaks nothing.
			out := s
			if at := strings.LastIndex(out, "@"); at > i {
				out = out[:i+3] + Mask + out[at:]
			}
			if q := strings.IndexByte(out, '?'); q >= 0 {
				out = out[:q+1] + Mask
			}
			return out
		}
		return s
	}
	if u.User != nil {
		u.User = url.User(Mask)
	}
	if u.RawQuery != "" {
		q := u.Query()
		parts := make([]string, 0, len(q))
		keys := strings.Split(u.RawQuery, "&")
		for _, kv := range keys {
			k, _, _ := strings.Cut(kv, "=")
			if k == "" {
				continue
			}
			parts = append(parts, k+"="+Mask)
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// urlInText finds URLs in free text: a scheme, "://", then everything up to
// a space, quote or bracket.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]+`)

// Text redacts every URL inside s (error messages, log lines).
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, URL)
}

// sensitive are flag names whose values are never recorded.
var sensitive = []string{"key", "token", "secret", "password", "passwd", "credential", "auth"}

// Args rebuilds a command line from redacted values: URLs are redacted
// (also as --flag=URL), the value of a flag whose name says it holds a
// secret (--api-key, --token, ...) is masked, except --api-key-env, which
// names a variable, and any argument that looks like an API key is masked.
func Args(args []string) []string {
	out := make([]string, len(args))
	maskNext := false
	for i, a := range args {
		if maskNext {
			out[i], maskNext = Mask, false
			continue
		}
		if name, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			if isSensitiveFlag(name) {
				out[i] = name + "=" + Mask
			} else if LooksLikeKey(val) {
				out[i] = name + "=" + Mask
			} else {
				out[i] = name + "=" + Text(val)
			}
			continue
		}
		if strings.HasPrefix(a, "-") && isSensitiveFlag(a) {
			out[i], maskNext = a, true
			continue
		}
		if LooksLikeKey(a) {
			out[i] = Mask
			continue
		}
		out[i] = Text(a)
	}
	return out
}

// Command is Args joined with spaces, the recorded form of an invocation.
func Command(args []string) string { return strings.Join(Args(args), " ") }

func isSensitiveFlag(flag string) bool {
	name := strings.ToLower(strings.TrimLeft(flag, "-"))
	if strings.HasSuffix(name, "-env") || strings.HasSuffix(name, "_env") {
		return false // names a variable, never holds a value
	}
	for _, s := range sensitive {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// envName is the shape of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyPrefixes start the API keys of common providers and servers.
var keyPrefixes = []string{"sk-", "sk_", "pk-", "rk-", "hf_", "gsk_", "xai-", "ghp_", "gho_", "github_pat_", "glpat-", "AKIA", "AIza", "eyJ", "Bearer "}

// LooksLikeKey reports whether s looks like a credential rather than a
// name or a path: a known key prefix, or a long token mixing letters and
// digits with no separator a name or path would have.
func LooksLikeKey(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) < 16 {
		return false
	}
	for _, p := range keyPrefixes {
		if strings.HasPrefix(s, p) && len(s) >= len(p)+12 {
			return true
		}
	}
	if strings.ContainsAny(s, "/\\ .:,=@") {
		return false
	}
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	if envName.MatchString(s) && !(lower && digit) {
		return false // SOME_VARIABLE_NAME
	}
	return len(s) >= 24 && digit && (lower || upper) && !strings.Contains(s, "_")
}

// CheckEnvName checks a value given as the name of an environment
// variable holding a key: it must look like a name, not like the key.
func CheckEnvName(flag, name string) error {
	if LooksLikeKey(name) {
		return &keyAsNameError{flag: flag}
	}
	if !envName.MatchString(name) {
		return &badNameError{flag: flag, name: name}
	}
	return nil
}

type keyAsNameError struct{ flag string }

func (e *keyAsNameError) Error() string {
	return e.flag + ": the value looks like an API key, not the name of an environment variable; put the key in a variable (export MY_KEY=...) and pass " + e.flag + " MY_KEY (the value is not shown or recorded)"
}

type badNameError struct{ flag, name string }

func (e *badNameError) Error() string {
	// The value is not echoed: it may be a key of a shape LooksLikeKey misses.
	return e.flag + ": the value is not an environment variable name (want letters, digits and _, not starting with a digit, e.g. OPENAI_API_KEY)"
}

// Printable is s with URLs redacted (Text) and every control character and
// bidirectional formatting character (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069) written as a \uXXXX escape: text another process sent
// (a queue event, a server's message) cannot move the terminal's cursor,
// clear it, or reorder what the line shows.
func Printable(s string) string {
	s = Text(s)
	if strings.IndexFunc(s, hidden) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, `\u%04X`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return true
	case unicode.IsControl(r):
		return true
	case r == 0x061C || r == 0x200E || r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
