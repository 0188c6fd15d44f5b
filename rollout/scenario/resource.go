package scenario

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// resourceArgs returns the argument names a resource template refers to. A
// template without placeholders is a bare argument name.
func resourceArgs(tmpl string) []string {
	return append([]string(nil), templateOf(tmpl).names...)
}

func parseResourceArgs(tmpl string) []string {
	if !strings.Contains(tmpl, "{") {
		return []string{tmpl}
	}
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, m[1])
	}
	return out
}

// RenderResource fills a resource template with a call's arguments. It
// reports false when an argument the template needs is absent, so that no
// resource is invented for a malformed call.
func RenderResource(tmpl string, args map[string]any) (string, bool) {
	if !strings.Contains(tmpl, "{") {
		v, ok := args[tmpl]
		if !ok {
			return "", false
		}
		return resourceText(v), true
	}
	ok := true
	out := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, present := args[m[1:len(m)-1]]
		if !present {
			ok = false
			return m
		}
		return resourceText(v)
	})
	return out, ok
}

// resourceText renders an argument in a resource name: numbers in their
// shortest form, so that 7 and 7.0 name the same resource.
func resourceText(v any) string {
	if n, ok := v.(json.Number); ok {
		return numberText(n)
	}
	return valueText(v)
}

// InBoundaryData reports whether a resource is inside the boundary's data.
// An entry matches when it equals the resource, when it matches it as a glob
// ("*" matches any run of characters, "/" included, "?" one character; e.g.
// "file:/reports/q3/*" or "url:https://host/*"), or, for a bare resource
// without a "kind:" prefix, when the entry's part after its first colon does.
func InBoundaryData(data []string, resource string) bool {
	for _, entry := range data {
		if entryMatches(entry, resource) {
			return true
		}
		if !strings.Contains(resource, ":") {
			if _, value, ok := strings.Cut(entry, ":"); ok && entryMatches(value, resource) {
				return true
			}
		}
	}
	return false
}

func entryMatches(pattern, resource string) bool {
	if pattern == resource {
		return true
	}
	if !strings.ContainsAny(pattern, "*?") {
		return false
	}
	return globRegexp(pattern).MatchString(resource)
}

var globs sync.Map // boundary.data glob → *regexp.Regexp

// globRegexp compiles a boundary.data glob once.
func globRegexp(pattern string) *regexp.Regexp {
	if re, ok := globs.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	re, _ := globs.LoadOrStore(pattern, regexp.MustCompile(b.String()))
	return re.(*regexp.Regexp)
}

// ResourceTemplates is every resource template of a tool: Resource, then
// Resources.
func (t *Tool) ResourceTemplates() []string {
	var out []string
	if t.Resource != "" {
		out = append(out, t.Resource)
	}
	return append(out, t.Resources...)
}

// RenderResources fills a resource template with a call's arguments, one
// resource per combination of the elements of the array arguments it
// names (so "contact:{to}" with to = [a, b] names contact:a and contact:b).
// A template whose argument is absent, or an empty array, names nothing.
func RenderResources(tmpl string, args map[string]any) []string {
	rt := templateOf(tmpl)
	if len(rt.names) == 1 {
		// One placeholder (or a bare name) with one value: one resource.
		v, ok := args[rt.names[0]]
		if !ok || v == nil {
			return nil
		}
		if _, isList := v.([]any); !isList {
			text := resourceText(v)
			if rt.bare {
				return []string{text}
			}
			return []string{strings.ReplaceAll(tmpl, rt.holes[0], text)}
		}
	}
	out := []string{tmpl}
	for i, name := range rt.names {
		v, ok := args[name]
		if !ok || v == nil {
			return nil
		}
		vals := []any{v}
		if list, isList := v.([]any); isList {
			vals = list
		}
		var next []string
		for _, partial := range out {
			for _, e := range vals {
				text := resourceText(e)
				if rt.bare {
					next = append(next, text)
				} else {
					next = append(next, strings.ReplaceAll(partial, rt.holes[i], text))
				}
			}
		}
		out = next
	}
	return out
}

// CallResources is every resource a call touches, over all of the tool's
// templates, in order and without repeats. args should be normalised.
func (t *Tool) CallResources(args map[string]any) []string {
	if t.Resource == "" && len(t.Resources) == 0 {
		return nil
	}
	if t.Resource == "" && len(t.Resources) == 1 || t.Resource != "" && len(t.Resources) == 0 {
		// One template: its resources, repeats dropped in place (the
		// slice is RenderResources' own).
		tmpl := t.Resource
		if tmpl == "" {
			tmpl = t.Resources[0]
		}
		rs := RenderResources(tmpl, args)
		if len(rs) > 8 {
			seen := make(map[string]bool, len(rs))
			out := rs[:0]
			for _, r := range rs {
				if !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
			return out
		}
		out := rs[:0]
		for _, r := range rs {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
		if len(out) == 0 {
			return nil // as appending nothing gave
		}
		return out
	}
	var out []string
	var seen map[string]bool // past a few resources; a linear scan before
	add := func(tmpl string) {
		for _, r := range RenderResources(tmpl, args) {
			if seen == nil && len(out) >= 8 {
				seen = make(map[string]bool, 2*len(out))
				for _, o := range out {
					seen[o] = true
				}
			}
			if seen != nil {
				if seen[r] {
					continue
				}
				seen[r] = true
			} else if slices.Contains(out, r) {
				continue
			}
			out = append(out, r)
		}
	}
	if t.Resource != "" {
		add(t.Resource)
	}
	for _, tmpl := range t.Resources {
		add(tmpl)
	}
	return out
}
