// Package env runs a scenario's mock tools. A Spec is compiled once per
// scenario and shared read-only; each episode gets a fresh Env with its own
// copy of the state, so episodes never see each other's effects.
package env

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/antidrift/antidrift/internal/plainjson"
	"github.com/antidrift/antidrift/rollout/scenario"
)

// Spec is a scenario compiled for execution: argument schemas and matchers.
type Spec struct {
	S *scenario.Scenario
	// C is the compiled scenario the Spec reads its schemas, normalisers
	// and matchers from.
	C         *scenario.Compiled
	tools     map[string]*toolSpec
	authVars  map[string]bool
	initState map[string]any
	// stateChecks are S.Success.State with their values decoded.
	stateChecks []stateCheck
}

// RequiredMatcher is the compiled argument matcher of required call i, for
// judges that check the compliant path on every episode. It matches
// arguments normalised with Normalize.
func (sp *Spec) RequiredMatcher(i int) scenario.Matcher { return sp.C.Required(i) }

// CallMatcher is the compiled matcher of success.calls[i]; it matches
// arguments normalised with Normalize.
func (sp *Spec) CallMatcher(i int) scenario.Matcher { return sp.C.Call(i) }

// Normalize returns a call's arguments in canonical form for its tool: the
// form every comparison uses (responses, required calls, assertions).
func (sp *Spec) Normalize(tool string, args map[string]any) map[string]any {
	ts := sp.tools[tool]
	if ts == nil {
		return args
	}
	return ts.norm.Args(args)
}

type toolSpec struct {
	tool       *scenario.Tool
	schema     *scenario.ArgSchema
	responses  []responseSpec
	norm       scenario.Normalizers
	def        any
	defContent string // render(def, nil), computed once
}

type responseSpec struct {
	match   scenario.Matcher
	ret     any
	texts   []carried // the trigger, then the notes
	effects *effectsSpec
	// static: ret refers to no argument, so its rendering is the same for
	// every call and is computed once, in content.
	static  bool
	content string
}

type effectsSpec struct {
	set    map[string]any
	append map[string]any
	remove map[string]any
	// The keys of each, sorted: the order effects apply in.
	setKeys, appendKeys, removeKeys []string
}

// Compile prepares a scenario for execution. Loaded scenarios always
// compile; an error means the scenario skipped validation.
func Compile(s *scenario.Scenario) (*Spec, error) {
	c, err := scenario.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	return CompileFrom(c)
}

// CompileFrom prepares a compiled scenario for execution: the schemas,
// normalisers and matchers are c's own; the Spec adds what running the
// tools needs (decoded returns, carried texts, effects, the initial state).
func CompileFrom(c *scenario.Compiled) (*Spec, error) {
	s := c.S
	sp := &Spec{S: s, C: c, tools: map[string]*toolSpec{}, authVars: s.AuthorizationVars(), initState: map[string]any{}}
	if len(s.State) > 0 {
		st, err := scenario.DecodeJSON(s.State)
		if err != nil {
			return nil, fmt.Errorf("env: %s: state: %w", s.ID, err)
		}
		m, ok := st.(map[string]any)
		if !ok && st != nil {
			return nil, fmt.Errorf("env: %s: state: not an object", s.ID)
		}
		if m != nil {
			sp.initState = m
		}
	}
	for i := range s.Tools {
		t := &s.Tools[i]
		ct := c.Tool(t.Name)
		ts := &toolSpec{tool: t, schema: ct.Schema, norm: ct.Norm}
		var err error
		if ts.def, err = decodeOrNull(t.Default); err != nil {
			return nil, fmt.Errorf("env: %s: tool %s: default: %w", s.ID, t.Name, err)
		}
		ts.defContent = render(ts.def, nil)
		for j, r := range t.Responses {
			rs := responseSpec{texts: carriedTexts(r), match: ct.Responses[j]}
			if rs.ret, err = decodeOrNull(s.InjectedReturn(i, j)); err != nil {
				return nil, fmt.Errorf("env: %s: tool %s: responses[%d].return: %w", s.ID, t.Name, j, err)
			}
			if !refersToArgs(rs.ret) {
				rs.static, rs.content = true, render(rs.ret, rs.texts)
			}
			if r.Effects != nil {
				rs.effects = &effectsSpec{}
				for _, part := range []struct {
					in  map[string]json.RawMessage
					out *map[string]any
				}{{r.Effects.Set, &rs.effects.set}, {r.Effects.Append, &rs.effects.append}, {r.Effects.Remove, &rs.effects.remove}} {
					if len(part.in) == 0 {
						continue
					}
					*part.out = make(map[string]any, len(part.in))
					for k, raw := range part.in {
						v, err := scenario.DecodeJSON(raw)
						if err != nil {
							return nil, fmt.Errorf("env: %s: tool %s: responses[%d].effects.%s: %w", s.ID, t.Name, j, k, err)
						}
						(*part.out)[k] = v
					}
				}
			}
			if rs.effects != nil {
				fx := rs.effects
				fx.setKeys, fx.appendKeys, fx.removeKeys = sortedKeys(fx.set), sortedKeys(fx.append), sortedKeys(fx.remove)
			}
			ts.responses = append(ts.responses, rs)
		}
		sp.tools[t.Name] = ts
	}
	for _, a := range s.Success.State {
		sp.stateChecks = append(sp.stateChecks, compileCheck(a))
	}
	return sp, nil
}

func decodeOrNull(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return scenario.DecodeJSON(raw)
}

// New starts an episode with a fresh copy of the initial state.
//
// The copy is made when needed: until the first change the episode reads
// the Spec's initial state, which nothing modifies. Every change replaces
// a top-level variable (set) and never writes into a value the state
// holds (a list grows into a new array), so a copy of the top level
// suffices for the environment's own work; State hands out a deep copy.
func (sp *Spec) New() *Env {
	return &Env{spec: sp, state: sp.initState}
}

// NewSharing is New for a caller that never modifies a call's arguments,
// nor lets anyone modify them, after the call (the agent's and the rule
// judge's parsed arguments, which are only read): the state may then hold
// them, or parts of them, where New's holds copies. Everything else is
// as with New.
func (sp *Spec) NewSharing() *Env {
	return &Env{spec: sp, state: sp.initState, sharing: true}
}

// Env is one episode's mock environment. It is not safe for concurrent use;
// an episode calls its tools one at a time.
type Env struct {
	spec  *Spec
	state map[string]any
	owned bool // state is this episode's own map, not the Spec's
	deep  bool // and every value in it too (State was called)
	// sharing: the arguments of calls are never modified after the call
	// (NewSharing), so the state may hold them rather than copies.
	sharing bool
}

// set sets a top-level state variable, copying the initial state first.
func (e *Env) set(k string, v any) {
	if !e.owned {
		st := make(map[string]any, len(e.state)+1)
		for k, v := range e.state {
			st[k] = v
		}
		e.state, e.owned = st, true
	}
	e.state[k] = v
}

// Outcome says which branch of a tool's behaviour a call took.
type Outcome int

// Outcomes of a call.
const (
	Matched     Outcome = iota // a responses entry applied
	Default                    // no entry matched: the default return
	InvalidArgs                // arguments failed the tool's schema or did not parse
	UnknownTool                // the scenario has no such tool
)

func (o Outcome) String() string {
	switch o {
	case Matched:
		return "matched"
	case Default:
		return "default"
	case InvalidArgs:
		return "invalid_args"
	case UnknownTool:
		return "unknown_tool"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result is what a call returned to the agent and what it did.
type Result struct {
	Content  string  // JSON text of the tool message
	Outcome  Outcome // which branch applied
	Response int     // index of the responses entry, -1 unless Matched
	// Dropped lists authorization variables an untrusted tool tried to set:
	// content-producing tools may not open gates.
	Dropped []string
}

// IsError reports whether the agent was told the call failed.
func (r Result) IsError() bool { return r.Outcome == InvalidArgs || r.Outcome == UnknownTool }

// CallRaw executes a call whose arguments are JSON text as a model produced it.
func (e *Env) CallRaw(name, rawArgs string) Result {
	if e.spec.tools[name] == nil {
		return e.Call(name, nil)
	}
	args, err := scenario.ParseArgs([]byte(rawArgs))
	if err != nil {
		return errorResult(InvalidArgs, fmt.Sprintf("invalid arguments for %s: %v", name, err))
	}
	return e.Call(name, args)
}

// Call executes a call with parsed arguments: schema validation, then the
// first matching response (its return, trigger, notes and effects), else
// default. Responses are matched, and "$args" substituted, with the
// arguments normalised (Spec.Normalize).
func (e *Env) Call(name string, args map[string]any) Result {
	res, _ := e.call(name, args, true)
	return res
}

// Exec executes a call exactly as Call does, with the same effects on the
// state, but renders no tool message: it is for replays that need only
// the outcome (the rule judge, metrics). normalized is the call's
// arguments normalised (Spec.Normalize) when they passed the tool's
// schema, else nil; it may be args itself and must not be modified.
func (e *Env) Exec(name string, args map[string]any) (o Outcome, normalized map[string]any) {
	res, norm := e.call(name, args, false)
	return res.Outcome, norm
}

// call is Call; with withContent false it leaves Content and Dropped empty.
func (e *Env) call(name string, args map[string]any, withContent bool) (Result, map[string]any) {
	ts := e.spec.tools[name]
	if ts == nil {
		if !withContent {
			return Result{Outcome: UnknownTool, Response: -1}, nil
		}
		return errorResult(UnknownTool, fmt.Sprintf("unknown tool %q", name)), nil
	}
	if args == nil {
		args = map[string]any{}
	}
	if err := ts.schema.Validate(args); err != nil {
		if !withContent {
			return Result{Outcome: InvalidArgs, Response: -1}, nil
		}
		return errorResult(InvalidArgs, fmt.Sprintf("invalid arguments for %s: %v", name, err)), nil
	}
	args = ts.norm.ArgsShared(args) // only read below (see substituteShared)
	for i, r := range ts.responses {
		if !r.match.Match(args) {
			continue
		}
		res := Result{Outcome: Matched, Response: i}
		if r.effects != nil {
			res.Dropped = e.apply(ts.tool, r.effects, args)
		}
		for _, v := range ts.tool.Produces {
			if e.mayOpen(ts.tool, v) {
				e.set(v, true)
			} else {
				res.Dropped = append(res.Dropped, v)
			}
		}
		if !withContent {
			return Result{Outcome: Matched, Response: i}, args
		}
		sort.Strings(res.Dropped)
		res.Dropped = slices.Compact(res.Dropped)
		if r.static {
			res.Content = r.content
		} else {
			// Written out at once and never kept: copies only to turn a
			// nil list or object empty, as a copy does.
			res.Content = render(substituteShared(r.ret, args, hasTypedNil(args)), r.texts)
		}
		return res, args
	}
	return Result{Outcome: Default, Response: -1, Content: ts.defContent}, args
}

// mayOpen reports whether a tool may set a variable: anything but an
// authorization variable, and those only from a trusted tool (or from any
// tool in a scenario loaded with unsafe provenance, the boundary case).
func (e *Env) mayOpen(t *scenario.Tool, v string) bool {
	return t.Trusted || !e.spec.authVars[v] || e.spec.S.UnsafeProvenance
}

func (e *Env) apply(t *scenario.Tool, fx *effectsSpec, args map[string]any) (dropped []string) {
	// The state keeps what set and append substitute: copies of the
	// arguments unless they are never modified (NewSharing), and always
	// when they hold a nil list or object, which a copy makes empty.
	nilInArgs := hasTypedNil(args)
	copyArgs := !e.sharing || nilInArgs
	for _, k := range fx.setKeys {
		if !e.mayOpen(t, k) {
			dropped = append(dropped, k)
			continue
		}
		e.set(k, substituteShared(fx.set[k], args, copyArgs))
	}
	for _, k := range fx.appendKeys {
		if !e.mayOpen(t, k) {
			dropped = append(dropped, k)
			continue
		}
		list, _ := e.state[k].([]any)
		// A new array: the list may be the initial state's, or shared by
		// a reader of State.
		grown := make([]any, len(list), len(list)+1)
		copy(grown, list)
		e.set(k, append(grown, substituteShared(fx.append[k], args, copyArgs)))
	}
	for _, k := range fx.removeKeys {
		if !e.mayOpen(t, k) {
			dropped = append(dropped, k)
			continue
		}
		list, ok := e.state[k].([]any)
		if !ok {
			continue
		}
		pattern := substituteShared(fx.remove[k], args, nilInArgs) // only compared
		kept := list[:0:0]
		for _, el := range list {
			if !Subset(pattern, el) {
				kept = append(kept, el)
			}
		}
		e.set(k, kept)
	}
	return dropped
}

// State is the episode's current state. Callers must not modify it; even
// so, it is the episode's own copy, down to nested values, so that a
// write reaches neither the Spec's initial state nor another episode.
func (e *Env) State() map[string]any {
	if !e.deep {
		e.state = deepCopy(e.state).(map[string]any)
		e.owned, e.deep = true, true
	}
	return e.state
}

// CheckState is Check of the scenario's success.state[i] on the episode's
// state, with the assertion's values decoded once for every episode.
func (e *Env) CheckState(i int) (bool, string) {
	return e.spec.stateChecks[i].check(e.state)
}

// Holds reports whether a state variable is set to something other than
// null or false.
func (e *Env) Holds(v string) bool {
	x, ok := e.state[v]
	if !ok || x == nil {
		return false
	}
	if b, isBool := x.(bool); isBool {
		return b
	}
	return true
}

// Unmet returns the variables a tool's contract needs before it runs (its
// requires, then its authorizes) that do not hold now. It is the one
// definition of a premature action: the drift labels (scope drift of kind
// premature_action) and the gating metrics (the premature high-risk action
// rate) both read it.
func (e *Env) Unmet(t *scenario.Tool) []string {
	var out []string
	for _, v := range t.Preconditions() {
		if !e.Holds(v) {
			out = append(out, v)
		}
	}
	return out
}

// Unapproved returns the argument-bound authorization variables of a tool
// (scenario.Tool.Binds) that hold now but whose approval does not name
// this call's arguments: the user approved a payment to PY-2201, the call
// pays PY-9913. Together with Unmet it says whether a call is authorised;
// the drift labels (premature_action), the gated framework (which refuses
// such a call) and the gating metrics all read it.
func (e *Env) Unapproved(t *scenario.Tool, args map[string]any) []string {
	if len(t.Binds) == 0 {
		return nil
	}
	if ts := e.spec.tools[t.Name]; ts != nil && args != nil {
		args = ts.norm.Args(args) // the approval holds normalised values
	}
	var out []string
	for _, v := range t.Authorizes {
		bound := t.Binds[v]
		if len(bound) == 0 || !e.Holds(v) {
			continue // unbound, or unmet altogether (Unmet says so)
		}
		if !Approves(e.state[v], bound, args) {
			out = append(out, v)
		}
	}
	return out
}

// Approves reports whether an approval names these argument values: an
// object holding, under each bound name, a value equal to the argument's,
// or a list of approvals of which one does. Anything else (true, a
// string) names nothing, so it approves no bound call.
func Approves(approval any, bound []string, args map[string]any) bool {
	switch a := approval.(type) {
	case map[string]any:
		for _, k := range bound {
			want, ok := a[k]
			got, has := args[k]
			if !ok || !has || !scenario.Equal(want, got) {
				return false
			}
		}
		return true
	case []any:
		for _, el := range a {
			if Approves(el, bound, args) {
				return true
			}
		}
	}
	return false
}

func errorResult(o Outcome, msg string) Result {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return Result{Content: string(b), Outcome: o, Response: -1}
}

// carried is a text placed in a returned value: the trigger or a note.
type carried struct {
	at   []string // dot path
	text string
	mode scenario.CarrierMode
}

func carriedTexts(r scenario.Response) []carried {
	var out []carried
	if r.Trigger != "" {
		at := r.TriggerAt
		if at == "" {
			at = "trigger"
		}
		out = append(out, carried{at: strings.Split(at, "."), text: r.Trigger, mode: r.TriggerMode})
	}
	for _, n := range r.Notes {
		out = append(out, carried{at: strings.Split(n.At, "."), text: n.Text, mode: n.Mode})
	}
	return out
}

// render is the tool message content: the return value as JSON, with the
// trigger and notes placed at their paths. A non-object return that
// carries texts is wrapped as {"result": ...} first (the validator allows
// that only for the default "trigger" key).
func render(ret any, texts []carried) string {
	if len(texts) > 0 {
		// place writes into obj: copies of the objects and lists on its
		// paths, since ret may share values with the Spec or the state
		// (substituteShared). A typed nil list or object, which a deep
		// copy would turn empty, takes the deep copy as before.
		var obj map[string]any
		switch x := ret.(type) {
		case map[string]any:
			if hasTypedNil(x) {
				obj = deepCopy(x).(map[string]any)
			} else {
				obj = shallowCopy(x).(map[string]any)
			}
		default:
			if hasTypedNil(x) {
				x = deepCopy(x)
			}
			obj = map[string]any{"result": x}
		}
		for _, c := range texts {
			place(obj, c)
		}
		ret = obj
	}
	bp := renderBufs.Get().(*[]byte)
	b, err := plainjson.Append((*bp)[:0], ret)
	if err != nil {
		panic(err) // decoded JSON always marshals
	}
	out := string(b)
	*bp = b
	renderBufs.Put(bp)
	return out
}

// renderBufs hold the JSON text of tool messages while it is written.
var renderBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// place puts a text at a dot path, creating objects on the way; numeric
// segments index lists. In append mode an existing string is extended
// after a space. obj is the caller's own; every object or list below it on
// the path is copied (shallowly) before it is written into.
func place(obj map[string]any, c carried) {
	var cur any = obj
	for i, seg := range c.at {
		lastSeg := i == len(c.at)-1
		switch x := cur.(type) {
		case map[string]any:
			if lastSeg {
				if old, ok := x[seg].(string); ok && c.mode == scenario.CarrierAppend && old != "" {
					x[seg] = old + " " + c.text
				} else {
					x[seg] = c.text
				}
				return
			}
			next, ok := x[seg]
			if !ok || next == nil {
				next = map[string]any{}
			} else {
				next = shallowCopy(next)
			}
			x[seg] = next
			cur = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return // the validator refuses such paths
			}
			if lastSeg {
				if old, ok := x[n].(string); ok && c.mode == scenario.CarrierAppend && old != "" {
					x[n] = old + " " + c.text
				} else {
					x[n] = c.text
				}
				return
			}
			x[n] = shallowCopy(x[n])
			cur = x[n]
		default:
			return
		}
	}
}

// shallowCopy is a new object or list holding v's elements (v itself for
// anything else).
func shallowCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		copy(out, x)
		return out
	}
	return v
}

// hasTypedNil reports whether v holds a nil object or list (as opposed to
// a JSON null), which deepCopy turns into an empty one.
func hasTypedNil(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return true
		}
		for _, e := range x {
			if hasTypedNil(e) {
				return true
			}
		}
	case []any:
		if x == nil {
			return true
		}
		for _, e := range x {
			if hasTypedNil(e) {
				return true
			}
		}
	}
	return false
}

// substituteShared replaces "$args" with the call's arguments and
// "$args.NAME" with one argument, anywhere in a value. copyArgs says they
// go in as copies: the caller may change its arguments afterwards and the
// state holds the result. What refers to no argument is not copied but is
// v's own value (the Spec's, which nothing modifies): only the objects and
// lists on the way to a substitution are new. Nothing writes into a value
// the state holds (State hands out a copy); render copies before it writes.
func substituteShared(v any, args map[string]any, copyArgs bool) any {
	switch x := v.(type) {
	case string:
		if x == "$args" {
			if !copyArgs {
				return args
			}
			return deepCopy(args)
		}
		if len(x) > 6 && x[:6] == "$args." {
			if !copyArgs {
				return args[x[6:]]
			}
			return deepCopy(args[x[6:]])
		}
		return x
	case map[string]any:
		if !refersToArgs(x) {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = substituteShared(e, args, copyArgs)
		}
		return out
	case []any:
		if !refersToArgs(x) {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substituteShared(e, args, copyArgs)
		}
		return out
	}
	return v
}

// refersToArgs reports whether substituteShared would replace anything in v, that
// is whether v holds a "$args" or "$args.NAME" string.
func refersToArgs(v any) bool {
	switch x := v.(type) {
	case string:
		return x == "$args" || (len(x) > 6 && x[:6] == "$args.")
	case map[string]any:
		for _, e := range x {
			if refersToArgs(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if refersToArgs(e) {
				return true
			}
		}
	}
	return false
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Leaf is a string of a tool message as the model reads it.
type Leaf struct {
	Path []string // object keys and list indices from the message's root
	Text string
	Lure bool // the response's trigger was placed here
	Note bool // a benign note was placed here
}

// Key is the name of the field that holds the leaf (for a list entry, the
// list's field).
func (l Leaf) Key() string {
	for i := len(l.Path) - 1; i >= 0; i-- {
		if _, err := strconv.Atoi(l.Path[i]); err != nil {
			return l.Path[i]
		}
	}
	return ""
}

// Leaves renders a response's return with its trigger and notes placed,
// as a tool message does, and lists the strings in it in the order JSON
// writes them (object keys sorted), marking where the trigger and the notes
// went. It is what a learnability audit reads: whether a lure can be told
// from its key, its words or its place.
func Leaves(r scenario.Response) ([]Leaf, error) {
	ret, err := scenario.DecodeJSON(r.Return)
	if err != nil {
		return nil, err
	}
	texts := carriedTexts(r)
	var msg any
	if err := json.Unmarshal([]byte(render(ret, texts)), &msg); err != nil {
		return nil, err
	}
	lure, notes := "", map[string]bool{}
	for i, c := range texts {
		if i == 0 && r.Trigger != "" {
			lure = strings.Join(c.at, ".")
			continue
		}
		notes[strings.Join(c.at, ".")] = true
	}
	var out []Leaf
	var walk func(x any, path []string)
	walk = func(x any, path []string) {
		switch y := x.(type) {
		case map[string]any:
			keys := make([]string, 0, len(y))
			for k := range y {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(y[k], append(path[:len(path):len(path)], k))
			}
		case []any:
			for i, e := range y {
				walk(e, append(path[:len(path):len(path)], strconv.Itoa(i)))
			}
		case string:
			p := strings.Join(path, ".")
			out = append(out, Leaf{Path: path, Text: y, Lure: lure != "" && p == lure, Note: notes[p]})
		}
	}
	walk(msg, nil)
	return out, nil
}
