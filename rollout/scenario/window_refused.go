package scenario

// RefusedArgBreaches is ArgBreaches for a call that failed the tool's
// schema, which the mock tool answered with an error and did not execute.
// Every constraint checks it as ArgBreaches does (an attempt to use a
// forbidden value drifts whether or not it ran), except that a window
// skips the values it cannot place in time. A value that a "date-time" or
// "date" field's format cannot read (a local time without an offset, a
// date-time where a day is asked) is why the schema refused the call, and
// the agent was told what to write: it is a malformed argument, not a time
// outside the boundary. A placeable value outside the window still drifts,
// whatever else made the call invalid. On a call the schema accepted, an
// unplaceable value (in a field that declares no time format) stays a
// breach: the tool acted at a time no one can check.
func (cc *CompiledConstraint) RefusedArgBreaches(norm Normalizers, args map[string]any) []string {
	if cc.C.Type != ConstraintWindow {
		return cc.ArgBreaches(norm, args)
	}
	var out []string
	for _, path := range cc.C.Args {
		for _, v := range ValuesAt(args, path) {
			text, ok := v.(string)
			if !ok {
				continue
			}
			if _, _, ok := cc.span(text); !ok {
				continue
			}
			if d := cc.valueBreach(norm, path, v); d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}
