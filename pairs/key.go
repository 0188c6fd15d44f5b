package pairs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"

	"github.com/antidrift/antidrift/rollout/dataset"
	"github.com/antidrift/antidrift/rollout/trajectory"
)

// msgKey identifies a message as sameMessage and the dedup key see it:
// the SHA-256 of its canonical encoding (appendCanonical).
type msgKey struct {
	d [32]byte
	// exact: every parsed argument of the message is valid JSON, so that
	// two exact messages are sameMessage exactly when their digests are
	// equal (sameMessage compares unparseable arguments by their bytes,
	// the canonical encoding by their text).
	exact bool
}

// msgs is what an item's candidates read of its messages, computed once
// per item (lazily: only items that reach a structural check need it).
type msgs struct {
	keys []msgKey
	// prefix[i] digests keys[:i] (a chain: prefix[i+1] = SHA-256(prefix[i],
	// keys[i].d)), so that a prompt's part of the dedup key costs one copy.
	prefix [][32]byte
	// raw lists the messages with a tool call whose arguments never parsed
	// as an object (dataset.RawArguments), ascending.
	raw []int
	// sizes are the bytes of each message's exported JSON (with the
	// render options), for MaxChars; nil until needed.
	sizes []int
}

// keyer computes message keys: a scratch buffer and the canonical form of
// each distinct parsed-argument bytes of the scenario (records of one
// scenario repeat the same calls), cleared between scenarios.
type keyer struct {
	buf  []byte
	args map[string]canonArgs
}

type canonArgs struct {
	b  []byte
	ok bool // the bytes unmarshalled: b is their canonical form
}

// canonical returns the canonical form of parsed arguments as the dedup
// key has always compared them: the value re-marshalled by encoding/json
// (maps with sorted keys, numbers as float64), or ok = false when the
// bytes do not unmarshal.
func (k *keyer) canonical(parsed json.RawMessage) canonArgs {
	if c, ok := k.args[string(parsed)]; ok {
		return c
	}
	var c canonArgs
	var v any
	if json.Unmarshal(parsed, &v) == nil {
		c.b, _ = json.Marshal(v) // maps marshal with sorted keys: canonical
		c.ok = true
	}
	if k.args == nil {
		k.args = map[string]canonArgs{}
	}
	k.args[string(parsed)] = c
	return c
}

func (k *keyer) reset() { clear(k.args) }

// appendCanonical appends a message as the dedup key sees it, like
// sameMessage, without tool-call ids: role, content, name, the number of
// calls, and each call's type, function name, whether its arguments
// parsed, and its arguments (canonical when they parsed as JSON, the text
// otherwise). Every field is length-prefixed: the encoding is injective.
func (k *keyer) appendCanonical(b []byte, m *trajectory.Message) ([]byte, bool) {
	exact := true
	b = appendString(b, m.Role)
	b = appendString(b, m.Content)
	b = appendString(b, m.Name)
	b = binary.AppendUvarint(b, uint64(len(m.ToolCalls)))
	for i := range m.ToolCalls {
		f := &m.ToolCalls[i].Function
		b = appendString(b, m.ToolCalls[i].Type)
		b = appendString(b, f.Name)
		if len(f.Parsed) == 0 {
			b = append(b, 0)
			b = appendString(b, f.Arguments)
			continue
		}
		b = append(b, 1)
		c := k.canonical(f.Parsed)
		if !c.ok {
			exact = false
			b = appendString(b, f.Arguments)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(c.b)))
		b = append(b, c.b...)
	}
	return b, exact
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// messages computes an item's message keys.
func (k *keyer) messages(ms []trajectory.Message) *msgs {
	out := &msgs{keys: make([]msgKey, len(ms)), prefix: make([][32]byte, len(ms)+1)}
	var chain [64]byte
	for i := range ms {
		var exact bool
		k.buf, exact = k.appendCanonical(k.buf[:0], &ms[i])
		out.keys[i] = msgKey{d: sha256.Sum256(k.buf), exact: exact}
		copy(chain[:32], out.prefix[i][:])
		copy(chain[32:], out.keys[i].d[:])
		out.prefix[i+1] = sha256.Sum256(chain[:])
		if dataset.RawArguments(ms[i : i+1]) {
			out.raw = append(out.raw, i)
		}
	}
	return out
}

// rawIn reports whether a message of [from, to) has raw arguments.
func (m *msgs) rawIn(from, to int) bool {
	for _, i := range m.raw {
		if i >= from && i < to {
			return true
		}
	}
	return false
}

// same reports sameMessage(&a[i], &b[j]) from the keys: digests differ
// exactly when the messages differ, unless one has arguments that never
// parsed as JSON, which sameMessage decides itself.
func same(x, y *msgs, a, b []trajectory.Message, i int) bool {
	kx, ky := &x.keys[i], &y.keys[i]
	if kx.exact && ky.exact {
		return kx.d == ky.d
	}
	return sameMessage(&a[i], &b[i])
}

// prefixLen is commonPrefix(a[:n], b[:n]) through the keys.
func prefixLen(x, y *msgs, a, b []trajectory.Message, n int) int {
	n = min(n, len(a), len(b))
	for i := 0; i < n; i++ {
		if !same(x, y, a, b, i) {
			return i
		}
	}
	return n
}
