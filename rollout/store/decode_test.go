package store_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/antidrift/antidrift/internal/corpus"
	"github.com/antidrift/antidrift/internal/racetest"

	"github.com/antidrift/antidrift/rollout/store"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// mutations returns damaged copies of a line: cut short, a byte replaced,
// removed or inserted, at positions drawn from rng.
func mutations(line []byte, rng *rand.Rand, n int) [][]byte {
	if len(line) == 0 {
		return nil
	}
	junk := []byte(`"{}[]:,\ 0-1.e5tfn` + "\x00\x7f\xff\xc3")
	var out [][]byte
	for range n {
		i := rng.IntN(len(line))
		c := junk[rng.IntN(len(junk))]
		var m []byte
		switch rng.IntN(4) {
		case 0:
			m = append([]byte(nil), line[:i]...)
		case 1:
			m = append([]byte(nil), line...)
			m[i] = c
		case 2:
			m = append(append([]byte(nil), line[:i]...), line[i+1:]...)
		default:
			m = append(append(append([]byte(nil), line[:i]...), c), line[i:]...)
		}
		out = append(out, m)
	}
	return out
}

// The record decoder must give exactly encoding/json's results: the same
// record for every line of the demo's workload and of the test fixtures,
// and the same decision and message for damaged copies of them. The lean
// decoder (no message text) must decide the same and give the same record
// less the text.
func TestRecordDecoderMatchesEncodingJSON(t *testing.T) {
	racetest.SingleThreaded(t)
	lines := append(corpus.DemoLines(t), corpus.FixtureLines(t)...)
	// valid records whose messages and tools DecodeRecordPrompt must find
	// as decoding does (or leave to it): keys in another case or escaped,
	// given twice, values spaced out
	for _, l := range lines[:3] {
		for _, r := range [][2]string{
			{`"messages":`, `"Messages":`}, {`"messages":`, `"messag\u0065s":`}, {`"tools":`, `"TOOLS":`},
			{`"messages":`, `"messages":[{"role":"user","content":"first"}],"messages":`},
			{`"tools":`, `"tools":[{"x":1}],"tools":`}, {`"tools":`, `"tools":[{"x":1}],"Tools":`},
			{`"messages":[`, `"messages": [ `}, {`"tools":[`, `"tools": [ `}, {`},{"role"`, `} , {"role"`},
		} {
			if !strings.Contains(string(l), r[0]) {
				t.Fatalf("a demo line without %s: %.200s", r[0], l)
			}
			lines = append(lines, []byte(strings.Replace(string(l), r[0], r[1], 1)))
		}
	}
	for _, v := range []string{ // the skipped fields with the wrong type, and the right one
		`"messages":[{"role":"user","content":5}]`, `"messages":[{"role":"user","content":null}]`,
		`"messages":[{"role":"user","Content":"x"}]`, `"messages":[{"role":"user","reasoning":{}}]`,
		`"messages":[{"role":"user","reasoning":"r","content":"c"}]`, `"messages":{"role":"user"}`,
		`"messages":[null,{"role":7}]`, `"tools":5`, `"tools":[1,"x",{}]`, `"tools":null`, `"tools":{}`,
		`"messages":[{"content":"a\u12"}]`, `"messages":[{"content":"\q"}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":5}}]}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":null}}]}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":\"\u00e9\"}","parsed_arguments":{"a":"é"}}}]}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"\x"}}]}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"function":5}]}]`, `"messages":[{"role":"assistant","tool_calls":[null]}]`,
		`"messages":[{"role":"assistant","tool_calls":null}]`, `"messages":[{"role":"assistant","tool_calls":{}}]`, `"messages":[{"role":"assistant","tool_calls":[1]}]`,
		`"messages":[{"role":"assistant","tool_calls":[]}]`, `"messages":[{"role":"assistant","tool_calls":[{},{},{}]}]`,
		`"steps":[{"visible_tools":null}]`, `"steps":[{"visible_tools":[]}]`, `"steps":[{"visible_tools":["a",1]}]`, `"steps":[{"visible_tools":"a"}]`,
		// numbers out of their field's range or kind
		`"seed":27201533826105415372`, `"seed":9223372036854775807`, `"seed":9223372036854775808`, `"seed":-9223372036854775809`,
		`"seed":9999999999999999999`, `"seed":-9223372036854775808`, `"seed":6106071772379842383`, `"rollout":9223372036854775808`,
		`"rollout":1.5`, `"rollout":1e2`, `"rollout":1.0`, `"rollout":-0`, `"rollout":99999999999999999999`,
		`"rollout":2147483648`, `"judge":{"score":1e400}`, `"judge":{"score":-1e309}`, `"judge":{"score":1e308}`,
		`"usage":{"prompt_tokens":-1}`, `"usage":{"prompt_tokens":1e3}`, `"format_errors":18446744073709551616`,
		`"steps":[{"turn":1e1}]`, `"steps":[{"turn":00}]`, `"success":1`, `"drift_steps":[1.5]`,
		// what the scanning decoder checks without keeping
		`"tool_order":[1]`, `"tool_order":"x"`, `"tool_order":["a",null]`, `"plan":5`, `"plan":null`,
		`"judge":{"reason":5}`, `"judge":"x"`, `"judge":{"kind":null,"score":"1"}`,
		`"steps":[{"usage":5}]`, `"steps":[{"usage":null}]`, `"steps":[{"usage":{"total_tokens":1.5}}]`,
		`"steps":[{"finish_reason":1}]`, `"steps":[{"format_error":"yes"}]`,
		`"steps":[{"calls":[{"outcome":5}]}]`, `"steps":[{"calls":[{"call":"1"}]}]`, `"steps":[{"calls":{}}]`,
		`"messages":[{"role":"assistant"}],"steps":[{"turn":0,"calls":[{"outcome":"unparsed"}]}]`,
		`"messages":[{"role":"assistant"}],"steps":[{"turn":0,"calls":[{"outcome":"unp\u0061rsed"}]}]`,
		`"messages":[{"role":"assistant"}],"steps":[{"turn":0,"calls":[{"outcome":"matched"}]}]`,
		`"messages":[{"role":"\u0061ssistant","tool_calls":[{}]}],"steps":[{"turn":0,"calls":[{"outcome":"matched"}]}]`,
		`"messages":[{"role":null}]`, `"messages":[{"role":"user","name":5}]`, `"messages":[{"role":"tool","tool_call_id":[]}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"id":1}]}]`, `"messages":[{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":[1,{}]}}]}]`,
		`"exposure":5`, `"exposure":null`, `"exposure":{"v":"1"}`, `"exposure":{"v":1,"steps":2,"visible_by_risk":[1,2,3,4]}`,
		`"exposure":{"v":1,"ran_calls":[0,1.5]}`, `"exposure":{"v":1,"steps":3,"calls":2,"visible_by_risk":[1,2,3]}`,
	} {
		lines = append(lines, []byte(`{"traj_id":"a","scenario_id":"s",`+v+`}`))
	}
	// valid records: what DecodeRecordPrompt keeps of later messages and
	// steps (parsed arguments by kind), members given twice, none at all
	var crafted []string
	for _, v := range []string{
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":"x"}},{"function":{"parsed_arguments":null}},{"function":{"parsed_arguments": {"a":1}}},{"function":{}},{"function":{"parsed_arguments":[1]}},{"function":{"parsed_arguments":2.5}}]}]`,
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":{"a":1},"parsed_arguments":"s"}}]}]`,
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{},{}],"tool_calls":[{"function":{"parsed_arguments":{}}}]}]`,
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{}],"tool_calls":null}]`,
		`"messages":[{"role":"user"},{"role":"assistant"}],"steps":[{"turn":1,"visible_tools":["a"],"visible_tools":["b","c"]}]`,
		`"messages":[{"role":"user"},{"role":"assistant"}],"steps":[{"turn":1,"visible_tools":["a"]}],"steps":[{"turn":1,"visible_tools":null},{"turn":1}]`,
		`"messages":[{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":{"x":[]}}}]}],"messages":[{"role":"system","content":"s"},{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":"{"}}]}]`,
		`"messages":[{"role":"user"}],"steps":[],"tools":[]`, `"messages":[{"role":"user"}],"steps":null,"tools":null`,
		`"messages":[{"role":"user"}],"tools":[{"a":1} , {"b":[2]}]`,
		// decoding merges a second array or object into the first's elements,
		// which keep what the second leaves out
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":"s"}}],"tool_calls":[{"function":{"name":"f"}}]}],"steps":[{"turn":1,"calls":[{}]}]`,
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{"function":{"parsed_arguments":"s"},"function":{"name":"f"}}]}],"steps":[{"turn":1,"calls":[{}]}]`,
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{}]}],"steps":[{"turn":1,"calls":[{"outcome":"unparsed"}],"calls":[{"tool":"t"}]}]`,
		`"messages":[{"role":"user"},{"role":"assistant"}],"steps":[{"turn":1,"visible_tools":["a"]}],"steps":[{"visible_tools":["b"]}]`,
		`"messages":[{"role":"user"},{"role":"assistant"}],"Steps":[{"turn":1}],"steps":[{"visible_tools":["b"]}]`,
		`"messages":[{"role":"user"},{"role":"assistant"}],"st\u0065ps":[{"turn":1}],"steps":[{"visible_tools":["b"]}]`,
		`"x":123456789012345678901234,"messages":[{"role":"user"},{"role":"assistant"}],"Steps":[{"turn":1}],"steps":[{"visible_tools":["b"]}]`,
		`"messages":[{"role":"user"},{"role":"assistant","tool_calls":[{}]}],"messages":[{"content":"x"},{"content":"y"}],"steps":[{"turn":1,"calls":[{"outcome":"matched"}]}]`,
	} {
		l := `{"traj_id":"a","scenario_id":"s","status":"completed","success":true,` + v + `}`
		crafted = append(crafted, l)
		lines = append(lines, []byte(l))
	}
	for _, depth := range []int{9999, 10000, 10001} { // encoding/json's nesting limit is 10,000
		lines = append(lines, []byte(`{"traj_id":"a","scenario_id":"s","x":`+strings.Repeat("[", depth)+strings.Repeat("]", depth)+"}"))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var all [][]byte
	for i, l := range lines {
		all = append(all, l)
		per := 4
		if i%7 == 0 {
			per = 40
		}
		all = append(all, mutations(l, rng, per)...)
	}
	for _, l := range crafted {
		var r trajectory.Record
		if err := store.DecodeRecordWithStd([]byte(l), &r); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	valid := 0
	for i, l := range all {
		var got, want trajectory.Record
		gerr := store.DecodeRecord(l, &got)
		werr := store.DecodeRecordWithStd(l, &want)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("line %d %.200q: error %v, encoding/json says %v", i, l, gerr, werr)
		}
		var lean trajectory.Record
		lerr := store.DecodeRecordLean(l, &lean)
		if fmt.Sprint(lerr) != fmt.Sprint(werr) {
			t.Fatalf("line %d %.200q: lean decoding error %v, encoding/json says %v", i, l, lerr, werr)
		}
		n := i % 4 // the first request's length DecodeRecordPrompt is told
		var prompt trajectory.Record
		perr := store.DecodeRecordPrompt(l, &prompt, func(ms []trajectory.Message) int { return n })
		if fmt.Sprint(perr) != fmt.Sprint(werr) {
			t.Fatalf("line %d %.200q: prompt decoding error %v, encoding/json says %v", i, l, perr, werr)
		}
		var scan trajectory.Record
		serr := store.DecodeRecordScan(l, &scan)
		if fmt.Sprint(serr) != fmt.Sprint(werr) {
			t.Fatalf("line %d %.200q: scanning decoder error %v, encoding/json says %v", i, l, serr, werr)
		}
		if gerr == nil {
			valid++
			if !reflect.DeepEqual(scan, scanned(want)) {
				t.Fatalf("line %d %q: scanned record differs from encoding/json's less what scanning drops:%s", i, l, fieldDiff(scan, scanned(want)))
			}
			if w := withPrompt(want, n); !reflect.DeepEqual(prompt, w) {
				t.Fatalf("line %d %q: prompt-decoded record differs from encoding/json's without text past %d messages:%s", i, l, n, fieldDiff(prompt, w))
			}
			if !reflect.DeepEqual(lean, withoutText(want)) {
				t.Fatalf("line %d %q: lean record differs from encoding/json's without text:%s", i, l, fieldDiff(lean, withoutText(want)))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("line %d %q: decoded record differs from encoding/json's:%s", i, l, fieldDiff(got, want))
			}
		}
	}
	t.Logf("%d lines (%d from runs and fixtures), %d valid records", len(all), len(lines), valid)
}

// fieldDiff names the fields in which two records differ.
func fieldDiff(got, want trajectory.Record) string {
	var b strings.Builder
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for f := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(f).Interface(), wv.Field(f).Interface()) {
			fmt.Fprintf(&b, "\n%s: got %#v, want %#v", gv.Type().Field(f).Name, gv.Field(f).Interface(), wv.Field(f).Interface())
		}
	}
	return b.String()
}

// scanned is r as DecodeRecordScan leaves it.
func scanned(r trajectory.Record) trajectory.Record {
	r.Messages, r.Tools, r.ToolOrder, r.Steps, r.Plan = nil, nil, nil, nil, ""
	r.Judge = trajectory.Judgement{}
	return r
}

// withPrompt is r as DecodeRecordPrompt leaves it when told the first
// request is n messages long: what scanning keeps, the judge's score, the
// tools, the first n messages, and of the rest of the messages and of the
// steps only roles, parsed arguments' kinds, turns and visible tools.
func withPrompt(r trajectory.Record, n int) trajectory.Record {
	w := scanned(r)
	w.Judge.Score = r.Judge.Score
	w.Tools = r.Tools
	for i, m := range r.Messages {
		if i < n {
			w.Messages = append(w.Messages, m)
			continue
		}
		k := trajectory.Message{Role: m.Role}
		for _, tc := range m.ToolCalls {
			var c trajectory.ToolCall
			switch p := strings.TrimSpace(string(tc.Function.Parsed)); {
			case strings.HasPrefix(p, "{"):
				c.Function.Parsed = json.RawMessage("{}")
			case tc.Function.Parsed != nil:
				c.Function.Parsed = tc.Function.Parsed
			}
			k.ToolCalls = append(k.ToolCalls, c)
		}
		w.Messages = append(w.Messages, k)
	}
	for _, s := range r.Steps {
		w.Steps = append(w.Steps, trajectory.Step{Turn: s.Turn, Visible: s.Visible})
	}
	return w
}

// withoutText is r as DecodeRecordLean leaves it.
func withoutText(r trajectory.Record) trajectory.Record {
	if r.Messages != nil {
		ms := make([]trajectory.Message, len(r.Messages))
		for i, m := range r.Messages {
			m.Content, m.Reasoning = "", ""
			if m.ToolCalls != nil {
				tcs := make([]trajectory.ToolCall, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					tc.Function.Arguments = ""
					tcs[j] = tc
				}
				m.ToolCalls = tcs
			}
			ms[i] = m
		}
		r.Messages = ms
	}
	if r.Tools != nil {
		r.Tools = make([]json.RawMessage, len(r.Tools))
	}
	return r
}
