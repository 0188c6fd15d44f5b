package scenario

import (
	"slices"
	"strings"
)

// binds validates argument-bound approvals (Tool.Binds): each bound
// variable is one of the tool's authorization variables, each name is one
// of its arguments, and some trusted tool sets or appends the variable as
// an approval that names every bound argument, so that the binding can be
// met at all.
func (v *validator) binds() {
	for i, t := range v.s.Tools {
		for _, name := range sortedKeys(t.Binds) {
			p := pathf("tools[%d].binds.%s", i, name)
			if !slices.Contains(t.Authorizes, name) {
				v.addf(p, "%q is not in this tool's authorizes: only an authorization variable can be bound to arguments", name)
				continue
			}
			args := t.Binds[name]
			for j, a := range args {
				if props := v.props[t.Name]; props != nil {
					if _, ok := props[a]; !ok {
						v.addf(pathf("%s[%d]", p, j), "%q has no argument %q", t.Name, a)
					}
				}
			}
			if missing := v.unapprovable(name, args); missing != "" {
				v.addf(p, "no trusted tool sets %q to an approval naming %q (an effect that sets or appends an object with that key, e.g. {%q: \"$args.NAME\"}): the binding could never be met", name, missing, missing)
			}
		}
	}
}

// unapprovable returns the first bound argument that no trusted tool's
// effects name in an approval of variable name, or "".
func (v *validator) unapprovable(name string, args []string) string {
	named := map[string]bool{}
	for _, t := range v.s.Tools {
		if !t.Trusted {
			continue
		}
		for _, r := range t.Responses {
			if r.Effects == nil {
				continue
			}
			for _, m := range [][]byte{r.Effects.Set[name], r.Effects.Append[name]} {
				if len(m) == 0 {
					continue
				}
				x, err := DecodeJSON(m)
				if err != nil {
					continue
				}
				switch val := x.(type) {
				case map[string]any:
					for k := range val {
						named[k] = true
					}
				case string:
					// "$args": the producer's own arguments, by their names.
					if strings.TrimSpace(val) == "$args" {
						for k := range v.props[t.Name] {
							named[k] = true
						}
					}
				}
			}
		}
	}
	for _, a := range args {
		if !named[a] {
			return a
		}
	}
	return ""
}
