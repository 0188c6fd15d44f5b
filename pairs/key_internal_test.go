package pairs

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/antidrift/antidrift/rollout/trajectory"
)

// fmtCanonical is the dedup key's message form before message keys: %q of
// every field and a json round trip of the parsed arguments. The message
// keys must make exactly the same messages equal.
func fmtCanonical(h io.Writer, m *trajectory.Message) {
	fmt.Fprintf(h, "%q %q %q %d\n", m.Role, m.Content, m.Name, len(m.ToolCalls))
	for i := range m.ToolCalls {
		f := &m.ToolCalls[i].Function
		args := []byte(f.Arguments)
		if len(f.Parsed) > 0 {
			var v any
			if json.Unmarshal(f.Parsed, &v) == nil {
				args, _ = json.Marshal(v)
			}
		}
		fmt.Fprintf(h, "%q %q %t %q\n", m.ToolCalls[i].Type, f.Name, len(f.Parsed) > 0, args)
	}
}

func fmtDigest(m *trajectory.Message) [32]byte {
	h := sha256.New()
	fmtCanonical(h, m)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

func call(id, name, args, parsed string) trajectory.ToolCall {
	return trajectory.ToolCall{ID: id, Type: "function", Function: trajectory.FunctionCall{Name: name, Arguments: args, Parsed: json.RawMessage(parsed)}}
}

func asst(calls ...trajectory.ToolCall) trajectory.Message {
	return trajectory.Message{Role: trajectory.RoleAssistant, ToolCalls: calls}
}

// keyMessages are messages that are equal, or nearly so, in every way the
// dedup key and sameMessage look at (and some they ignore).
func keyMessages() []trajectory.Message {
	return []trajectory.Message{
		{Role: "user", Content: "hello"},
		{Role: "user", Content: "hello", Reasoning: "ignored"},
		{Role: "user", Content: "hello "},
		{Role: "system", Content: "hello"},
		{Role: "user", Content: "a\"b"},
		{Role: "user", Content: "a\\\"b"},
		{Role: "user", Content: "\xff"},
		{Role: "user", Content: "\\xff"},
		{Role: "user", Content: "ÿ"},
		{Role: "user", Content: "x", Name: "y"},
		{Role: "user", Content: "xy"},
		{Role: "user", Content: "x y"},
		{Role: "tool", Content: "r", Name: "t", ToolCallID: "1"},
		{Role: "tool", Content: "r", Name: "t", ToolCallID: "2"},
		asst(call("1", "f", `{"a":1,"b":2}`, `{"a":1,"b":2}`)),
		asst(call("2", "f", `{"b":2,"a":1}`, `{"b":2,"a":1}`)),     // key order: equal
		asst(call("3", "f", `{"a":1.0,"b":2}`, `{"a":1.0,"b":2}`)), // number form: equal
		asst(call("4", "f", `{"a":1,"b":2}`, `{"a":1, "b":2}`)),    // spacing: equal
		asst(call("5", "g", `{"a":1,"b":2}`, `{"a":1,"b":2}`)),
		asst(call("6", "f", `{"a":"<"}`, `{"a":"\u003c"}`)),
		asst(call("7", "f", `{"a":"<"}`, `{"a":"<"}`)),
		asst(call("8", "f", `{"a":12345678901234567891}`, `{"a":12345678901234567891}`)),
		asst(call("9", "f", `{"a":12345678901234567892}`, `{"a":12345678901234567892}`)), // equal as float64
		asst(call("a", "f", `{"a":1,"a":2}`, `{"a":1,"a":2}`)),                           // the last key wins: {"a":2}
		asst(call("b", "f", `{"a":2}`, `{"a":2}`)),
		asst(call("c", "f", `oops`, ``)),
		asst(call("d", "f", `oops`, `"oops"`)),
		asst(call("e", "f", `{"a":1,"b":2}`, ``)),
		asst(call("f", "f", `{"a":1,"b":2}`, `{bad`)), // unparseable parsed bytes: the text counts
		asst(call("g", "f", `{"a":1,"b":2}`, `{bad`)), // the same
		asst(call("h", "f", `{"a":1,"b":3}`, `{bad`)), // same parsed bytes, other text
		asst(call("i", "f", `{"a":1,"b":2}`, `[bad`)), // other parsed bytes, same text as f
		asst(call("j", "f", `{"a":1,"b":2}`, `{"a":1,"b":2}`), call("k", "f", `{}`, `{}`)),
		asst(call("l", "f", `{"a":1,"b":2}`, `{"a":1,"b":2}`), call("m", "f", `{}`, `{}`)),
		{Role: trajectory.RoleAssistant, Content: "done"},
		{Role: trajectory.RoleAssistant, Content: "done", ToolCalls: []trajectory.ToolCall{}},
	}
}

// The message keys make the same messages equal as the fmt form they
// replaced, and agree with sameMessage wherever the arguments parsed.
func TestMessageKeysKeepTheEqualityRelation(t *testing.T) {
	ms := keyMessages()
	var k keyer
	keys := k.messages(ms, keepAll)
	old := make([][32]byte, len(ms))
	for i := range ms {
		old[i] = fmtDigest(&ms[i])
	}
	equalPairs := 0
	for i := range ms {
		for j := range ms {
			if (old[i] == old[j]) != (keys.keys[i].d == keys.keys[j].d) {
				t.Errorf("messages %d and %d: equal before %v, with message keys %v", i, j, old[i] == old[j], keys.keys[i].d == keys.keys[j].d)
			}
			one := func(n int) []trajectory.Message { return ms[n : n+1] }
			xi, xj := k.messages(one(i), keepAll), k.messages(one(j), keepAll)
			if got, want := same(xi, xj, one(i), one(j), 0), sameMessage(&ms[i], &ms[j]); got != want {
				t.Errorf("messages %d and %d: same %v, sameMessage %v", i, j, got, want)
			}
			if i < j && old[i] == old[j] {
				equalPairs++
			}
		}
	}
	if equalPairs < 8 {
		t.Fatalf("only %d equal pairs: the table no longer tests equality", equalPairs)
	}
}

// The prefix chain tells prefixes apart by their messages and lengths.
func TestPrefixChain(t *testing.T) {
	ms := keyMessages()
	var k keyer
	a := k.messages(ms, keepAll)
	b := k.messages(append([]trajectory.Message{ms[1]}, ms[1:]...), keepAll) // ms[0] and ms[1] are equal
	for i := range a.prefix {
		if a.prefix[i] != b.prefix[i] {
			t.Fatalf("prefix %d differs for equal messages", i)
		}
		for j := range a.prefix {
			if i != j && a.prefix[i] == a.prefix[j] {
				t.Fatalf("prefixes %d and %d collide", i, j)
			}
		}
	}
	if len(a.raw) == 0 || !a.rawIn(0, len(ms)) || a.rawIn(0, 1) {
		t.Fatalf("raw arguments at %v", a.raw)
	}
}

func keepAll(*trajectory.Message) bool { return true }

// Completion digests are equal exactly when the kept messages of the two
// ranges are the same sequence (by the fmt form), for every range of
// conversations drawn from messages some of which are equal.
func TestCompletionDigests(t *testing.T) {
	all := keyMessages()
	pool := []trajectory.Message{all[0], all[1], all[2], all[12], all[13], all[14], all[15], all[18], all[34]} // 0≡1, 12≡13 (tool), 14≡15 (assistant)
	rng := rand.New(rand.NewPCG(1, 2))
	convs := make([][]trajectory.Message, 40)
	for i := range convs {
		convs[i] = make([]trajectory.Message, 1+rng.IntN(5))
		for j := range convs[i] {
			convs[i][j] = pool[rng.IntN(len(pool))]
		}
	}
	for _, keeps := range []func(*trajectory.Message) bool{keepAll, func(m *trajectory.Message) bool { return m.Role == trajectory.RoleAssistant }} {
		var k keyer
		type span struct {
			conv, from, to int
			d              [32]byte
			old            string
		}
		var rs []span
		for ci, ms := range convs {
			m := k.messages(ms, keeps)
			for from := 0; from <= len(ms); from++ {
				for to := from; to <= len(ms); to++ {
					old := ""
					for i := from; i < to; i++ {
						if keeps(&ms[i]) {
							d := fmtDigest(&ms[i])
							old += string(d[:])
						}
					}
					rs = append(rs, span{ci, from, to, m.completion(from, to), old})
				}
			}
		}
		equal := 0
		for _, a := range rs {
			for _, b := range rs {
				if (a.d == b.d) != (a.old == b.old) {
					t.Fatalf("conversation %d [%d, %d) and %d [%d, %d): digests equal %v, messages equal %v", a.conv, a.from, a.to, b.conv, b.from, b.to, a.d == b.d, a.old == b.old)
				}
				if a.old == b.old && a.old != "" && (a.conv != b.conv || a.from != b.from) {
					equal++
				}
			}
		}
		if equal == 0 {
			t.Fatal("no two ranges hold the same messages: the test tests nothing")
		}
	}
}
